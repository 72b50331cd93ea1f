"""`decide` on graded verdicts: the decision reads direction only. The same directions with other strengths give
the same verdict and the same bound, a decisive candidate is judged as a slightly better one is (the pitfall of a
gate on magnitudes), and no strength turns a failed gate into a pass."""

from __future__ import annotations

import numpy as np

from decision_streams import DECISION, stream
from swapjudge.workflows.decide import decide


def graded(rows: list[dict], rng: np.random.Generator, much: float) -> list[dict]:
    """The same records with a strength on every verdict that names a slot: 2 (much better) with probability
    `much`, else 1 (slightly)."""
    out = []
    for row in rows:
        strength = None if row["verdict"] in (None, "tie") else (2 if rng.random() < much else 1)
        out.append({**row, "strength": strength})
    return out


def test_strengths_never_move_the_decision() -> None:
    rows = stream(400, 0.55, 0.25, seed=3)
    plain = decide(rows, {**DECISION})
    rng = np.random.default_rng(0)
    for much in (0.0, 0.5, 1.0):
        verdict = decide(graded(rows, rng, much), {**DECISION})
        assert verdict.verdict == plain.verdict == "ship"
        assert verdict.bound is not None and plain.bound is not None
        assert (verdict.bound.value, verdict.bound.low) == (plain.bound.value, plain.bound.low)
        assert verdict.counts == plain.counts


def test_a_decisive_candidate_is_not_punished_for_winning_decisively() -> None:
    """Every candidate win "much better" or every one "slightly": one direction test, one verdict."""
    rows = stream(400, 0.6, 0.2, seed=9)
    rng = np.random.default_rng(1)
    decisive = decide(graded(rows, rng, 1.0), {**DECISION})
    slight = decide(graded(rows, rng, 0.0), {**DECISION})
    assert decisive.verdict == slight.verdict == "ship"
    assert decisive.bound.low == slight.bound.low  # type: ignore[union-attr]


def test_no_strength_turns_a_failed_gate_into_a_pass() -> None:
    # mostly flips toward slot 1, every call "much better": sure-sounding, and below the consistency gate
    rows = graded(stream(400, 0.3, 0.1, seed=4), np.random.default_rng(2), 1.0)
    verdict = decide(rows, {**DECISION})
    assert not verdict.gate.passed and verdict.verdict == "keep"
    assert verdict.bound is None  # the gate stops the decision before any rate is read
