"""Simulations with known truth, seeded: the false-ship rate at the bar, the designs under monitoring, and the power
the plan promises. Monte Carlo error: 3 standard errors of the simulated share."""

from __future__ import annotations

import math

import numpy as np
import pytest

from decision_streams import stream
from swapjudge.decision.power import expected_design, simulated_power_fixed, simulated_power_sequential
from swapjudge.decision.simulate import fixed_false_ship, monitoring_false_ship, null_design
from swapjudge.workflows.decide import decide, plan


def mc_error(p: float, runs: int) -> float:
    return 3 * math.sqrt(p * (1 - p) / runs)


@pytest.mark.parametrize(("bar", "splits"), [(0.5, 0.3), (0.47, 0.2)])
def test_fixed_design_at_the_bar_ships_at_most_alpha(bar, splits):
    rate = fixed_false_ship(null_design(bar, splits), 400, bar, 0.05, studies=2000, seed=1)
    assert rate.value <= 0.05 + mc_error(0.05, 2000)
    assert rate.value >= 0.05 - mc_error(0.05, 2000)  # not bought by an interval wider than it says


@pytest.mark.slow
def test_fixed_design_at_the_bar_through_decide_on_records():
    """The same rule end to end, records in and verdicts out (fewer studies: each is a whole decide)."""
    decision = {"candidate": "v2", "incumbent": "v1", "items": 200, "min_consistency": 0.5}
    ships = sum(decide(stream(200, 0.35, 0.35, seed=s), decision).verdict == "ship" for s in range(200))
    assert ships / 200 <= 0.05 + mc_error(0.05, 200)


def test_checked_after_every_20_items_only_the_sequence_keeps_alpha():
    fixed, sequential = monitoring_false_ship(null_design(0.5, 0.3), 0.5, 0.05, every=20, horizon=400,
                                              streams=1000, seed=2)
    assert sequential.value <= 0.05 + mc_error(0.05, 1000)
    assert fixed.value > 0.12  # far more than alpha: the same interval, looked at 20 times


def test_decide_after_every_push_reads_the_sequence_as_one_stream():
    """`decide` on each prefix of a stream (a team deciding after every push) ships from the first item at which
    the whole stream's sequence crossed the bar, and from then on: so the looks add no false ships to the
    sequence's, whose rate the test above simulates."""
    decision = {"candidate": "v2", "incumbent": "v1", "monitoring": "sequential", "min_consistency": 0.5}
    shipped_once = False
    for seed, win in ((3, 0.5), (4, 0.35)):
        rows = stream(400, win, 0.2 if win == 0.5 else 0.35, seed=seed)
        whole = decide(rows, decision)
        assert whole.bound is not None
        ship_at = whole.bound.ship_at
        for n in range(20, 401, 20):
            verdict = decide(rows[:2 * n], decision).verdict
            assert (verdict == "ship") == (ship_at is not None and ship_at <= n), (seed, n)
        shipped_once |= ship_at is not None
    assert shipped_once


@pytest.mark.parametrize(("rate", "splits", "policy", "monitoring"), [
    (0.58, 0.3, "half_credit", "fixed"),
    (0.62, 0.2, "half_credit", "sequential"),
    (0.60, 0.3, "exclude", "fixed"),
    (0.56, 0.1, "no_credit", "fixed"),
])
def test_power_at_the_planned_items_is_the_registered_power(rate, splits, policy, monitoring):
    decision = {"candidate": "v2", "incumbent": "v1", "tie_policy": policy, "monitoring": monitoring,
                "power": 0.8}
    result = plan(decision, expect=rate, splits=splits, simulations=2000)
    assert result.items is not None and result.simulated_power is not None
    assert abs(result.simulated_power - 0.8) <= 0.03
    # and again, with streams the plan never saw
    design = expected_design(rate, splits, policy)
    check = (simulated_power_sequential if monitoring == "sequential" else simulated_power_fixed)
    kwargs = {"streams": 2000} if monitoring == "sequential" else {"studies": 2000}
    again = check(design, result.items, 0.5, 0.05, seed=99, **kwargs)
    assert abs(again - 0.8) <= 0.03


def test_power_of_non_inferiority_at_the_planned_items():
    decision = {"candidate": "v2", "incumbent": "v1", "hypothesis": "non_inferior", "margin": 0.05, "power": 0.9}
    result = plan(decision, expect=0.5, splits=0.3)
    assert result.items is not None
    again = simulated_power_fixed(expected_design(0.5, 0.3, "half_credit"), result.items, 0.45, 0.05, seed=7)
    assert abs(again - 0.9) <= 0.03


@pytest.mark.slow
def test_power_through_decide_at_the_planned_items():
    """The promise, end to end: records simulated at the expected rates, `decide` at the planned items."""
    decision = {"candidate": "v2", "incumbent": "v1", "power": 0.8}
    result = plan(decision, expect=0.6, splits=0.3)
    assert result.items is not None
    n = result.items
    wins = 0.6 - 0.15
    ships = np.mean([decide(stream(n, wins, 1 - 0.3 - wins, seed=s), {**decision, "items": n,
                                                                         "min_consistency": 0}).verdict == "ship"
                     for s in range(400)])
    assert abs(ships - 0.8) <= mc_error(0.8, 400) + 0.01
