"""The analysis of one judge's records: everything `swapjudge analyze` reports, as one frozen result.

Pure: a frame of validated records in, `JudgeAnalysis` objects out. It never knows how a verdict was made, so
imported judgments, live runs and human review sheets go through the same code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np
import polars as pl

from swapjudge.core import documents
from swapjudge.core.accuracy import Accuracy, label_accuracy
from swapjudge.core.calculator import Calculation as Calculation  # re-exported: its home before
from swapjudge.core.calculator import calculate as calculate
from swapjudge.core.debias import Debiased, debias
from swapjudge.core.display import Displayable
from swapjudge.core.graded import (
    GradedSwap,
    arena_hard_interval,
    graded_cross_table,
    graded_scores,
    graded_swap,
    levels,
)
from swapjudge.core.identical import IdenticalProbe, identical_probe
from swapjudge.core.policy import (
    DEFAULT_MIN_CONSISTENCY,
    Decision,
    Gate,
    Rate,
    TiePolicy,
    WinRate,
    decision,
    gate,
    two_order_decision,
    win_rate,
    win_rate_over_pairs,
    withheld_copy,
)
from swapjudge.core.stats import holm, mean_interval
from swapjudge.core.swap import (
    Consistency,
    CrossTable,
    FlipDirection,
    Outcomes,
    VerdictSplit,
    consistency_of_pairs,
    count_outcomes,
    cross_table,
    flip_direction_of_pairs,
    verdict_split,
)
from swapjudge.errors import ArgumentError, SwapjudgeError
from swapjudge.outcome import Concluded, Ending, gates_ending
from swapjudge.reading.pairs import (
    FIRST,
    MISSING,
    SECOND,
    TIE,
    Outcome,
    PairTable,
    build_pairs,
    probe_calls,
    verdict_codes,
)
from swapjudge.reading.records import (
    RecordSet,
    registered_adaptive_swap,
    registered_reshow,
    select_judges,
    skipped_swaps,
)

SINGLE_ORDER_NOTE = ("every pair was judged in one order only: swap-consistency cannot be measured, and any win "
                     "rate would carry the judge's position preference; only the first-slot rate is reported")


@dataclass(frozen=True)
class JudgeAnalysis(Displayable):
    """Everything measured for one judge; `to_dict()` gives the JSON of `swapjudge analyze` (docs/json.md)."""

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
    # the win rate whatever the gate says: read it only on purpose (`win_rate` is the gated one)
    ungated_win_rate: WinRate | None = None
    decision: Decision | None = None
    accuracy: Accuracy | None = None
    identical: IdenticalProbe | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    design: str = "both_orders"  # both_orders | single_order | random_order | adaptive: how the pairs were judged
    debiased: Debiased | None = None  # verdicts from the judge's probabilities in both orders (a mitigation)
    graded: GradedSwap | None = None  # the five-level analysis, when the records carry strength
    fragility: Any = None  # how few items stand between the comparison's reading and another (`--fragility`)

    @property
    def withheld(self) -> bool:
        """True when a win rate exists but the gate keeps it from being reported."""
        return self.ungated_win_rate is not None and not self.gate.passed

    @property
    def win_rate(self) -> WinRate | None:
        """The win rate the gate allows: when the gate fails, the counts stay and every rate is None
        (`ungated_win_rate` holds the figures, for a reader who asks for them by name)."""
        if self.ungated_win_rate is None or self.gate.passed:
            return self.ungated_win_rate
        return withheld_copy(self.ungated_win_rate)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "judge": self.judge,
            "single_order": self.single_order,
            "pairs": {"total": self.outcomes.total, "complete": self.outcomes.complete,
                      "incomplete": self.outcomes.incomplete},
            "outcomes": self.outcomes.to_dict(),
            "consistency": (self.consistency.to_dict() if self.consistency else
                            {"rate": None, "low": None, "high": None, "band": None, "consistent": None,
                             "pairs": None, "confidence": None, "method": None, "effective_n": None,
                             "independent": None, "clusters": None, "design_effect": None}),
            "flip_direction": self.flip_direction.to_dict(),
            "verdicts": self.verdicts.to_dict(),
            "gate": self.gate.to_dict(),
            "systems_seen": list(self.systems),
            "design": self.design,
        }
        # every key is present, null when it does not apply, so a script can rely on the shape (docs/json.md)
        out["systems"] = {"a": self.pair[0], "b": self.pair[1]} if self.pair else None
        out["cross_table"] = self.cross_table.to_dict() if self.pair and self.cross_table else None
        out["win_rate"] = (None if self.withheld or self.ungated_win_rate is None or not self.pair
                           else self.ungated_win_rate.to_dict())
        out["decision"] = self.decision.to_dict() if self.pair and self.decision and not self.withheld else None
        out["accuracy"] = self.accuracy.to_dict() if self.accuracy else None
        out["identical"] = self.identical.to_dict() if self.identical else None
        out["debiased"] = self.debiased.to_dict() if self.debiased else None
        out["graded"] = self.graded.to_dict() if self.graded else None
        out["notes"] = list(self.notes)
        if self.fragility is not None:
            out["fragility"] = self.fragility.to_dict()
        return out

    def to_frame(self, backend: str = "polars") -> Any:
        """One row of the flattened `to_dict()` (`consistency.rate`, `gate.passed`, ...): polars, or pandas."""
        return documents.frame([documents.flatten(self.to_dict())], backend)


@dataclass(frozen=True)
class Analyses(Displayable, Concluded):
    """One `JudgeAnalysis` per judge, in judge-name order. Index by position or by judge name."""

    judges: tuple[JudgeAnalysis, ...]

    def __iter__(self) -> Iterator[JudgeAnalysis]:
        return iter(self.judges)

    def __len__(self) -> int:
        return len(self.judges)

    @overload
    def __getitem__(self, key: int) -> JudgeAnalysis: ...
    @overload
    def __getitem__(self, key: str) -> JudgeAnalysis: ...
    def __getitem__(self, key: int | str) -> JudgeAnalysis:
        if isinstance(key, str):
            for analysis in self.judges:
                if (analysis.judge or "") == key:
                    return analysis
            raise KeyError(f"no judge {key!r}; judges: " + ", ".join(repr(a.judge or "") for a in self.judges))
        return self.judges[key]

    @property
    def passed(self) -> bool:
        """True when there is a judge and every judge passed the self-consistency gate (no analysis passes
        nothing)."""
        return bool(self.judges) and all(a.gate.passed for a in self.judges)

    def ending(self) -> Ending:
        """Failed, one line per judge below its gate (exit 1 at the CLI, by `raise_for_gate()`); ok otherwise."""
        return gates_ending((a.judge, a.gate) for a in self.judges)

    def to_dict(self) -> dict[str, Any]:
        """The CLI's JSON: one judge's object, or `{"judges": [...]}` for several."""
        dicts = [a.to_dict() for a in self.judges]
        document: dict[str, Any] = documents.json_document(dicts[0] if len(dicts) == 1 else {"judges": dicts})
        return document

    def to_frame(self, backend: str = "polars") -> Any:
        """One row per judge of the flattened analysis: polars, or pandas with `backend="pandas"`."""
        return documents.frame([documents.flatten(a.to_dict()) for a in self.judges], backend)


def analyze(records: RecordSet | pl.DataFrame, *, judge: str | None = None, a: str | None = None,
            b: str | None = None, tie_policy: TiePolicy | str | None = None,
            min_consistency: float = DEFAULT_MIN_CONSISTENCY, confidence: float = 0.95) -> list[JudgeAnalysis]:
    """Analyse records, one result per judge (only `judge` when given)."""
    frame = records.frame if isinstance(records, RecordSet) else records
    if not 0 < confidence < 1:
        raise ArgumentError(f"{{confidence}} must be between 0 and 1, got {confidence}", "confidence")
    if not 0 <= min_consistency <= 1:
        raise ArgumentError(f"{{min_consistency}} must be between 0 and 1, got {min_consistency}", "min_consistency")
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
    return with_holm(results)


def with_holm(results: list[JudgeAnalysis]) -> list[JudgeAnalysis]:
    """Several judges (or segments) tested in one command: each flip-direction test gets its Holm-adjusted p,
    and a lean is claimed only when the adjusted p rejects."""
    if len(results) < 2:
        return results
    adjusted = holm([r.flip_direction.p_value for r in results])
    return [dataclasses.replace(r, flip_direction=dataclasses.replace(r.flip_direction, p_holm=p))
            for r, p in zip(results, adjusted, strict=True)]


def choose_pair(systems: list[str], a: str | None, b: str | None) -> tuple[str, str] | None:
    """The two systems to compare: as given, or the only two there are."""
    for name in (a, b):
        if name is not None and name not in systems:
            raise SwapjudgeError(f"system {name!r} is not in the records; systems: " + ", ".join(systems))
    if a is not None and b is not None:
        if a == b:
            raise ArgumentError("{a} and {b} must name two different systems", "a", "b")
        return a, b
    if len(systems) == 2:
        if a is not None:
            return a, next(s for s in systems if s != a)
        if b is not None:
            return next(s for s in systems if s != b), b
        return systems[0], systems[1]
    if a is not None or b is not None:
        raise ArgumentError("with more than two systems, name both {a} and {b}", "a", "b")
    return None


def _analyze_judge(name: str, pairs: PairTable, calls: pl.DataFrame, a: str | None, b: str | None,
                   policy: TiePolicy, min_consistency: float, confidence: float) -> JudgeAnalysis:
    systems = pairs.systems
    chosen = choose_pair(systems, a, b)
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
    # pairs judged on the same item (other systems, other rounds) move together: the interval counts items
    items = pairs.frame.get_column("item").cast(pl.String).to_numpy()
    cons = None if single else consistency_of_pairs(outcome, items, confidence)
    if single:
        notes.append(SINGLE_ORDER_NOTE)
    elif counts.incomplete and (reshow := registered_reshow(calls)) is not None:
        shown_once = int((pairs.frame.get_column("calls") == 1).sum())
        notes.append(f"a live review that re-showed a share {reshow:g} of its pairs swapped: swap-consistency is "
                     f"measured on the {counts.complete} pair(s) shown in both orders; {shown_once} pair(s) shown "
                     "once by design, and any other without two usable verdicts, are left out of every rate")
    elif counts.incomplete:
        notes.append(f"{counts.incomplete} pair(s) without two usable verdicts are shown and left out of every rate")
    rounds = pairs.frame.get_column("round").n_unique()
    if rounds > 1:
        notes.append(f"{rounds} rounds: each round's pairs are counted, and the intervals treat the pairs of one item "
                     "(every round's) as one cluster; `swapjudge probe repeat` measures round-to-round agreement")
    if cons is not None and cons.independence is not None and cons.independence.units == "items":
        notes.append(f"{counts.complete} complete pairs share {cons.independence.clusters} items (several systems or "
                     "rounds per item): the consistency and win-rate intervals treat each item as one independent "
                     f"unit (cluster-robust design effect {cons.independence.design_effect:.2f})")
    verdicts = verdict_split(pair_calls.select(verdict_codes(pl.col("verdict"))).to_series().to_numpy(), confidence)
    gate_result = gate(cons.rate if cons else None, min_consistency, cons.low if cons else None,
                       cons.high if cons else None)
    graded_levels = _levels(pairs)
    result: dict[str, Any] = {}
    if chosen:
        result.update(_compare(pairs, chosen, policy, confidence, cons, graded_levels))
    if graded_levels is not None and not single:
        lx, ly = graded_levels
        cross = None
        if chosen:
            la, lb = (lx, ly) if chosen[0] < chosen[1] else (ly, lx)
            cross = graded_cross_table(chosen[0], chosen[1], la, lb)
        result["graded"] = graded_swap(outcome, lx, ly, items, confidence, cross)
    x = pairs.frame.get_column("x").to_numpy()
    y = pairs.frame.get_column("y").to_numpy()
    labels = pairs.frame.get_column("label").to_numpy()
    consistent_mask = (outcome <= 2)
    accuracy = label_accuracy(x, y, labels, vx, vy, consistent_mask, confidence,
                              item=pairs.frame.get_column("item").cast(pl.String).to_numpy())
    probe_codes = probes.select(verdict_codes(pl.col("verdict"))).to_series().to_numpy()
    never_tie = verdicts.tie == 0 and not bool(np.any(probe_codes == TIE))
    return JudgeAnalysis(
        judge=name or None, single_order=single, systems=tuple(systems), outcomes=counts, consistency=cons,
        flip_direction=flip_direction_of_pairs(outcome, items, confidence),
        verdicts=verdicts, gate=gate_result, accuracy=accuracy,
        identical=identical_probe(probe_codes, confidence, forced_choice=never_tie), notes=tuple(notes),
        design=_design(pairs) if single else "both_orders",
        debiased=debias(calls, pair=chosen, policy=policy, confidence=confidence, gate_passed=gate_result.passed),
        **result)


def _design(pairs: PairTable) -> str:
    """Pairs judged once: "random_order" when the same two systems were shown both ways round across items (a
    coin-flipped order), "single_order" when each comparison kept one order."""
    shown = pairs.frame.select("x", "y", (pl.col("n_xf") > 0).alias("x_first")).unique()
    return "random_order" if shown.group_by("x", "y").len().get_column("len").max() == 2 else "single_order"


def _levels(pairs: PairTable) -> tuple[np.ndarray, np.ndarray] | None:
    """Each pair's two graded levels (x in slot 1, y in slot 1; core.graded), when the records carry strength."""
    frame = pairs.frame
    if "sx" not in frame.columns or (frame.get_column("sx").null_count() == frame.height
                                     and frame.get_column("sy").null_count() == frame.height):
        return None
    sx = frame.get_column("sx").fill_null(0).to_numpy()
    sy = frame.get_column("sy").fill_null(0).to_numpy()
    return levels(pairs.vx, sx), levels(pairs.vy, sy)


def _compare(pairs: PairTable, chosen: tuple[str, str], policy: TiePolicy, confidence: float,
             cons: Consistency | None, graded_levels: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
    """Win rate of a against b, the cross-table oriented to a, and the order-could-decide check."""
    a, b = chosen
    a_is_x = a < b
    vx, vy, outcome = pairs.vx, pairs.vy, pairs.outcome
    va, vb = (vx, vy) if a_is_x else (vy, vx)
    complete = outcome != Outcome.INCOMPLETE
    a_win, b_win = (Outcome.X_WINS, Outcome.Y_WINS) if a_is_x else (Outcome.Y_WINS, Outcome.X_WINS)
    result = np.where(outcome == a_win, 1.0, np.where(outcome == b_win, 0.0, 0.5))[complete]
    # per call: a's score in each usable call (the one that showed a first, the one that showed b first); a tie
    # is half; a call whose twin failed still counts, as harnesses that count calls count it
    call_a = np.select([va == FIRST, va == SECOND], [1.0, 0.0], 0.5)
    call_b = np.select([vb == SECOND, vb == FIRST], [1.0, 0.0], 0.5)
    all_items = pairs.frame.get_column("item").cast(pl.String).to_numpy()
    used_a, used_b = va != MISSING, vb != MISSING
    per_call = (np.concatenate([call_a[used_a], call_b[used_b]]),
                np.concatenate([all_items[used_a], all_items[used_b]]))
    rate = win_rate_over_pairs(a, b, result, items=all_items[complete], per_call=per_call, policy=policy,
                               confidence=confidence)
    if graded_levels is not None:
        la, lb = graded_levels if a_is_x else graded_levels[::-1]
        scores = graded_scores(la, lb)
        graded = ~np.isnan(scores)
        battles, n_battles = arena_hard_interval(la, lb, confidence)
        rate = dataclasses.replace(
            rate, graded=Rate.of(mean_interval(scores[graded], confidence, all_items[graded])),
            graded_pairs=int(graded.sum()), arena_hard=Rate.of(battles), arena_hard_battles=n_battles)
    return {
        "pair": chosen,
        "cross_table": cross_table(a, b, va, vb),
        "ungated_win_rate": rate if complete.any() else None,
        "decision": two_order_decision(rate, va[complete], vb[complete], cons.flip_rate_high if cons else None),
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
    named = ["tie" if h["verdict"] == "tie" else h["first"] if h["verdict"] == "first" else h["second"]
             for h in heads]
    a, b = analysis.pair if analysis.pair else (None, None)
    return adaptive_view_of_counts(analysis, (len(heads), named.count(a), named.count(b), named.count("tie")),
                                   threshold, settings)


def adaptive_view_of_counts(analysis: JudgeAnalysis, unswapped: tuple[int, int, int, int], threshold: float,
                            settings: Mapping[str, Any]) -> JudgeAnalysis:
    """`adaptive_view` from counts: `unswapped` = (pairs judged in one order only, with a verdict; how many of
    those verdicts named a, named b, said tie), of the compared pair when there is one."""
    unswapped_n, named_a, named_b, named_tie = unswapped
    if not unswapped_n:
        return analysis
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
    rate = analysis.ungated_win_rate
    result = dataclasses.replace(analysis, notes=tuple(notes), design="adaptive")
    if analysis.pair is None:
        return result
    a, b = analysis.pair
    aw, bw, splits = (0, 0, 0) if rate is None else (rate.a_wins, rate.b_wins, rate.splits)
    aw, bw, splits = aw + named_a, bw + named_b, splits + named_tie
    policy = rate.policy if rate is not None else settings.get("tie_policy") or "half_credit"
    mixed = win_rate(a, b, aw, bw, splits, policy, float(settings.get("confidence", 0.95)))
    notes.append(
        f"win rate over all {mixed.pairs} pair(s): each swapped pair by its two-order outcome under the tie policy, "
        f"each of the {unswapped_n} unswapped pair(s) by its one verdict in its coin-flipped order (a position-driven "
        "verdict there counts as a win for whichever system sat in slot 1, not as a flip)")
    return dataclasses.replace(result, ungated_win_rate=mixed, notes=tuple(notes),
                               decision=decision(mixed.margin, cons.flip_rate_high if cons else None))
