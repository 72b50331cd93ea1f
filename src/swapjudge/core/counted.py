"""The statistics of counts (`reading.reduce`): each selection's pair types and item kinds turned into the
outcomes, clustered tallies, label accuracy and the compared pair's win rate that `core.analysis` assembles
into a `JudgeAnalysis`. Both engines produce the same counts (in memory with polars, from files larger than
memory with DuckDB), so every figure goes through this one road.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from swapjudge.core.accuracy import Accuracy, AccuracyCounts, accuracy_of_counts
from swapjudge.core.policy import TiePolicy, WinTallies, two_order_decision_of_rates, win_rate_of_tallies
from swapjudge.core.stats import Tally
from swapjudge.core.swap import CrossTable, Outcomes
from swapjudge.reading.codes import FIRST, MISSING, SECOND, TIE, Outcome
from swapjudge.reading.pairs import classify
from swapjudge.reading.reduce import (
    ABSENT,
    LABEL_NONE,
    LABEL_TIE,
    LABEL_X,
    LABEL_Y,
    TYPE_LABEL,
    TYPE_SKIPPED,
    TYPE_VX,
    TYPE_VY,
    Kinds,
    PairCounts,
    positional,
)

# every pair type's two positional verdicts and outcome
CX, CY = positional(TYPE_VX), positional(TYPE_VY)
OUTCOME = classify(CX, CY).astype(np.int64)
CALLS = (TYPE_VX != ABSENT).astype(np.int64) + (TYPE_VY != ABSENT).astype(np.int64)
COMPLETE = OUTCOME != Outcome.INCOMPLETE
CONSISTENT = OUTCOME <= Outcome.TIE


def as_ints(mask: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.asarray(mask).astype(np.int64)
    return out


def kind_tally(kinds: Kinds, units: np.ndarray, doubled: np.ndarray, squares: np.ndarray | None = None) -> Tally:
    """The tally by item of units whose count (`units`) and doubled values (`doubled`, `squares`: their sum of
    squares; by default one unit per pair) each pair type gives."""
    units, doubled = as_ints(units), as_ints(doubled)
    return Tally.of_kinds(kinds.per_kind(units), kinds.per_kind(doubled), kinds.items,
                          kinds.total(doubled * doubled if squares is None else as_ints(squares)))


def outcomes_of(types: np.ndarray) -> Outcomes:
    """The pair counts by outcome of these type counts."""
    tally = np.bincount(OUTCOME, weights=types, minlength=len(Outcome)).astype(np.int64)
    n = {o: int(tally[o]) for o in Outcome}
    total = int(types.sum())
    return Outcomes(total=total, complete=total - n[Outcome.INCOMPLETE],
                    consistent=n[Outcome.X_WINS] + n[Outcome.Y_WINS] + n[Outcome.TIE],
                    consistent_ties=n[Outcome.TIE], flips_first=n[Outcome.FLIP_FIRST],
                    flips_second=n[Outcome.FLIP_SECOND], half_ties_first=n[Outcome.HALF_TIE_FIRST],
                    half_ties_second=n[Outcome.HALF_TIE_SECOND])


def count_of(types: np.ndarray, mask: np.ndarray) -> int:
    return int(types @ as_ints(mask))


def accuracy_of_types(types: np.ndarray, kinds: Kinds, confidence: float) -> Accuracy | None:
    """`core.accuracy.label_accuracy` from pair types (each pair's label relation is part of its type)."""
    better_x, better_y, tie = TYPE_LABEL == LABEL_X, TYPE_LABEL == LABEL_Y, TYPE_LABEL == LABEL_TIE
    labelled = TYPE_LABEL != LABEL_NONE
    if count_of(types, labelled) == 0:
        return None
    right_x_first = ((CX == FIRST) & better_x) | ((CX == SECOND) & better_y) | ((CX == TIE) & tie)
    right_y_first = ((CY == FIRST) & better_y) | ((CY == SECOND) & better_x) | ((CY == TIE) & tie)
    complete = (CX != MISSING) & (CY != MISSING)
    usable = labelled & complete
    decided = usable & ~tie
    right_first = decided & np.where(better_x, right_x_first, right_y_first)
    right_second = decided & np.where(better_x, right_y_first, right_x_first)
    right_both = right_x_first & right_y_first & usable
    calls_x, calls_y = labelled & (CX != MISSING), labelled & (CY != MISSING)
    call_right = 2 * as_ints(right_x_first & calls_x) + 2 * as_ints(right_y_first & calls_y)
    return accuracy_of_counts(AccuracyCounts(
        pairs=count_of(types, usable), right_first=count_of(types, right_first),
        right_second=count_of(types, right_second),
        right_both=count_of(types, right_both), consistent_pairs=count_of(types, CONSISTENT & usable),
        decided_pairs=count_of(types, decided), tie_pairs=count_of(types, usable & tie),
        incomplete_pairs=count_of(types, labelled & ~complete),
        calls=count_of(types, calls_x) + count_of(types, calls_y),
        right_calls=count_of(types, right_x_first & calls_x) + count_of(types, right_y_first & calls_y),
        better_first=kind_tally(kinds, decided, 2 * as_ints(right_first)),
        better_second=kind_tally(kinds, decided, 2 * as_ints(right_second)),
        both=kind_tally(kinds, usable, 2 * as_ints(right_both)),
        per_call=kind_tally(kinds, as_ints(calls_x) + as_ints(calls_y), call_right,
                            4 * as_ints(right_x_first & calls_x) + 4 * as_ints(right_y_first & calls_y))), confidence)


def _single_order_rate(types: np.ndarray, verdict: np.ndarray, named: int) -> float | None:
    """a's half-credit rate from one order's verdicts over complete pairs (`core.policy.single_order_rate`)."""
    n = count_of(types, COMPLETE)
    if n == 0:
        return None
    score = count_of(types, COMPLETE & (verdict == named)) + 0.5 * count_of(types, COMPLETE & (verdict == TIE))
    return score / n


def compare_of_types(types: np.ndarray, kinds: Kinds, chosen: tuple[str, str], policy: TiePolicy,
                     confidence: float, flip_rate_high: float | None) -> dict[str, Any]:
    """Win rate of a against b, the cross-table oriented to a, and the order-could-decide check, from the pair
    types of the two systems' pairs (`core.analysis._compare`)."""
    a, b = chosen
    a_is_x = a < b
    va, vb = (CX, CY) if a_is_x else (CY, CX)
    a_win, b_win = (Outcome.X_WINS, Outcome.Y_WINS) if a_is_x else (Outcome.Y_WINS, Outcome.X_WINS)
    win, loss = np.equal(OUTCOME, a_win), np.equal(OUTCOME, b_win)  # arrays of flags (to mypy too)
    split = COMPLETE & ~win & ~loss
    # per call: a's score in each usable call, doubled (2 a named, 1 tie, 0 b named)
    used_a, used_b = va != MISSING, vb != MISSING
    score_a = np.select([va == FIRST, va == SECOND], [2, 0], 1) * used_a
    score_b = np.select([vb == SECOND, vb == FIRST], [2, 0], 1) * used_b
    tallies = WinTallies(
        score=kind_tally(kinds, COMPLETE, 2 * as_ints(win) + as_ints(split)),
        win_of_decided=kind_tally(kinds, win | loss, 2 * as_ints(win)),
        win=kind_tally(kinds, COMPLETE, 2 * as_ints(win)), loss=kind_tally(kinds, COMPLETE, 2 * as_ints(loss)),
        split=kind_tally(kinds, COMPLETE, 2 * as_ints(split)),
        per_call=kind_tally(kinds, as_ints(used_a) + as_ints(used_b), score_a + score_b, score_a**2 + score_b**2))
    rate = win_rate_of_tallies(a, b, count_of(types, win), count_of(types, loss), count_of(types, split), tallies,
                               policy=policy, confidence=confidence)
    index = np.where(va == MISSING, 3, va) * 4 + np.where(vb == MISSING, 3, vb)
    flat = np.bincount(index, weights=types, minlength=16).astype(np.int64)
    ra, rb = _single_order_rate(types, va, FIRST), _single_order_rate(types, vb, SECOND)
    return {
        "pair": chosen,
        "cross_table": CrossTable(a, b, tuple(tuple(int(v) for v in flat[r * 4:(r + 1) * 4]) for r in range(4))),
        "ungated_win_rate": rate if count_of(types, COMPLETE) else None,
        "decision": two_order_decision_of_rates(rate, ra, rb, flip_rate_high),
    }


def design_of_counts(counts: PairCounts) -> str:
    """Pairs judged once: "random_order" when the same two systems were shown both ways round across items (a
    coin-flipped order), "single_order" when each comparison kept one order."""
    shown: dict[tuple[str, str], set[bool]] = {}
    for x, y, ptype, _ in counts.pairs:
        shown.setdefault((x, y), set()).add(bool(TYPE_VX[ptype] != ABSENT))
    return "random_order" if any(len(v) == 2 for v in shown.values()) else "single_order"


def unswapped_of(counts: PairCounts, pair: tuple[str, str] | None) -> tuple[int, int, int, int]:
    """Skipped swaps (pairs an adaptive run judged once): how many, and how many of their verdicts named a, named
    b, said tie (0 for all three without a compared pair)."""
    total = named_a = named_b = tied = 0
    for x, y, t, k in (row for row in counts.pairs if TYPE_SKIPPED[row[2]]):
        first, second, state = (x, y, TYPE_VX[t]) if TYPE_VX[t] != ABSENT else (y, x, TYPE_VY[t])
        named = "tie" if state == TIE else first if state == FIRST else second
        total += k
        if pair is not None:
            named_a += k * (named == pair[0])
            named_b += k * (named == pair[1])
            tied += k * (named == "tie")
    return total, named_a, named_b, tied
