"""The win rate of a cascade over all pairs: the range from worst to best case, checked by brute force and by a
simulation with known truth where the unsettled pairs are chosen by their outcome (the case a rate over the
settled pairs alone gets wrong)."""

from __future__ import annotations

import numpy as np
import pytest

from swapjudge.core.cascade_rate import cascade_win_rate


def test_the_ends_are_the_unsettled_pairs_counted_as_lost_and_as_won() -> None:
    judged = np.array([1.0, 0.0, 0.5, np.nan, np.nan, 1.0, np.nan])
    people = np.array([np.nan, 1.0, np.nan, 0.0, np.nan, np.nan, np.nan])  # the vote on pair 1 is not used
    rate = cascade_win_rate(judged, people, ["a", "b", "c", "d", "e", "f", "g"], a="x", b="y")
    assert (rate.by_judges, rate.by_people, rate.unsettled) == (4, 1, 2)
    assert rate.worst.value == pytest.approx((1 + 0 + 0.5 + 0 + 0 + 1 + 0) / 7)
    assert rate.best.value == pytest.approx((1 + 0 + 0.5 + 0 + 1 + 1 + 1) / 7)
    assert rate.low is not None and rate.high is not None and rate.low < rate.worst.value < rate.best.value < rate.high


def test_pairs_sharing_an_item_are_clustered() -> None:
    judged = np.array([1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, np.nan, np.nan])
    shared = cascade_win_rate(judged, np.full(10, np.nan), list("aabbccddee"), a="x", b="y")
    apart = cascade_win_rate(judged, np.full(10, np.nan), list("abcdefghij"), a="x", b="y")
    assert shared.worst.independence.units == "items" and apart.worst.independence.units == "pairs"
    assert shared.low < apart.low  # two perfectly correlated pairs per item carry one item's information


def test_the_range_covers_the_true_win_rate_when_losses_are_what_stays_unsettled() -> None:
    rng = np.random.default_rng(7)
    truth, n, sims, covered, settled_rate_covered = 0.6, 150, 400, 0, 0
    for _ in range(sims):
        wins = rng.random(n) < truth
        # the judges leave losses unsettled four times as often as wins: selection by outcome
        open_ = rng.random(n) < np.where(wins, 0.05, 0.2)
        judged = np.where(open_, np.nan, wins.astype(float))
        rate = cascade_win_rate(judged, np.full(n, np.nan), np.arange(n), a="x", b="y")
        covered += rate.low <= truth <= rate.high
        settled_rate_covered += abs(np.nanmean(judged) - truth) < 0.03
    assert covered / sims >= 0.95
    # the settled pairs alone are biased upward: their rate is rarely near the truth
    assert settled_rate_covered / sims < 0.5
