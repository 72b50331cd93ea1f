"""Flip direction when inconsistent pairs share an item: the interval and the test count items, not pairs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from swapjudge.core.swap import flip_direction, flip_direction_of_pairs
from swapjudge.reading.pairs import Outcome


def _outcomes(toward_first: np.ndarray) -> np.ndarray:
    return np.where(toward_first, Outcome.FLIP_FIRST, Outcome.FLIP_SECOND).astype(np.int8)


def test_one_inconsistent_pair_per_item_is_the_exact_test_and_wilson():
    first = np.array([1] * 23 + [0] * 9, dtype=bool)
    outcome = np.concatenate([_outcomes(first), [Outcome.X_WINS] * 40, [Outcome.HALF_TIE_SECOND] * 3])
    items = np.arange(outcome.size).astype(str)
    f = flip_direction_of_pairs(outcome, items)
    assert (f.first, f.second) == (23, 12)
    assert f.p_value == pytest.approx(stats.binomtest(23, 35).pvalue, rel=1e-12)
    low, high = proportion_confint(23, 35, method="wilson")
    assert (f.low, f.high) == pytest.approx((low, high), rel=1e-9)
    assert f.to_dict()["independent"] == "pairs"
    assert f == flip_direction(23, 12)  # the counts-only form agrees when nothing is shared


def _shared_null(rng: np.random.Generator, items: int = 80, per_item: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """Each item has its own slot habit (an easy call for one slot on some questions, the other on others), the
    judge as a whole none: the inconsistent pairs of one item move together."""
    lean = rng.beta(0.7, 0.7, items)
    first = rng.random((items, per_item)) < lean[:, None]
    return _outcomes(first.ravel()), np.repeat(np.arange(items), per_item).astype(str)


def test_the_clustered_test_holds_its_level_where_the_pairs_test_does_not():
    rng = np.random.default_rng(3)
    files = 400
    clustered = naive = 0
    for _ in range(files):
        outcome, items = _shared_null(rng)
        f = flip_direction_of_pairs(outcome, items)
        clustered += f.p_value < 0.05
        naive += stats.binomtest(f.first, f.first + f.second).pvalue < 0.05
    assert 0.03 <= clustered / files <= 0.08
    assert naive / files > 0.15  # pairs counted as independent: a lean "found" in a quarter of the files
    d = f.to_dict()
    assert d["independent"] == "items" and d["clusters"] == 80 and d["design_effect"] > 2


def test_a_real_lean_is_still_found_when_items_are_shared():
    rng = np.random.default_rng(4)
    lean = np.clip(rng.beta(0.7, 0.7, 80) + 0.3, 0, 1)  # every item pushed toward slot 1
    first = rng.random((80, 6)) < lean[:, None]
    f = flip_direction_of_pairs(_outcomes(first.ravel()), np.repeat(np.arange(80), 6).astype(str))
    assert f.lean == "first" and f.low > 0.5
