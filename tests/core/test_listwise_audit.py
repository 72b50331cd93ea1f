"""The best-of-N audit against independent computations: statsmodels' Hotelling test, scipy's Wilson interval,
hand counts, and simulated judges with a known slot pull."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multivariate import test_mvmean as hotelling_mvmean

from listwise_sim import always_first, latin_orders, simulate
from swapjudge.core.listwise import audit, slot_test, winner_consistency
from swapjudge.reading.listwise import ListwiseCall

THETA = [0.9, 0.3, -0.3, -0.9]


def test_always_slot_one_fails_everything() -> None:
    result = audit(always_first(items=50), judge="first", min_consistency=0.7)
    assert result.slot_share[0].value == 1.0 and all(m.value == 0.0 for m in result.slot_share[1:])
    assert result.consistency.rate == 0.0 and result.consistency.items == 50
    assert not result.gate.passed and "winner consistency 0.0%" in (result.gate.reason or "")
    # the same deviation in every item: certain, not noise
    assert result.slot_test.p_value == 0.0 and result.slot_test.design == "balanced"
    # the better answer is picked only when it sat in slot 1
    assert result.accuracy is not None
    assert [m.value for m in result.accuracy.by_slot] == [1.0, 0.0, 0.0, 0.0]
    assert result.accuracy.order_controlled.value == pytest.approx(0.25)
    assert result.accuracy.all_right.rate == 0.0


def test_a_judge_that_always_picks_one_system() -> None:
    rng = np.random.default_rng(3)
    calls = [ListwiseCall(f"q{i}", tuple(f"s{o}" for o in order), order.index(0) + 1)
             for i in range(30) for order in latin_orders(rng, 4)]
    result = audit(calls)
    assert result.consistency.rate == 1.0 and result.gate.passed
    assert [m.value for m in result.slot_share] == [0.25] * 4
    assert (result.slot_test.statistic, result.slot_test.p_value) == (0.0, 1.0)


def test_slot_test_is_statsmodels_hotelling() -> None:
    rng = np.random.default_rng(11)
    calls = simulate(rng, THETA, items=60, gamma=[0.2, 0.0, 0.0, -0.1])
    ours = slot_test(calls, 4)
    deviations = np.zeros((60, 4))
    for c in calls:
        deviations[int(c.item[1:]), c.pick - 1] += 1
    deviations -= 1.0  # four calls per item: one pick per slot expected
    theirs = hotelling_mvmean(deviations[:, :3], np.zeros(3))
    assert ours.statistic == pytest.approx(float(theirs.statistic), rel=1e-10)
    assert ours.p_value == pytest.approx(float(theirs.pvalue), rel=1e-8)
    assert ours.df == (3, 57) and ours.items == 60


def test_consistency_interval_is_wilson_over_items() -> None:
    rng = np.random.default_rng(5)
    calls = simulate(rng, THETA, items=80)
    # one item loses a pick: it leaves the consistency (incomplete), as an incomplete pair does
    calls[0] = ListwiseCall(calls[0].item, calls[0].slots, None, calls[0].judge)
    result = winner_consistency(calls)
    groups: dict[str, set[str | None]] = {}
    for c in calls[4:]:
        groups.setdefault(c.item, set()).add(c.picked)
    k = sum(len(v) == 1 for v in groups.values())
    ci = stats.binomtest(k, 79).proportion_ci(method="wilson")
    assert (result.consistent, result.items, result.incomplete) == (k, 79, 1)
    assert (result.low, result.high) == (pytest.approx(ci.low), pytest.approx(ci.high))


def test_slot_share_interval_counts_items_not_calls() -> None:
    # each item's four calls all pick slot 1 or all pick slot 2: 40 items of information, not 160 calls
    rows = []
    for i in range(40):
        pick = 1 if i % 2 else 2
        rows += [ListwiseCall(f"q{i}", ("a", "b", "c", "d")[r:] + ("a", "b", "c", "d")[:r], pick) for r in range(4)]
    share = audit(rows).slot_share[0]
    assert share.value == 0.5 and share.independence.design_effect == pytest.approx(4.0, rel=0.05)
    width = share.high - share.low
    naive = stats.binomtest(80, 160).proportion_ci(method="wilson")
    assert width > 1.8 * (naive.high - naive.low)


def _rejections(runs: int, seed: int, **judge) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(runs):
        p = slot_test(simulate(rng, THETA, items=200, **judge), 4).p_value
        hits += p is not None and p < 0.05
    return hits / runs


@pytest.mark.parametrize("judge", [{}, {"item_sd": 1.5}])
def test_slot_test_holds_its_level(judge: dict) -> None:
    runs = 300
    rate = _rejections(runs, 1, **judge)
    # at most 5% plus two Monte Carlo standard errors
    assert rate <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / runs)


@pytest.mark.parametrize("judge", [{"lift": 0.4 / 3}, {"gamma": [0.45, 0.0, 0.0, 0.0]}])
def test_slot_test_finds_a_ten_point_first_slot_lift(judge: dict) -> None:
    # lift 2/15: 2/15 + 13/15 * 1/4 = 35% of picks in slot 1; gamma 0.45 gives about the same
    rate = _rejections(100, 2, **judge)
    assert rate >= 0.8


def test_random_single_rotation_design() -> None:
    rng = np.random.default_rng(8)
    calls = simulate(rng, THETA, items=400, rotations="random", lift=0.2)
    result = slot_test(calls, 4)
    assert result.design == "randomized" and result.items == 400 and result.p_value < 0.001
