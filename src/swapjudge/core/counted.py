"""The analysis from counts (`reading.reduce`): what `core.analysis.analyze` computes from the rows, computed from
the pair types and item kinds of each selection, so records larger than memory get the same `JudgeAnalysis`.

Every statistic here goes through the same tallies and builders as the row-based analysis (`core.stats`,
`core.swap`, `core.policy`, `core.accuracy`, `core.debias`), which is why the two agree to the last bit; the
tests hold them equal on the repository's examples and the shared real data.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import polars as pl

from swapjudge.core.accuracy import Accuracy, AccuracyCounts, accuracy_of_counts
from swapjudge.core.analysis import (
    SINGLE_ORDER_NOTE,
    JudgeAnalysis,
    adaptive_view_of_counts,
    choose_pair,
    with_holm,
)
from swapjudge.core.debias import debias_of_counts
from swapjudge.core.identical import IdenticalProbe
from swapjudge.core.policy import (
    DEFAULT_MIN_CONSISTENCY,
    TiePolicy,
    WinTallies,
    gate,
    two_order_decision_of_rates,
    win_rate_of_tallies,
)
from swapjudge.core.stats import Tally
from swapjudge.core.swap import (
    CrossTable,
    Outcomes,
    consistency_of_tally,
    flip_direction_of_tally,
    verdict_split_of_counts,
)
from swapjudge.errors import ArgumentError
from swapjudge.reading.codes import FIRST, MISSING, SECOND, TIE, Outcome
from swapjudge.reading.pairs import classify
from swapjudge.reading.records import REGISTERED_A, REGISTERED_B, REGISTERED_POLICY, choose_judges
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
    PairSource,
    one_value,
    positional,
)

# every pair type's two positional verdicts and outcome
CX, CY = positional(TYPE_VX), positional(TYPE_VY)
OUTCOME = classify(CX, CY).astype(np.int64)
CALLS = (TYPE_VX != ABSENT).astype(np.int64) + (TYPE_VY != ABSENT).astype(np.int64)
COMPLETE = OUTCOME != Outcome.INCOMPLETE
CONSISTENT = OUTCOME <= Outcome.TIE


def _int(mask: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.asarray(mask).astype(np.int64)
    return out


def kind_tally(kinds: Kinds, units: np.ndarray, doubled: np.ndarray, squares: np.ndarray | None = None) -> Tally:
    """The tally by item of units whose count (`units`) and doubled values (`doubled`, `squares`: their sum of
    squares; by default one unit per pair) each pair type gives."""
    units, doubled = _int(units), _int(doubled)
    return Tally.of_kinds(kinds.per_kind(units), kinds.per_kind(doubled), kinds.items,
                          kinds.total(doubled * doubled if squares is None else _int(squares)))


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


def _sum(types: np.ndarray, mask: np.ndarray) -> int:
    return int(types @ _int(mask))


def accuracy_of_types(types: np.ndarray, kinds: Kinds, confidence: float) -> Accuracy | None:
    """`core.accuracy.label_accuracy` from pair types (each pair's label relation is part of its type)."""
    better_x, better_y, tie = TYPE_LABEL == LABEL_X, TYPE_LABEL == LABEL_Y, TYPE_LABEL == LABEL_TIE
    labelled = TYPE_LABEL != LABEL_NONE
    if _sum(types, labelled) == 0:
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
    call_right = 2 * _int(right_x_first & calls_x) + 2 * _int(right_y_first & calls_y)
    return accuracy_of_counts(AccuracyCounts(
        pairs=_sum(types, usable), right_first=_sum(types, right_first), right_second=_sum(types, right_second),
        right_both=_sum(types, right_both), consistent_pairs=_sum(types, CONSISTENT & usable),
        decided_pairs=_sum(types, decided), tie_pairs=_sum(types, usable & tie),
        incomplete_pairs=_sum(types, labelled & ~complete),
        calls=_sum(types, calls_x) + _sum(types, calls_y),
        right_calls=_sum(types, right_x_first & calls_x) + _sum(types, right_y_first & calls_y),
        better_first=kind_tally(kinds, decided, 2 * _int(right_first)),
        better_second=kind_tally(kinds, decided, 2 * _int(right_second)),
        both=kind_tally(kinds, usable, 2 * _int(right_both)),
        per_call=kind_tally(kinds, _int(calls_x) + _int(calls_y), call_right,
                            4 * _int(right_x_first & calls_x) + 4 * _int(right_y_first & calls_y))), confidence)


def _single_order_rate(types: np.ndarray, verdict: np.ndarray, named: int) -> float | None:
    """a's half-credit rate from one order's verdicts over complete pairs (`core.policy.single_order_rate`)."""
    n = _sum(types, COMPLETE)
    if n == 0:
        return None
    score = _sum(types, COMPLETE & (verdict == named)) + 0.5 * _sum(types, COMPLETE & (verdict == TIE))
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
        score=kind_tally(kinds, COMPLETE, 2 * _int(win) + _int(split)),
        win_of_decided=kind_tally(kinds, win | loss, 2 * _int(win)),
        win=kind_tally(kinds, COMPLETE, 2 * _int(win)), loss=kind_tally(kinds, COMPLETE, 2 * _int(loss)),
        split=kind_tally(kinds, COMPLETE, 2 * _int(split)),
        per_call=kind_tally(kinds, _int(used_a) + _int(used_b), score_a + score_b, score_a**2 + score_b**2))
    rate = win_rate_of_tallies(a, b, _sum(types, win), _sum(types, loss), _sum(types, split), tallies,
                               policy=policy, confidence=confidence)
    index = np.where(va == MISSING, 3, va) * 4 + np.where(vb == MISSING, 3, vb)
    flat = np.bincount(index, weights=types, minlength=16).astype(np.int64)
    ra, rb = _single_order_rate(types, va, FIRST), _single_order_rate(types, vb, SECOND)
    return {
        "pair": chosen,
        "cross_table": CrossTable(a, b, tuple(tuple(int(v) for v in flat[r * 4:(r + 1) * 4]) for r in range(4))),
        "ungated_win_rate": rate if _sum(types, COMPLETE) else None,
        "decision": two_order_decision_of_rates(rate, ra, rb, flip_rate_high),
    }


def _design(counts: PairCounts) -> str:
    """`core.analysis._design` from the pairs by system pair and type."""
    frame = counts.pairs
    x_first = TYPE_VX[frame.get_column("ptype").to_numpy()] != ABSENT
    shown: dict[tuple[str, str], set[bool]] = {}
    for x, y, first in zip(frame.get_column("x").to_list(), frame.get_column("y").to_list(), x_first.tolist(),
                           strict=True):
        shown.setdefault((x, y), set()).add(bool(first))
    return "random_order" if any(len(v) == 2 for v in shown.values()) else "single_order"


def unswapped_of(counts: PairCounts, pair: tuple[str, str] | None) -> tuple[int, int, int, int]:
    """Skipped swaps (pairs an adaptive run judged once): how many, and how many of their verdicts named a, named
    b, said tie (0 for all three without a compared pair)."""
    frame = counts.pairs.filter(pl.Series(TYPE_SKIPPED[counts.pairs.get_column("ptype").to_numpy()]))
    total = named_a = named_b = tied = 0
    for x, y, t, k in frame.select("x", "y", "ptype", "n").iter_rows():
        first, second, state = (x, y, TYPE_VX[t]) if TYPE_VX[t] != ABSENT else (y, x, TYPE_VY[t])
        named = "tie" if state == TIE else first if state == FIRST else second
        total += k
        if pair is not None:
            named_a += k * (named == pair[0])
            named_b += k * (named == pair[1])
            tied += k * (named == "tie")
    return total, named_a, named_b, tied


def analysis_of_counts(name: str, systems: list[str], counts: PairCounts, chosen: tuple[str, str] | None,
                       policy: TiePolicy, min_consistency: float, confidence: float) -> JudgeAnalysis:
    """One judge's `JudgeAnalysis` from its counts (of the compared pair's pairs when `chosen`)."""
    types = counts.type_counts
    kinds = counts.kinds
    outcomes = outcomes_of(types)
    single = outcomes.total > 0 and _sum(types, CALLS != 1) == 0
    notes: list[str] = []
    cons = None
    if not single:
        cons = consistency_of_tally(outcomes.consistent, outcomes.complete,
                                    kind_tally(kinds, COMPLETE, 2 * _int(CONSISTENT & COMPLETE)), confidence)
    if single:
        notes.append(SINGLE_ORDER_NOTE)
    elif outcomes.incomplete and counts.reshow is not None:
        shown_once = _sum(types, CALLS == 1)
        notes.append(f"a live review that re-showed a share {counts.reshow:g} of its pairs swapped: swap-consistency "
                     f"is measured on the {outcomes.complete} pair(s) shown in both orders; {shown_once} pair(s) "
                     "shown once by design, and any other without two usable verdicts, are left out of every rate")
    elif outcomes.incomplete:
        notes.append(f"{outcomes.incomplete} pair(s) without two usable verdicts are shown and left out of every "
                     "rate")
    if counts.rounds > 1:
        notes.append(f"{counts.rounds} rounds: each round's pairs are counted, and the intervals treat the pairs of "
                     "one item (every round's) as one cluster; `swapjudge probe repeat` measures round-to-round "
                     "agreement")
    if cons is not None and cons.independence is not None and cons.independence.units == "items":
        notes.append(f"{outcomes.complete} complete pairs share {cons.independence.clusters} items (several systems "
                     "or rounds per item): the consistency and win-rate intervals treat each item as one independent "
                     f"unit (cluster-robust design effect {cons.independence.design_effect:.2f})")
    calls_first = _sum(types, TYPE_VX == FIRST) + _sum(types, TYPE_VY == FIRST)
    calls_second = _sum(types, TYPE_VX == SECOND) + _sum(types, TYPE_VY == SECOND)
    calls_tie = _sum(types, TYPE_VX == TIE) + _sum(types, TYPE_VY == TIE)
    calls_none = _sum(types, TYPE_VX == 3) + _sum(types, TYPE_VY == 3)
    verdicts = verdict_split_of_counts(calls_first, calls_second, calls_tie, calls_none, confidence)
    gate_result = gate(cons.rate if cons else None, min_consistency, cons.low if cons else None,
                       cons.high if cons else None)
    toward_first = np.isin(OUTCOME, (Outcome.FLIP_FIRST, Outcome.HALF_TIE_FIRST))
    inconsistent = toward_first | np.isin(OUTCOME, (Outcome.FLIP_SECOND, Outcome.HALF_TIE_SECOND))
    flip = flip_direction_of_tally(_sum(types, toward_first), _sum(types, inconsistent),
                                   kind_tally(kinds, inconsistent, 2 * _int(toward_first)), confidence)
    result: dict[str, Any] = {}
    if chosen:
        result.update(compare_of_types(types, kinds, chosen, policy, confidence,
                                       cons.flip_rate_high if cons else None))
    first, second, tie, unparsed = counts.probes
    never_tie = verdicts.tie == 0 and tie == 0
    identical = (IdenticalProbe(first, second, tie, unparsed, confidence, never_tie)
                 if first + second + tie + unparsed else None)
    debiased = (None if counts.debias is None else
                debias_of_counts(counts.debias, pair=chosen, policy=policy, confidence=confidence,
                                 gate_passed=gate_result.passed))
    return JudgeAnalysis(
        judge=name or None, single_order=single, systems=tuple(systems), outcomes=outcomes, consistency=cons,
        flip_direction=flip, verdicts=verdicts, gate=gate_result, accuracy=accuracy_of_types(types, kinds, confidence),
        identical=identical, notes=tuple(notes), design=_design(counts) if single else "both_orders",
        debiased=debiased, **result)


def analyze_source(source: PairSource, *, judge: str | None = None, a: str | None = None, b: str | None = None,
                   tie_policy: TiePolicy | str | None = None, min_consistency: float = DEFAULT_MIN_CONSISTENCY,
                   confidence: float = 0.95) -> list[JudgeAnalysis]:
    """Analyse reduced records, one result per judge (only `judge` when given): `core.analysis.analyze` from
    counts."""
    if not 0 < confidence < 1:
        raise ArgumentError(f"{{confidence}} must be between 0 and 1, got {confidence}", "confidence")
    if not 0 <= min_consistency <= 1:
        raise ArgumentError(f"{{min_consistency}} must be between 0 and 1, got {min_consistency}", "min_consistency")
    judges = choose_judges(source.judges(), judge)
    registered_policies = source.registered(REGISTERED_POLICY)
    registered = registered_policies[0] if len(registered_policies) == 1 else None
    policy = TiePolicy(tie_policy or registered or TiePolicy.half_credit)
    policy_note = (f"this analysis uses the {policy.value} tie policy, but the run was registered with "
                   f"{registered}: its headline differs from the one fixed before the run"
                   if registered and registered != policy.value else None)
    registered_a, registered_b = source.registered(REGISTERED_A), source.registered(REGISTERED_B)
    registered_pair = None
    if a is None and b is None and len(registered_a) == 1 and len(registered_b) == 1 \
            and registered_a[0] and registered_b[0] and registered_a[0] != registered_b[0]:
        registered_pair = (registered_a[0], registered_b[0])
    results = []
    for name in judges:
        systems = source.systems(name)
        ja, jb = registered_pair if registered_pair and set(registered_pair) <= set(systems) else (a, b)
        chosen = choose_pair(systems, ja, jb)
        counts = source.counts(name, chosen)
        result = analysis_of_counts(name, systems, counts, chosen, policy, min_consistency, confidence)
        threshold = one_value(source.thresholds(name))
        if threshold is not None:
            result = adaptive_view_of_counts(result, unswapped_of(counts, chosen), threshold,
                                             {"tie_policy": policy, "confidence": confidence})
        if policy_note:
            result = dataclasses.replace(result, notes=(*result.notes, policy_note))
        results.append(result)
    return with_holm(results)
