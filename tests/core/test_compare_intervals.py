"""compare's paired differences: Newcombe's method 10 with its corrected correlation, and the first-slot rate
paired by item, so that a flip moving both calls of a pair is not counted as two independent calls."""

from __future__ import annotations

import math

import numpy as np
import pytest

from swapjudge.drift.history import newcombe_paired, newcombe_phi, paired_difference


def test_newcombe_method_10_worked_examples():
    # Newcombe (1998), example (a): 36 both, 12 only first, 2 only second, 0 neither (n = 50); an empty cell, so
    # phi is 0 and the interval is 0.0569 to 0.3404 around a difference of 0.2 (first - second)
    diff, low, high = newcombe_paired(36, 2, 12, 0)
    assert (diff, low, high) == pytest.approx((0.2, 0.0569, 0.3404), abs=5e-5)
    # Bentur et al. (2009) airway responsiveness, the paired example of Fagerland, Lydersen and Laake: table
    # (1, 1 / 7, 12); AD - BC = 5 lies in (0, N/2], so the corrected phi is 0 (the uncorrected 0.116 narrows it)
    assert newcombe_phi(1, 1, 7, 12) == 0.0
    diff, low, high = newcombe_paired(1, 1, 7, 12)
    assert (diff, low, high) == pytest.approx((6 / 21, 0.0256, 0.5069), abs=5e-5)
    # Cavo et al. (2012): (59, 6 / 16, 80); AD - BC = 4624 > N/2, corrected by N/2 = 80.5
    cross, margins = 59 * 80 - 6 * 16, (59 + 6) * (16 + 80) * (59 + 16) * (6 + 80)
    assert newcombe_phi(59, 6, 16, 80) == pytest.approx((cross - 161 / 2) / math.sqrt(margins), rel=1e-12)
    diff, low, high = newcombe_paired(59, 6, 16, 80)
    assert (diff, low, high) == pytest.approx((10 / 161, 0.0046, 0.1186), abs=5e-5)
    # negative association is kept as it is
    assert newcombe_phi(0, 5, 5, 0) == pytest.approx(-1.0)


def _first_slot_runs(rng: np.random.Generator, pairs: int = 300) -> tuple[np.ndarray, ...]:
    """Two runs of a judge over the same pairs, both orders: a flip (both calls name slot 1, or both slot 2)
    moves a pair's two calls together; the runs share each pair's tendency. True difference 0."""
    lean = rng.choice([0, 1, 2], size=pairs, p=[0.4, 0.35, 0.25])  # 0 consistent, 1 flips to slot 1, 2 to slot 2
    winner_first = rng.random(pairs) < 0.5  # a consistent pair: the call that showed its winner first

    def run() -> np.ndarray:
        state = np.where(rng.random(pairs) < 0.5, lean, rng.choice([0, 1, 2], size=pairs, p=[0.4, 0.35, 0.25]))
        call1 = np.where(state == 0, winner_first, state == 1)
        call2 = np.where(state == 0, ~winner_first, state == 1)
        return np.concatenate([call1, call2])

    return run(), run(), np.tile(np.arange(pairs), 2)


def test_first_slot_difference_covers_when_paired_by_item():
    rng = np.random.default_rng(4)
    sims, covered, as_calls = 800, 0, 0
    for _ in range(sims):
        a, b, item = _first_slot_runs(rng)
        d = paired_difference("first_slot_rate", a, b, 0.95, item)
        covered += d.low <= 0.0 <= d.high
        flat = paired_difference("first_slot_rate", a, b, 0.95)
        as_calls += flat.low <= 0.0 <= flat.high
    assert 0.93 <= covered / sims <= 0.97
    assert as_calls / sims < 0.90  # calls counted as independent: the old interval
    assert d.method == "newcombe10_clustered" and d.independent == "items" and d.clusters == 300
    # one unit per item: exactly method 10
    single = paired_difference("consistency", a[:150], b[:150], 0.95, item[:150])
    assert single.method == "newcombe10" and single.clusters == 150
    both = int(np.sum(a[:150] & b[:150]))
    only_a, only_b = int(np.sum(a[:150] & ~b[:150])), int(np.sum(~a[:150] & b[:150]))
    ref = newcombe_paired(both, only_a, only_b, 150 - both - only_a - only_b)
    assert (single.difference, single.low, single.high) == pytest.approx(ref, rel=1e-12)


def test_history_behaviour_uses_the_clustered_consistency_interval():
    from conftest import pair
    from swapjudge.core.analysis import analyze_records
    from swapjudge.drift.history import behaviour
    from swapjudge.reading.records import records_from_dicts

    rows = []
    for item in range(12):  # three systems against a baseline on each item: pairs share the item
        verdicts = ("first", "second") if item % 3 else ("first", "first")
        for system in ("B", "C", "D"):
            rows += pair(item, *verdicts, a="A", b=system)
    [result] = analyze_records(records_from_dicts(rows), min_consistency=0)
    assert result.consistency.to_dict()["independent"] == "items"
    b = behaviour(result)
    assert (b.consistency.low, b.consistency.high) == (result.consistency.low, result.consistency.high)
    assert b.consistency.k == 24 and b.consistency.n == 36


def test_probes_use_the_clustered_consistency_interval():
    """agreement, panel and repeat report the same consistency interval as analyze, over items."""
    from conftest import pair
    from swapjudge.core.analysis import analyze_records
    from swapjudge.probes.agreement import agreement_of_records
    from swapjudge.probes.panel import panel_of_records
    from swapjudge.probes.repeat import repeat_stability
    from swapjudge.reading.records import records_from_dicts

    rows = []
    for judge in ("j1", "j2"):
        for rnd in (0, 1):
            for item in range(12):
                verdicts = ("first", "second") if item % 3 else ("first", "first")
                for system in ("B", "C", "D"):
                    rows += pair(item, *verdicts, a="A", b=system, judge=judge, round=rnd)
    frame = records_from_dicts(rows).frame
    [one] = analyze_records(records_from_dicts([r for r in rows if r["judge"] == "j1" and r["round"] == 0]),
                            min_consistency=0)
    expected = (one.consistency.low, one.consistency.high)
    assert one.consistency.to_dict()["independent"] == "items"
    repeat = repeat_stability(frame.filter(frame["judge"] == "j1"))
    assert (repeat.per_round[0].consistency.low, repeat.per_round[0].consistency.high) == expected
    both_rounds = analyze_records(records_from_dicts(rows), judge="j1", min_consistency=0)[0].consistency
    [agree] = [a for a in agreement_of_records(frame) if a.judge == "j1"]
    assert (agree.consistency.low, agree.consistency.high) == (both_rounds.low, both_rounds.high)
    summary = panel_of_records(frame).judges[0]
    assert (summary.consistency.low, summary.consistency.high) == (both_rounds.low, both_rounds.high)
