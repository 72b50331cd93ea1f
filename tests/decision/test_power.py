"""The plan's items against statsmodels' power solver, and the expected-rate designs against their definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.power import NormalIndPower

from swapjudge.decision.power import PlanError, analytic_items, expected_design, pilot_design


@pytest.mark.parametrize(("rate", "splits", "policy", "bar", "power"), [
    (0.58, 0.3, "half_credit", 0.5, 0.8),
    (0.55, 0.2, "half_credit", 0.5, 0.9),
    (0.50, 0.3, "half_credit", 0.47, 0.8),
    (0.62, 0.0, "no_credit", 0.5, 0.8),
])
def test_the_normal_approximation_is_the_one_sample_z_test_statsmodels_solves(rate, splits, policy, bar, power):
    design = expected_design(rate, splits, policy)
    effect = (design.rate - bar) / design.sd
    n = NormalIndPower().solve_power(effect_size=effect, alpha=0.05, power=power, ratio=0, alternative="larger")
    assert analytic_items(design, bar, 0.05, power) == math.ceil(n - 1e-9)


def test_exclude_plans_for_the_items_whose_pairs_are_decided():
    design = expected_design(0.6, 0.3, "exclude")
    decided = analytic_items(expected_design(0.6, 0.0, "exclude"), 0.5, 0.05, 0.8)
    assert decided is not None and analytic_items(design, 0.5, 0.05, 0.8) == math.ceil(decided / 0.7)


def test_expected_designs_have_the_rate_and_the_splits_they_are_given():
    d = expected_design(0.58, 0.3, "half_credit")
    assert d.rate == pytest.approx(0.58) and d.probs[1] == pytest.approx(0.3)  # the splits score 1/2
    assert d.sd == pytest.approx(math.sqrt(0.43 + 0.3 / 4 - 0.58**2))
    with pytest.raises(PlanError, match=r"between 20\.0% and 80\.0%"):
        expected_design(0.9, 0.4, "half_credit")
    with pytest.raises(PlanError, match=r"at most 70\.0%"):
        expected_design(0.8, 0.3, "no_credit")


def test_a_pilot_is_its_item_scores():
    d = pilot_design(np.array([1.0, 1.0, 0.5, 0.0, 0.75]), unscored=1)
    assert d.values.tolist() == [0.0, 0.5, 0.75, 1.0] and d.probs.tolist() == [0.2, 0.2, 0.2, 0.4]
    assert d.unscored == pytest.approx(1 / 6) and d.rate == pytest.approx(0.65)
