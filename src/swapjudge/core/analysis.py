"""The analysis of one judge's records: everything `swapjudge analyze` reports, as one frozen result.

One builder (`analysis_of_counts`) makes every `JudgeAnalysis` from a selection's counts (`reading.reduce`):
`analyze` reduces validated records in memory, `analyze_source` takes counts either engine reduced (the
streaming engine's from files larger than memory), and the rows are read only for what counts do not hold
(graded levels). Pure: it never knows how a verdict was made, so imported judgments, live runs and human review
sheets go through the same code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from swapjudge.core import documents
from swapjudge.core.accuracy import Accuracy
from swapjudge.core.calculator import Calculation as Calculation  # re-exported: its home before
from swapjudge.core.calculator import calculate as calculate
from swapjudge.core.counted import (
    CALLS,
    COMPLETE,
    CONSISTENT,
    OUTCOME,
    accuracy_of_types,
    as_ints,
    compare_of_types,
    count_of,
    design_of_counts,
    kind_tally,
    outcomes_of,
    unswapped_of,
)
from swapjudge.core.debias import Debiased, debias_of_counts
from swapjudge.core.display import Displayable
from swapjudge.core.graded import (
    GradedSwap,
    arena_hard_interval,
    graded_cross_table,
    graded_scores,
    graded_swap,
    levels,
)
from swapjudge.core.identical import IdenticalProbe
from swapjudge.core.policy import (
    DEFAULT_MIN_CONSISTENCY,
    Decision,
    Gate,
    Rate,
    TiePolicy,
    WinRate,
    decision,
    gate,
    win_rate_of_counts,
    withheld_copy,
)
from swapjudge.core.stats import holm, mean_interval
from swapjudge.core.swap import (
    Consistency,
    CrossTable,
    FlipDirection,
    Outcomes,
    VerdictSplit,
    consistency_of_tally,
    flip_direction_of_tally,
    verdict_split_of_counts,
)
from swapjudge.errors import ArgumentError, SwapjudgeError
from swapjudge.outcome import Concluded, Ending, gates_ending
from swapjudge.reading.pairs import (
    FIRST,
    SECOND,
    TIE,
    Outcome,
    PairTable,
    build_pairs,
)
from swapjudge.reading.reduce import TYPE_VX, TYPE_VY, FrameSource, PairCounts, PairSource, one_value
from swapjudge.reading.rows import REGISTERED_A, REGISTERED_B, REGISTERED_POLICY, choose_judges

if TYPE_CHECKING:  # records in memory are polars frames; counts (`analyze_source`) need no polars
    import polars as pl

    from swapjudge.reading.records import RecordSet

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


def analyze_records(records: RecordSet | pl.DataFrame, *, judge: str | None = None, a: str | None = None,
                    b: str | None = None, tie_policy: TiePolicy | str | None = None,
                    min_consistency: float = DEFAULT_MIN_CONSISTENCY, confidence: float = 0.95) -> list[JudgeAnalysis]:
    """Analyse records, one result per judge (only `judge` when given): the records are reduced to counts in
    memory (`reading.reduce.FrameSource`) and go through the builder the streaming engine's counts go through;
    the rows are read again only for graded verdicts (`strength`), whose levels the counts do not hold."""
    import polars as pl

    from swapjudge.reading.records import RecordSet, registered_adaptive_swap, select_judges

    frame = records.frame if isinstance(records, RecordSet) else records
    _check_levels(min_consistency, confidence)
    judges = select_judges(frame, judge)
    # the policy fixed before the run wins unless one is asked for; asking for another one is said out loud
    registered = records.registered_tie_policy if isinstance(records, RecordSet) else None
    # a run's export names the two systems it compared: unless others are asked for, read it the same way round
    registered_pair = records.registered_systems if isinstance(records, RecordSet) and a is None and b is None \
        else None
    # validation already paired the calls; build the pairs only for a frame that came without them
    pairs_all = records.pairs if isinstance(records, RecordSet) and records.pairs is not None else build_pairs(frame)
    source = FrameSource(frame)
    tables = {name: PairTable(pairs_all.frame.filter(pl.col("judge") == name)) for name in judges}

    def threshold(name: str) -> float | None:
        return registered_adaptive_swap(frame.filter(pl.col("judge") == name))

    def graded(analysis: JudgeAnalysis, name: str) -> JudgeAnalysis:
        return with_graded(analysis, tables[name], confidence)

    return _analyses(source, judges, {name: tables[name].systems for name in judges}, a, b, registered,
                     registered_pair, threshold, policy=tie_policy, min_consistency=min_consistency,
                     confidence=confidence, rows=graded)


def analyze_source(source: PairSource, *, judge: str | None = None, a: str | None = None, b: str | None = None,
                   tie_policy: TiePolicy | str | None = None, min_consistency: float = DEFAULT_MIN_CONSISTENCY,
                   confidence: float = 0.95) -> list[JudgeAnalysis]:
    """Analyse reduced records (either engine's `reading.reduce.PairSource`), one result per judge (only `judge`
    when given): what `analyze` says of the same records, from their counts alone."""
    _check_levels(min_consistency, confidence)
    judges = choose_judges(source.judges(), judge)
    registered_policies = source.registered(REGISTERED_POLICY)
    registered = registered_policies[0] if len(registered_policies) == 1 else None
    registered_a, registered_b = source.registered(REGISTERED_A), source.registered(REGISTERED_B)
    registered_pair = None
    if a is None and b is None and len(registered_a) == 1 and len(registered_b) == 1 \
            and registered_a[0] and registered_b[0] and registered_a[0] != registered_b[0]:
        registered_pair = (registered_a[0], registered_b[0])

    def threshold(name: str) -> float | None:
        return one_value(source.thresholds(name))

    return _analyses(source, judges, {name: source.systems(name) for name in judges}, a, b, registered,
                     registered_pair, threshold, policy=tie_policy, min_consistency=min_consistency,
                     confidence=confidence)


def _check_levels(min_consistency: float, confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ArgumentError(f"{{confidence}} must be between 0 and 1, got {confidence}", "confidence")
    if not 0 <= min_consistency <= 1:
        raise ArgumentError(f"{{min_consistency}} must be between 0 and 1, got {min_consistency}", "min_consistency")


def _analyses(source: PairSource, judges: list[str], systems: Mapping[str, list[str]], a: str | None,
              b: str | None, registered: str | None, registered_pair: tuple[str, str] | None,
              threshold: Callable[[str], float | None], *, policy: TiePolicy | str | None, min_consistency: float,
              confidence: float,
              rows: Callable[[JudgeAnalysis, str], JudgeAnalysis] | None = None) -> list[JudgeAnalysis]:
    """Every judge's analysis from its counts, whichever engine computed them: the compared pair (as asked, or
    as the run registered it), the adaptive run's view, the tie policy's note, Holm across judges. `rows` adds
    what only the rows hold (graded levels), when they are there."""
    chosen_policy = TiePolicy(policy or registered or TiePolicy.half_credit)
    policy_note = (f"this analysis uses the {chosen_policy.value} tie policy, but the run was registered with "
                   f"{registered}: its headline differs from the one fixed before the run"
                   if registered and registered != chosen_policy.value else None)
    results = []
    for name in judges:
        seen = systems[name]
        ja, jb = registered_pair if registered_pair and set(registered_pair) <= set(seen) else (a, b)
        chosen = choose_pair(seen, ja, jb)
        counts = source.counts(name, chosen)
        result = analysis_of_counts(name, seen, counts, chosen, chosen_policy, min_consistency, confidence)
        if rows is not None:
            result = rows(result, name)
        # an adaptive run's export: its skipped swaps are read as `swapjudge run` reads them from the store
        cut = threshold(name)
        if cut is not None:
            result = adaptive_view_of_counts(result, unswapped_of(counts, chosen), cut,
                                             {"tie_policy": chosen_policy, "confidence": confidence})
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


def analysis_of_counts(name: str, systems: list[str], counts: PairCounts, chosen: tuple[str, str] | None,
                       policy: TiePolicy, min_consistency: float, confidence: float) -> JudgeAnalysis:
    """One judge's `JudgeAnalysis` from its counts (of the compared pair's pairs when `chosen`)."""
    types = counts.type_counts
    kinds = counts.kinds
    outcomes = outcomes_of(types)
    single = outcomes.total > 0 and count_of(types, CALLS != 1) == 0
    notes: list[str] = []
    cons = None
    if not single:
        cons = consistency_of_tally(outcomes.consistent, outcomes.complete,
                                    kind_tally(kinds, COMPLETE, 2 * as_ints(CONSISTENT & COMPLETE)), confidence)
    if single:
        notes.append(SINGLE_ORDER_NOTE)
    elif outcomes.incomplete and counts.reshow is not None:
        shown_once = count_of(types, CALLS == 1)
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
    calls_first = count_of(types, TYPE_VX == FIRST) + count_of(types, TYPE_VY == FIRST)
    calls_second = count_of(types, TYPE_VX == SECOND) + count_of(types, TYPE_VY == SECOND)
    calls_tie = count_of(types, TYPE_VX == TIE) + count_of(types, TYPE_VY == TIE)
    calls_none = count_of(types, TYPE_VX == 3) + count_of(types, TYPE_VY == 3)
    verdicts = verdict_split_of_counts(calls_first, calls_second, calls_tie, calls_none, confidence)
    gate_result = gate(cons.rate if cons else None, min_consistency, cons.low if cons else None,
                       cons.high if cons else None)
    toward_first = np.isin(OUTCOME, (Outcome.FLIP_FIRST, Outcome.HALF_TIE_FIRST))
    inconsistent = toward_first | np.isin(OUTCOME, (Outcome.FLIP_SECOND, Outcome.HALF_TIE_SECOND))
    flip = flip_direction_of_tally(count_of(types, toward_first), count_of(types, inconsistent),
                                   kind_tally(kinds, inconsistent, 2 * as_ints(toward_first)), confidence)
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
        identical=identical, notes=tuple(notes), design=design_of_counts(counts) if single else "both_orders",
        debiased=debiased, **result)


def with_graded(analysis: JudgeAnalysis, pairs: PairTable, confidence: float) -> JudgeAnalysis:
    """The analysis with the five-level figures (`core.graded`) when the records carry strength: the graded swap
    and, for the compared pair, the graded score and arena-hard's convention beside the win rate. The levels are
    in the rows only, so this reads the judge's pair table (`pairs`)."""
    import polars as pl

    chosen = analysis.pair
    if chosen:
        lo, hi = sorted(chosen)
        pairs = PairTable(pairs.frame.filter((pl.col("x") == lo) & (pl.col("y") == hi)))
    graded_levels = _levels(pairs)
    if graded_levels is None:
        return analysis
    lx, ly = graded_levels
    changes: dict[str, Any] = {}
    items = pairs.frame.get_column("item").cast(pl.String).to_numpy()
    if chosen and analysis.ungated_win_rate is not None:
        la, lb = (lx, ly) if chosen[0] < chosen[1] else (ly, lx)
        scores = graded_scores(la, lb)
        usable = ~np.isnan(scores)
        battles, n_battles = arena_hard_interval(la, lb, confidence)
        changes["ungated_win_rate"] = dataclasses.replace(
            analysis.ungated_win_rate, graded=Rate.of(mean_interval(scores[usable], confidence, items[usable])),
            graded_pairs=int(usable.sum()), arena_hard=Rate.of(battles), arena_hard_battles=n_battles)
    if not analysis.single_order:
        cross = None
        if chosen:
            la, lb = (lx, ly) if chosen[0] < chosen[1] else (ly, lx)
            cross = graded_cross_table(chosen[0], chosen[1], la, lb)
        changes["graded"] = graded_swap(pairs.outcome, lx, ly, items, confidence, cross)
    return dataclasses.replace(analysis, **changes) if changes else analysis


def _levels(pairs: PairTable) -> tuple[np.ndarray, np.ndarray] | None:
    """Each pair's two graded levels (x in slot 1, y in slot 1; core.graded), when the records carry strength."""
    frame = pairs.frame
    if "sx" not in frame.columns or (frame.get_column("sx").null_count() == frame.height
                                     and frame.get_column("sy").null_count() == frame.height):
        return None
    sx = frame.get_column("sx").fill_null(0).to_numpy()
    sy = frame.get_column("sy").fill_null(0).to_numpy()
    return levels(pairs.vx, sx), levels(pairs.vy, sy)



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
    mixed = win_rate_of_counts(a, b, aw, bw, splits, policy, float(settings.get("confidence", 0.95)))
    notes.append(
        f"win rate over all {mixed.pairs} pair(s): each swapped pair by its two-order outcome under the tie policy, "
        f"each of the {unswapped_n} unswapped pair(s) by its one verdict in its coin-flipped order (a position-driven "
        "verdict there counts as a win for whichever system sat in slot 1, not as a flip)")
    return dataclasses.replace(result, ungated_win_rate=mixed, notes=tuple(notes),
                               decision=decision(mixed.margin, cons.flip_rate_high if cons else None))
