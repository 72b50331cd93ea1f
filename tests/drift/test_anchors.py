"""Anchored pointwise scoring: distribution, compression, the anchor check (a judge shifted by one level is
flagged, a stable one is not), the rubric renderer and the strict score parser."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy import stats

from swapjudge.drift.anchors import (
    Exemplar,
    Level,
    Scale,
    check_anchors,
    parse_score,
    render_rubric,
    score_distribution,
)
from swapjudge.errors import SwapjudgeError

SCALE = Scale((
    Level(1, "ignores the task or is wrong throughout"),
    Level(2, "addresses the task but with a major error or omission"),
    Level(3, "correct in substance, with minor errors or gaps"),
    Level(4, "correct and complete, follows every instruction"),
    Level(5, "correct, complete and exceptionally clear; nothing to add or remove"),
))
EXEMPLARS = [Exemplar("low", "Add 2 and 3.", "It is 6.", 1), Exemplar("mid", "Add 2 and 3.", "5, I think", 3),
             Exemplar("high", "Add 2 and 3.", "2 + 3 = 5.", 5)]


def _reference(n: int = 60, seed: int = 3) -> dict[str, int]:
    rng = random.Random(seed)
    return {f"r{i:02d}": rng.choice([1, 2, 2, 3, 3, 3, 4, 4, 5]) for i in range(n)}


def test_scale_and_rubric() -> None:
    with pytest.raises(SwapjudgeError, match="consecutive"):
        Scale((Level(1, "a"), Level(2, "b"), Level(4, "c")))
    with pytest.raises(SwapjudgeError, match="3 to 7"):
        Scale((Level(1, "a"), Level(2, "b")))
    text = render_rubric(SCALE, EXEMPLARS, "Judge correctness first.")
    assert "3: correct in substance" in text and "Example high." in text and "Score: 5" in text
    assert text.endswith("`Score: N` with N an integer from 1 to 5.")
    with pytest.raises(SwapjudgeError, match="two or three"):
        render_rubric(SCALE, EXEMPLARS[:1], "x")


def test_parse_score_is_strict() -> None:
    assert parse_score("Score: 4", SCALE) == 4
    assert parse_score("The answer is fine.\n\nScore: 2\n", SCALE) == 2
    assert parse_score("Score: 6", SCALE) is None  # not a level
    assert parse_score("Score: 4/5", SCALE) is None
    assert parse_score("Score: 4\nActually 3.", SCALE) is None  # the last line must be the score
    assert parse_score("I give it a 4", SCALE) is None
    assert parse_score("", SCALE) is None


def test_distribution_and_compression() -> None:
    d = score_distribution([3, 3, 3, 4, 4, 1, 5, 3, 4, 2], SCALE)
    assert d.counts == (1, 1, 4, 3, 1) and d.n == 10
    assert d.mean == pytest.approx(3.2) and d.median == 3.0
    assert d.top_levels == (3, 4) and d.compression.k == 7 and d.compression.rate == pytest.approx(0.7)
    ci = stats.binomtest(7, 10).proportion_ci(method="wilson")
    assert (d.compression.low, d.compression.high) == pytest.approx((ci.low, ci.high))
    flat = score_distribution([4] * 9 + [3], SCALE)
    assert flat.compression.rate == 1.0  # everything on two levels: a compressed scale
    with pytest.raises(SwapjudgeError, match="not levels"):
        score_distribution([0, 3], SCALE)


def test_a_judge_shifted_by_one_level_is_flagged() -> None:
    pinned = _reference()
    # the drifted judge scores everything one level higher (capped at the top of the scale)
    drifted = {k: min(5, v + 1) for k, v in pinned.items()}
    check = check_anchors(pinned, drifted, SCALE, exemplars={"low": (1, 2), "mid": (3, 4), "high": (5, 5)})
    assert check.flagged
    moved = sum(v < 5 for v in pinned.values())
    assert check.up == moved and check.down == 0 and check.moved.k == moved
    assert check.mean_shift == pytest.approx(moved / len(pinned))
    assert check.mean_shift > 0.5
    assert check.p_value is not None and check.p_value < 1e-6
    assert any("mean score moved" in r for r in check.reasons)
    assert sum("exemplar" in r for r in check.reasons) == 2  # low and mid moved, high is capped
    assert check.current.mean is not None and check.pinned.mean is not None
    assert check.current.mean - check.pinned.mean == pytest.approx(check.mean_shift)


def test_a_stable_judge_is_not_flagged() -> None:
    pinned = _reference()
    rng = np.random.default_rng(0)
    # a stable judge: a few reference items move by one level either way, the anchors hold
    current = dict(pinned)
    for k in rng.choice(sorted(pinned), size=8, replace=False):
        current[k] = int(np.clip(pinned[k] + rng.choice([-1, 1]), 1, 5))
    check = check_anchors(pinned, current, SCALE, exemplars={"low": (1, 1), "mid": (3, 3), "high": (5, 5)})
    assert not check.flagged and check.reasons == ()
    assert abs(check.mean_shift or 0) <= 0.5 and check.moved.k == sum(current[k] != pinned[k] for k in pinned)
    # an exemplar the judge no longer reproduces flags the run even when the reference set holds
    off = check_anchors(pinned, current, SCALE, exemplars={"low": (1, 1), "mid": (3, None), "high": (5, 3)})
    assert off.flagged and len(off.reasons) == 2
    same = check_anchors(pinned, pinned, SCALE)
    assert same.p_value is None and same.mean_shift == 0 and not same.flagged
