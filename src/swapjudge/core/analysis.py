"""The analysis of one judge's records: everything `swapjudge analyze` reports, as one frozen result.

Pure: a frame of validated records in, `JudgeAnalysis` objects out. It never knows how a verdict was made, so
imported judgments, live runs and human review sheets go through the same code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from swapjudge.core.accuracy import Accuracy, label_accuracy
from swapjudge.core.debias import Debiased, debias
from swapjudge.core.identical import IdenticalProbe, identical_probe
from swapjudge.core.pairs import PairTable, build_pairs, probe_calls, verdict_codes
from swapjudge.core.policy import (
    DEFAULT_MIN_CONSISTENCY,
    Decision,
    Gate,
    TiePolicy,
    WinRate,
    decision,
    gate,
    win_rate,
)
from swapjudge.core.records import RecordSet, registered_adaptive_swap, select_judges, skipped_swaps
from swapjudge.core.swap import (
    Consistency,
    CrossTable,
    FlipDirection,
    Outcomes,
    VerdictSplit,
    consistency,
    count_outcomes,
    cross_table,
    flip_direction,
    verdict_split,
)
from swapjudge.errors import SwapjudgeError

SINGLE_ORDER_NOTE = ("every pair was judged in one order only: swap-consistency cannot be measured, and any win "
                     "rate would carry the judge's position preference; only the first-slot rate is reported")


@dataclass(frozen=True)
class JudgeAnalysis:
    """Everything measured for one judge (DESIGN 3.4); `to_dict()` uses the contract's JSON names."""

    judge: str | None
    single_order: bool
    systems: tuple[str, ...]
    outcomes: Outcomes
    consistency: Consistency | None
    flip_direction: FlipDirection
    verdicts: VerdictSplit
    gate: Gate
    pair: tuple[str, str] | None = None
    cross_table: CrossTable | None = None
    win_rate: WinRate | None = None
    decision: Decision | None = None
    accuracy: Accuracy | None = None
    identical: IdenticalProbe | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    debiased: Debiased | None = None  # verdicts from the judge's probabilities in both orders (a mitigation)

    @property
    def withheld(self) -> bool:
        """True when a win rate exists but the gate keeps it from being reported."""
        return self.win_rate is not None and not self.gate.passed

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "judge": self.judge,
            "single_order": self.single_order,
            "pairs": {"total": self.outcomes.total, "complete": self.outcomes.complete,
                      "incomplete": self.outcomes.incomplete},
            "outcomes": self.outcomes.to_dict(),
            "consistency": (self.consistency.to_dict() if self.consistency else
                            {"rate": None, "low": None, "high": None, "band": None}),
            "flip_direction": self.flip_direction.to_dict(),
            "verdicts": self.verdicts.to_dict(),
            "gate": self.gate.to_dict(),
            "systems_seen": list(self.systems),
        }
        if self.pair:
            out["systems"] = {"a": self.pair[0], "b": self.pair[1]}
            out["cross_table"] = self.cross_table.to_dict() if self.cross_table else None
            out["win_rate"] = None if self.withheld or self.win_rate is None else self.win_rate.to_dict()
            out["decision"] = self.decision.to_dict() if self.decision and not self.withheld else None
        if self.accuracy:
            out["accuracy"] = self.accuracy.to_dict()
        if self.identical:
            out["identical"] = self.identical.to_dict()
        if self.debiased:
            out["debiased"] = self.debiased.to_dict()
        out["notes"] = list(self.notes)
        return out


@dataclass(frozen=True)
class Calculation:
    """The counts-only calculator: consistency from counts, flip direction when the flips' slots are known, and
    the order-could-decide check when a margin is given."""

    consistency: Consistency
    flip_direction: FlipDirection | None
    decision: Decision | None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"consistency": self.consistency.to_dict()}
        out["flip_rate"] = {"rate": self.consistency.flip_rate, "low": self.consistency.flip_rate_low,
                            "high": self.consistency.flip_rate_high}
        if self.flip_direction is not None:
            out["flip_direction"] = self.flip_direction.to_dict()
        if self.decision is not None:
            out["decision"] = self.decision.to_dict()
        return out


def calculate(pairs: int, consistent: int, *, to_first: int | None = None, to_second: int | None = None,
              margin: float | None = None, confidence: float = 0.95) -> Calculation:
    """Swap-consistency figures from counts alone (`swapjudge calc`)."""
    if pairs <= 0:
        raise SwapjudgeError(f"--pairs must be positive, got {pairs}")
    if not 0 <= consistent <= pairs:
        raise SwapjudgeError(f"--consistent must be between 0 and --pairs ({pairs}), got {consistent}")
    if not 0 < confidence < 1:
        raise SwapjudgeError(f"--confidence must be between 0 and 1, got {confidence}")
    if (to_first is None) != (to_second is None):
        raise SwapjudgeError("give both --to-first and --to-second, or neither")
    direction = None
    if to_first is not None and to_second is not None:
        if to_first < 0 or to_second < 0 or to_first + to_second > pairs - consistent:
            raise SwapjudgeError(f"--to-first + --to-second must be between 0 and the {pairs - consistent} "
                                 "inconsistent pairs")
        direction = flip_direction(to_first, to_second, confidence)
    cons = consistency(consistent, pairs, confidence)
    if margin is not None and not 0 <= margin <= 1:
        raise SwapjudgeError(f"--margin must be a share between 0 and 1, got {margin}")
    return Calculation(cons, direction, None if margin is None else decision(margin, cons.flip_rate_high))


def analyze(records: RecordSet | pl.DataFrame, *, judge: str | None = None, a: str | None = None,
            b: str | None = None, tie_policy: TiePolicy | str | None = None,
            min_consistency: float = DEFAULT_MIN_CONSISTENCY, confidence: float = 0.95) -> list[JudgeAnalysis]:
    """Analyse records, one result per judge (only `judge` when given)."""
    frame = records.frame if isinstance(records, RecordSet) else records
    if not 0 < confidence < 1:
        raise SwapjudgeError(f"--confidence must be between 0 and 1, got {confidence}")
    if not 0 <= min_consistency <= 1:
        raise SwapjudgeError(f"--min-consistency must be between 0 and 1, got {min_consistency}")
    judges = select_judges(frame, judge)
    # the policy fixed before the run wins unless one is asked for; asking for another one is said out loud
    registered = records.registered_tie_policy if isinstance(records, RecordSet) else None
    policy = TiePolicy(tie_policy or registered or TiePolicy.half_credit)
    policy_note = (f"this analysis uses the {policy.value} tie policy, but the run was registered with "
                   f"{registered}: its headline differs from the one fixed before the run"
                   if registered and registered != policy.value else None)
    # a run's export names the two systems it compared: unless others are asked for, read it the same way round
    registered_pair = records.registered_systems if isinstance(records, RecordSet) and a is None and b is None \
        else None
    # validation already paired the calls; build the pairs only for a frame that came without them
    pairs_all = records.pairs if isinstance(records, RecordSet) and records.pairs is not None else build_pairs(frame)
    results = []
    for name in judges:
        pairs = PairTable(pairs_all.frame.filter(pl.col("judge") == name))
        calls = frame.filter(pl.col("judge") == name)
        ja, jb = registered_pair if registered_pair and set(registered_pair) <= set(pairs.systems) else (a, b)
        result = _analyze_judge(name, pairs, calls, ja, jb, policy, min_consistency, confidence)
        # an adaptive run's export: its skipped swaps are read as `swapjudge run` reads them from the store
        threshold = registered_adaptive_swap(calls)
        if threshold is not None:
            heads = skipped_swaps(calls).select("first", "second", "verdict").to_dicts()
            result = adaptive_view(result, heads, threshold, {"tie_policy": policy, "confidence": confidence})
        if policy_note:
            result = dataclasses.replace(result, notes=(*result.notes, policy_note))
        results.append(result)
    return results


def _choose_pair(systems: list[str], a: str | None, b: str | None) -> tuple[str, str] | None:
    """The two systems to compare: as given, or the only two there are."""
    for name in (a, b):
        if name is not None and name not in systems:
            raise SwapjudgeError(f"system {name!r} is not in the records; systems: " + ", ".join(systems))
    if a is not None and b is not None:
        if a == b:
            raise SwapjudgeError("--a and --b must name two different systems")
        return a, b
    if len(systems) == 2:
        if a is not None:
            return a, next(s for s in systems if s != a)
        if b is not None:
            return next(s for s in systems if s != b), b
        return systems[0], systems[1]
    if a is not None or b is not None:
        raise SwapjudgeError("with more than two systems, name both --a and --b")
    return None


def _analyze_judge(name: str, pairs: PairTable, calls: pl.DataFrame, a: str | None, b: str | None,
                   policy: TiePolicy, min_consistency: float, confidence: float) -> JudgeAnalysis:
    systems = pairs.systems
    chosen = _choose_pair(systems, a, b)
    if chosen:
        lo, hi = sorted(chosen)
        pairs = PairTable(pairs.frame.filter((pl.col("x") == lo) & (pl.col("y") == hi)))
        calls = calls.filter(pl.col("first").is_in(chosen) & pl.col("second").is_in(chosen))
    outcome = pairs.outcome
    vx, vy = pairs.vx, pairs.vy
    counts = count_outcomes(outcome)
    # single-order data: no pair has a call in each order (by design, e.g. AlpacaEval or a `random` run)
    single = counts.total > 0 and bool((pairs.frame.get_column("calls") == 1).all())
    pair_calls = calls.filter(pl.col("first") != pl.col("second"))
    probes = probe_calls(calls)
    notes: list[str] = []
    cons = None if single else consistency(counts.consistent, counts.complete, confidence)
    if single:
        notes.append(SINGLE_ORDER_NOTE)
    elif counts.incomplete:
        notes.append(f"{counts.incomplete} pair(s) without two usable verdicts are shown and left out of every rate")
    rounds = pairs.frame.get_column("round").n_unique()
    if rounds > 1:
        notes.append(f"{rounds} rounds: each round's pairs count separately, so intervals treat repeats of the same "
                     "items as independent and are too narrow; `swapjudge probe repeat` measures round-to-round "
                     "agreement")
    verdicts = verdict_split(pair_calls.select(verdict_codes(pl.col("verdict"))).to_series().to_numpy(), confidence)
    gate_result = gate(cons.rate if cons else None, min_consistency)
    result: dict[str, Any] = {}
    if chosen:
        result.update(_compare(pairs, chosen, policy, confidence, cons))
    x = pairs.frame.get_column("x").to_numpy()
    y = pairs.frame.get_column("y").to_numpy()
    labels = pairs.frame.get_column("label").to_numpy()
    consistent_mask = (outcome <= 2)
    accuracy = label_accuracy(x, y, labels, vx, vy, consistent_mask, confidence)
    probe_codes = probes.select(verdict_codes(pl.col("verdict"))).to_series().to_numpy()
    return JudgeAnalysis(
        judge=name or None, single_order=single, systems=tuple(systems), outcomes=counts, consistency=cons,
        flip_direction=flip_direction(counts.toward_first, counts.toward_second, confidence),
        verdicts=verdicts, gate=gate_result, accuracy=accuracy,
        identical=identical_probe(probe_codes, confidence), notes=tuple(notes),
        debiased=debias(calls, pair=chosen, policy=policy, confidence=confidence, gate_passed=gate_result.passed),
        **result)


def _compare(pairs: PairTable, chosen: tuple[str, str], policy: TiePolicy, confidence: float,
             cons: Consistency | None) -> dict[str, Any]:
    """Win rate of a against b, the cross-table oriented to a, and the order-could-decide check."""
    a, b = chosen
    a_is_x = a < b
    vx, vy, outcome = pairs.vx, pairs.vy, pairs.outcome
    va, vb = (vx, vy) if a_is_x else (vy, vx)
    counts = count_outcomes(outcome)
    a_wins = int(np.sum(outcome == (0 if a_is_x else 1)))
    b_wins = int(np.sum(outcome == (1 if a_is_x else 0)))
    rate = win_rate(a, b, a_wins, b_wins, counts.complete - a_wins - b_wins, policy, confidence)
    return {
        "pair": chosen,
        "cross_table": cross_table(a, b, va, vb),
        "win_rate": rate if counts.complete else None,
        "decision": decision(rate.margin, cons.flip_rate_high if cons else None),
    }

def adaptive_view(analysis: JudgeAnalysis, unswapped: Iterable[Mapping[str, Any]], threshold: float,
                  settings: Mapping[str, Any]) -> JudgeAnalysis:
    """An adaptive run's analysis, said plainly: swap-consistency (and the gate, and label accuracy) come from the
    swapped pairs alone, a selected subset; the win rate counts every pair, an unswapped one by its one verdict.

    `analysis`: the plain analysis of the run's calls (an unswapped pair counts there as incomplete);
    `unswapped`: the one call (first, second, verdict) of each pair whose swap was skipped; `settings`: the
    analysis' `tie_policy` and `confidence`. Pure: `store.analysis.analyze_run` (the store) and `core.analysis.analyze`
    (exported records carrying `registered_adaptive_swap`) both end here, so they say the same."""
    chosen = set(analysis.pair) if analysis.pair else None
    heads = [c for c in unswapped if c["verdict"] is not None
             and (chosen is None or {c["first"], c["second"]} == chosen)]
    if not heads:
        return analysis
    unswapped_n = len(heads)
    o = analysis.outcomes
    other_incomplete = o.incomplete - unswapped_n
    generic = f"{o.incomplete} pair(s) without two usable verdicts"
    notes = [n for n in analysis.notes if not n.startswith(generic)]
    if other_incomplete > 0:
        notes.append(f"{other_incomplete} pair(s) without two usable verdicts (failed or unparsable calls) are "
                     "shown and left out of every rate")
    cons = analysis.consistency
    measured = "not measured" if cons is None or cons.rate is None else f"{cons.rate:.1%}"
    head = (f"adaptive swapping (threshold {threshold:g}): {o.complete} pair(s) swapped, {unswapped_n} judged in "
            f"one order only (first verdict's confidence >= {threshold:g}; no swap measurement, nothing assumed). ")
    if o.complete == 0:
        notes.append(head + "No pair was swapped, so swap-consistency is not measured and the gate fails; "
                            "confident verdicts can still be position-driven")
    else:
        notes.append(head + f"Swap-consistency ({measured}), the gate and label accuracy use the {o.complete} swapped "
                            "pair(s) alone: a selected subset (the least confident first verdicts, plus any served "
                            "from the cache), which says nothing certain about the unswapped pairs; confident "
                            "verdicts can still be position-driven")
    rate = analysis.win_rate
    result = dataclasses.replace(analysis, notes=tuple(notes))
    if analysis.pair is None:
        return result
    a, b = analysis.pair
    aw, bw, splits = (0, 0, 0) if rate is None else (rate.a_wins, rate.b_wins, rate.splits)
    for h in heads:
        named = "tie" if h["verdict"] == "tie" else h["first"] if h["verdict"] == "first" else h["second"]
        aw, bw, splits = aw + (named == a), bw + (named == b), splits + (named == "tie")
    policy = rate.policy if rate is not None else settings.get("tie_policy") or "half_credit"
    mixed = win_rate(a, b, aw, bw, splits, policy, float(settings.get("confidence", 0.95)))
    notes.append(
        f"win rate over all {mixed.pairs} pair(s): each swapped pair by its two-order outcome under the tie policy, "
        f"each of the {unswapped_n} unswapped pair(s) by its one verdict in its coin-flipped order (a position-driven "
        "verdict there counts as a win for whichever system sat in slot 1, not as a flip)")
    return dataclasses.replace(result, win_rate=mixed, notes=tuple(notes),
                               decision=decision(mixed.margin, cons.flip_rate_high if cons else None))
