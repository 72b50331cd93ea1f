"""Accuracy against labels when labelled pairs share an item: the pair shares' intervals count items."""

from __future__ import annotations

import numpy as np
from statsmodels.stats.proportion import proportion_confint

from swapjudge.core.accuracy import label_accuracy
from swapjudge.reading.pairs import FIRST, SECOND


def _study(rng: np.random.Generator, p_item: np.ndarray, per_item: int) -> dict:
    """x is always the labelled answer; a pair is right in both orders with its item's probability, otherwise
    the judge keeps slot 1 and is wrong when x sits second."""
    items = np.repeat(np.arange(p_item.size), per_item)
    right = rng.random(items.size) < p_item[items]
    x, y = np.full(items.size, "x", dtype=object), np.full(items.size, "y", dtype=object)
    vx = np.full(items.size, FIRST)
    vy = np.where(right, SECOND, FIRST)
    acc = label_accuracy(x, y, x.copy(), vx, vy, right, item=items.astype(str))
    assert acc is not None
    return acc.to_dict()


def test_pair_accuracy_intervals_cover_when_items_are_shared():
    rng = np.random.default_rng(11)
    truth = 1.5 / 2.5  # the mean of Beta(1.5, 1): each study draws its own 60 items, which differ a lot
    sims, covered, naive = 400, 0, 0
    for _ in range(sims):
        d = _study(rng, rng.beta(1.5, 1.0, 60), per_item=5)
        both = d["intervals"]["both"]
        covered += both["low"] <= truth <= both["high"]
        k = round(d["both"] * d["pairs"])
        low, high = proportion_confint(k, d["pairs"], method="wilson")
        naive += low <= truth <= high
    assert d["independent"] == "items" and d["clusters"] == 60 and d["design_effect"] > 1.5
    assert 0.92 <= covered / sims <= 0.98
    assert naive / sims < 0.88  # pairs counted as independent: too narrow


def test_one_pair_per_item_keeps_the_plain_wilson_intervals():
    d = _study(np.random.default_rng(1), np.full(50, 0.7), per_item=1)
    k = round(d["both"] * d["pairs"])
    low, high = proportion_confint(k, d["pairs"], method="wilson")
    assert (d["intervals"]["both"]["low"], d["intervals"]["both"]["high"]) == (low, high) or np.allclose(
        [d["intervals"]["both"]["low"], d["intervals"]["both"]["high"]], [low, high], rtol=1e-9)
    assert d["independent"] == "pairs"
