"""Item scores against the analysis' own win rates (core.analysis.analyze_records), policy by policy."""

from __future__ import annotations

import numpy as np
import pytest

from decision_streams import stream
from swapjudge.api import load_records
from swapjudge.core.analysis import analyze_records
from swapjudge.decision.scores import item_scores
from swapjudge.reading.codes import Outcome
from swapjudge.workflows.decide import decide


@pytest.mark.parametrize("policy", ["half_credit", "no_credit", "exclude", "separate"])
def test_one_pair_per_item_the_mean_score_is_the_analysis_win_rate(policy):
    rows = stream(300, 0.4, 0.3, seed=2, split="half")
    analysis = analyze_records(load_records(rows), a="v2", b="v1", tie_policy=policy, min_consistency=0)[0]
    verdict = decide(rows, {"candidate": "v2", "incumbent": "v1", "tie_policy": policy, "items": 300,
                            "min_consistency": 0})
    assert verdict.bound is not None
    assert verdict.bound.value == pytest.approx(analysis.win_rate.headline.value, abs=1e-12)
    assert verdict.counts.wins == analysis.win_rate.a_wins and verdict.counts.losses == analysis.win_rate.b_wins


def test_rounds_of_one_item_are_averaged_into_one_score():
    # item a: rounds win, loss (1, 0) -> 1/2; item b: win, split (1, 1/2) -> 3/4; exclude drops the split
    items = np.array(["a", "a", "b", "b", "c"])
    outcome = np.array([Outcome.X_WINS, Outcome.Y_WINS, Outcome.X_WINS, Outcome.FLIP_FIRST, Outcome.TIE])
    half = item_scores(items, outcome, np.ones(5, bool), "half_credit")
    assert half.items == ("a", "b", "c") and half.scores.tolist() == [0.5, 0.75, 0.5]
    excl = item_scores(items, outcome, np.ones(5, bool), "exclude")
    assert excl.items == ("a", "b") and excl.scores.tolist() == [0.5, 1.0] and excl.unscored == 1
    other_side = item_scores(items, outcome, np.zeros(5, bool), "no_credit")
    assert other_side.scores.tolist() == [0.5, 0.0, 0.0]


def test_items_keep_the_order_they_first_appear_in():
    items = np.array(["q9", "q1", "q9", "q5"])
    s = item_scores(items, np.full(4, Outcome.X_WINS), np.ones(4, bool), "half_credit")
    assert s.items == ("q9", "q1", "q5")


def test_three_rounds_per_item_count_items_not_pairs():
    rows = stream(100, 0.5, 0.2, seed=1, rounds=3)
    verdict = decide(rows, {"candidate": "v2", "incumbent": "v1", "items": 100})
    assert verdict.counts.items_read == 100 and verdict.counts.pairs == 300
    assert verdict.bound is not None and verdict.bound.n == 100
