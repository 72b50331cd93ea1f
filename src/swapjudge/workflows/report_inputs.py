"""What a report shows, as the renderers in `swapjudge.report` read it: each judge's analysis and ranking, the
segments, the review queue, the probes, and the source they came from; and the one builder of it,
`report_of_counts`, from the counts of either engine (`ReportCounts`: `workflows.report.MemoryCounts` of records
read whole, `workflows.streamed_report.StreamedCounts` of the streaming engine's reduction)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import polars as pl

from swapjudge.core.analysis import JudgeAnalysis
from swapjudge.core.policy import DEFAULT_MIN_CONSISTENCY, TiePolicy
from swapjudge.defaults import DEFAULT_REPORT_ROUNDS
from swapjudge.errors import InputError
from swapjudge.outcome import Concluded, Ending, gates_ending
from swapjudge.probes.calibrate import SPLIT_VALUE, Calibration, calibrate_records
from swapjudge.probes.length import LengthProbe
from swapjudge.probes.panel import PanelResult
from swapjudge.probes.segments import SegmentedAnalysis
from swapjudge.ranking.battles import OutcomeSource
from swapjudge.ranking.bradley_terry import Comparisons, Model, Ranking, fit_ranking
from swapjudge.workflows.sources import ReportSource, StreamedSource

# one segment's value and its analysis for one judge
SegmentRow = tuple[str, JudgeAnalysis]
# records may carry answer lengths instead of texts (e.g. imports that dropped the texts)
LENGTH_COLUMNS = ("first_length", "second_length")


@dataclass(frozen=True)
class ReportOptions:
    """What a report is asked for, whichever engine reads its records: the judge, the compared systems, the tie
    policy and gate (None: the run's registered ones, else half_credit and 0.70; see `resolved`), the confidence,
    the segment field and the ranking's bootstrap."""

    judge: str | None = None
    a: str | None = None
    b: str | None = None
    tie_policy: TiePolicy | str | None = None
    min_consistency: float | None = None
    confidence: float = 0.95
    segment: str | None = None
    rank_rounds: int = DEFAULT_REPORT_ROUNDS
    rank_seed: int = 0
    rank_model: Model | str = Model.rao_kupper

    def resolved(self, registered: Mapping[str, Any]) -> ReportOptions:
        """The options with the tie policy and gate settled: as asked, else as the run registered them
        (`registered`: `workflows.report.registered_settings`), else half_credit and DEFAULT_MIN_CONSISTENCY."""
        policy = TiePolicy(self.tie_policy if self.tie_policy is not None
                           else registered.get("tie_policy", TiePolicy.half_credit))
        gate = (self.min_consistency if self.min_consistency is not None
                else registered.get("min_consistency", DEFAULT_MIN_CONSISTENCY))
        return dataclasses.replace(self, tie_policy=policy, min_consistency=gate)

    @property
    def policy(self) -> TiePolicy:
        """The tie policy of resolved options."""
        return TiePolicy(self.tie_policy if self.tie_policy is not None else TiePolicy.half_credit)

    @property
    def gate(self) -> float:
        """The gate of resolved options."""
        return DEFAULT_MIN_CONSISTENCY if self.min_consistency is None else self.min_consistency

    def settings(self, engine: str) -> dict[str, Any]:
        """The settings a report names in its provenance (of resolved options)."""
        return report_settings(judge=self.judge, a=self.a, b=self.b, policy=self.policy,
                               min_consistency=self.gate, confidence=self.confidence, segment=self.segment,
                               rank_rounds=self.rank_rounds, rank_seed=self.rank_seed, rank_model=self.rank_model,
                               engine=engine)


def report_settings(*, judge: str | None, a: str | None, b: str | None, policy: TiePolicy, min_consistency: float,
                    confidence: float, segment: str | None, rank_rounds: int, rank_seed: int, rank_model: Model | str,
                    engine: str) -> dict[str, Any]:
    """The settings a report names in its provenance, whichever engine read the records."""
    return {"judge": judge, "a": a, "b": b, "tie_policy": policy.value, "min_consistency": min_consistency,
            "confidence": confidence, "segment": segment, "rank_bootstrap": rank_rounds, "rank_seed": rank_seed,
            "rank_model": Model(rank_model).value, "engine": engine}


def human_calibrations(analyses: Sequence[JudgeAnalysis], calls_of: Callable[[str, tuple[str, str]], pl.DataFrame],
                       human: pl.DataFrame | None, *, policy: TiePolicy, confidence: float,
                       human_source: str) -> tuple[Calibration, ...]:
    """The human-corrected win rate of each analysis' compared pair (under a policy that scores every pair):
    `calls_of(judge, pair)` gives that judge's records of at least that pair, whichever engine read them."""
    if human is None or policy not in SPLIT_VALUE:
        return ()
    return tuple(calibrate_records(calls_of(x.judge or "", x.pair), human, x.pair[0], x.pair[1], gate=x.gate,
                                   judge=x.judge, tie_policy=policy, confidence=confidence, human_source=human_source)
                 for x in analyses if x.pair is not None)


@dataclass(frozen=True)
class ReportRanking:
    """One judge's ranking of every system in the source (order-cancelled outcomes, item bootstrap)."""

    judge: str | None
    ranking: Ranking
    outcome: str = OutcomeSource.swap.value


@dataclass(frozen=True)
class ReportInputs(Concluded):
    """The analyses (one per judge), per-segment analyses, the review queue and the settings behind them.
    `queue` holds every unsettled pair, or (`queue_counts` given: their number by outcome) only the first of
    them; `left_out` says which sections a report read by the streaming engine leaves out, and why."""

    source: ReportSource | StreamedSource
    analyses: tuple[JudgeAnalysis, ...]
    queue: pl.DataFrame
    settings: dict[str, Any]
    segmented: SegmentedAnalysis | None = None
    rankings: tuple[ReportRanking, ...] = ()
    lengths: tuple[LengthProbe, ...] = ()
    panel: PanelResult | None = None
    calibrations: tuple[Calibration, ...] = ()  # the human-corrected win rates, when people's labels are given
    generated_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    queue_counts: dict[str, int] | None = None
    left_out: tuple[str, ...] = ()

    @property
    def queue_by_outcome(self) -> dict[str, int]:
        """The unsettled pairs by outcome (flip_first, flip_second, half_tie_first, half_tie_second)."""
        if self.queue_counts is not None:
            return dict(self.queue_counts)
        counts = self.queue.get_column("outcome").value_counts()
        return {str(row["outcome"]): int(row["count"]) for row in counts.to_dicts()}

    @property
    def queue_total(self) -> int:
        return sum(self.queue_counts.values()) if self.queue_counts is not None else self.queue.height

    @property
    def segment_field(self) -> str | None:
        return None if self.segmented is None else self.segmented.by

    def segments_for(self, analysis: JudgeAnalysis) -> list[SegmentRow]:
        """(value, analysis) of each segment in which this judge has pairs, in value order."""
        if self.segmented is None:
            return []
        return [(s.value, x) for s in self.segmented.segments for x in s.analyses if x.judge == analysis.judge]

    def ranking_for(self, analysis: JudgeAnalysis) -> ReportRanking | None:
        return next((r for r in self.rankings if r.judge == analysis.judge), None)

    def calibration_for(self, analysis: JudgeAnalysis) -> Calibration | None:
        return next((c for c in self.calibrations if c.judge == analysis.judge), None)

    def length_for(self, analysis: JudgeAnalysis) -> LengthProbe | None:
        return next((p for p in self.lengths if p.judge == analysis.judge), None)

    def ending(self) -> Ending:
        """Failed (exit 1 at the CLI, after the report is written), one line per judge below its gate."""
        return gates_ending((x.judge, x.gate) for x in self.analyses)

    @property
    def policy_mismatch(self) -> str | None:
        """A sentence when the run was registered with a different tie policy than this report uses."""
        config = self.source.provenance.get("config")
        registered = config.get("tie_policy") if isinstance(config, dict) else None
        used = self.settings.get("tie_policy")
        if registered and used and registered != used:
            return (f"this report uses the {used} tie policy, but the run was registered with {registered}: "
                    "its headline differs from the one fixed before the run")
        return None


class ReportCounts(Protocol):
    """What a report's sections are computed from, whichever engine counted the records: the only difference
    between a report of records read whole and one of the streaming engine's reduction is who answers these."""

    @property
    def engine(self) -> str: ...  # "memory" or "streaming", as the report's settings name it

    @property
    def source(self) -> ReportSource | StreamedSource: ...

    def analyses(self, options: ReportOptions) -> tuple[list[JudgeAnalysis], SegmentedAnalysis | None]:
        """Each judge's analysis and, with `options.segment`, the per-segment analyses."""
        ...

    def judges(self, judge: str | None) -> list[str]:
        """The judges the report covers (only `judge` when given)."""
        ...

    def comparisons(self, judge: str) -> Comparisons:
        """The judge's order-cancelled comparisons, grouped by item (InputError: no pair complete)."""
        ...

    def queue(self, judge: str | None, a: str | None, b: str | None) -> tuple[pl.DataFrame, dict[str, int] | None]:
        """The unsettled pairs (`review.queue.QUEUE_FIELDS`), and their number by outcome when the rows are only
        the first of them (None: the rows are all of them)."""
        ...

    def calls(self, judge: str, pair: tuple[str, str]) -> pl.DataFrame:
        """The judge's records of at least this pair (the human-corrected win rate reads them)."""
        ...

    def lengths(self, analyses: Sequence[JudgeAnalysis], judges: list[str],
                options: ReportOptions) -> tuple[LengthProbe, ...]:
        """The length probe of each judge whose answer lengths are known."""
        ...

    def panel(self, judges: list[str], options: ReportOptions) -> PanelResult | None:
        """The panel of several judges over the same pairs."""
        ...

    def left_out(self, judges: list[str]) -> tuple[str, ...]:
        """The sentences saying which sections these counts cannot give, and what computes them."""
        ...


def report_of_counts(counts: ReportCounts, options: ReportOptions, *, human: pl.DataFrame | None = None,
                     human_source: str = "human records") -> ReportInputs:
    """Everything a report shows, from either engine's counts under resolved `options` (`ReportOptions.resolved`):
    the analyses and segments, a ranking for each judge that passed its gate and compared more than two systems
    (`options.rank_rounds` bootstrap rounds; a judge below its gate gets none, as it gets no win rate), the
    review queue, the length probes, the panel and the human-corrected win rates (`human`: people's records)."""
    analyses, segmented = counts.analyses(options)
    judges = counts.judges(options.judge)
    passed = {x.judge: x.gate.passed for x in analyses}
    rankings = tuple(r for name in judges if passed.get(name or None, False)
                     if (r := report_ranking(counts, name, options)) is not None)
    queue, queue_counts = counts.queue(options.judge, options.a, options.b)
    lengths = counts.lengths(analyses, judges, options)
    calibrations = human_calibrations(analyses, counts.calls, human, policy=options.policy,
                                      confidence=options.confidence, human_source=human_source)
    panel = counts.panel(judges, options)
    return ReportInputs(counts.source, tuple(analyses), queue, options.settings(counts.engine), segmented, rankings,
                        lengths, panel, calibrations, queue_counts=queue_counts, left_out=counts.left_out(judges))


def report_ranking(counts: ReportCounts, judge: str, options: ReportOptions) -> ReportRanking | None:
    """The judge's ranking when its complete pairs compare more than two systems (None otherwise). One judge's
    comparisons are held at a time: they go as soon as its ranking is fitted."""
    try:
        data = counts.comparisons(judge)
    except InputError:  # no pair complete in both orders: nothing to rank
        return None
    if len(data.systems) <= 2:
        return None
    return ReportRanking(judge or None, fit_ranking(data, options.rank_model, rounds=options.rank_rounds,
                                                    seed=options.rank_seed, confidence=options.confidence))
