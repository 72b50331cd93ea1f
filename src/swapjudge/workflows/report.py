"""`swapjudge report`: everything a report shows (the renderers in `swapjudge.report` only lay it out): each judge's
analysis, per-segment analyses, the review queue, rankings, the length probe, the panel and the human-corrected
win rates, from a records file or a stored run. Either engine's counts go through the one builder
(`report_inputs.report_of_counts`): those of records read whole here (`MemoryCounts`), those of a file the
streaming engine reduces in `streamed_report` (`StreamedCounts`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from swapjudge.core import arguments
from swapjudge.core.analysis import JudgeAnalysis, analyze_records
from swapjudge.core.choices import ReadEngine
from swapjudge.core.policy import DEFAULT_MIN_CONSISTENCY, Gate, TiePolicy
from swapjudge.defaults import DEFAULT_REPORT_ROUNDS
from swapjudge.errors import InputError
from swapjudge.probes.length import LengthOptions, LengthProbe, LengthUnit, length_probe, length_with_holm, text_length
from swapjudge.probes.panel import PanelResult, panel_of_records
from swapjudge.probes.segments import SegmentedAnalysis, segment_analyses
from swapjudge.ranking.battles import comparisons_from_records
from swapjudge.ranking.bradley_terry import Comparisons, Model
from swapjudge.reading.pairs import Outcome, build_pairs
from swapjudge.reading.records import read_records, select_judges
from swapjudge.reading.sidefiles import texts_from_records
from swapjudge.review.queue import review_queue
from swapjudge.workflows.report_inputs import (
    LENGTH_COLUMNS,
    ReportInputs,
    ReportOptions,
    ReportRanking,
    SegmentRow,
    report_of_counts,
)
from swapjudge.workflows.sources import ReportSource, StreamedSource, is_run_store, report_source

# under --engine auto, a Parquet file of up to this many records is read whole when a section needs the rows
# (about 0.6 GB for a report of 1M records); a larger one, or a JSON Lines file auto streams, is reduced
AUTO_WHOLE_RECORDS = 1_000_000

__all__ = ["LENGTH_COLUMNS", "ReportInputs", "ReportOptions", "ReportRanking", "SegmentRow", "prepare_report",
           "report", "report_of_records"]
# A report is read right after it is written: a few hundred rounds give usable intervals in well under a second
# (31 MT-Bench systems: 0.13 s); `swapjudge rank` (1000 by default) is the place for the final figures.


def report(source: str | Path, *, pairs: str | Path | None = None, run: int | None = None,
           allow_unpaired: bool = False, human: str | Path | None = None, judge: str | None = None,
           a: str | None = None, b: str | None = None, tie_policy: TiePolicy | str | None = None,
           min_consistency: float | None = None, confidence: float = 0.95, segment: str | None = None,
           rank_rounds: int = DEFAULT_REPORT_ROUNDS, rank_seed: int = 0, engine: ReadEngine | str = ReadEngine.auto,
           queue_limit: int | None = None) -> ReportInputs:
    """What `swapjudge report` shows: a records file or a stored run (`run`: its id, default the latest), with
    the answer texts from `pairs` (or the run's own unchanged pairs file), and people's records (`human`) for
    the human-corrected win rate. See `prepare_report` for what is computed.

    `engine`: "auto" reduces Parquet and JSON Lines files of 32 MiB or more to counts by the streaming engine
    when DuckDB is installed, unless the report has a section only records read whole give (the length probe,
    the panel of several judges) and the file is a Parquet file of at most AUTO_WHOLE_RECORDS records:
    then it reads the file whole; "streaming" always reduces a records file, and leaves those sections out,
    saying so in the report; "memory" reads the records whole. A stored run is read whole. `queue_limit`:
    at most this many unsettled pairs are listed when streaming (their count is over all of them; None: 1000)."""
    read = arguments.choice(engine, "engine", ReadEngine)
    options = ReportOptions(judge=judge, a=a, b=b, tie_policy=tie_policy, min_consistency=min_consistency,
                            confidence=confidence, segment=segment, rank_rounds=rank_rounds, rank_seed=rank_seed)
    if read is not ReadEngine.memory and run is None:
        streamed = _streamed(source, read, options, pairs=pairs, allow_unpaired=allow_unpaired, human=human,
                             queue_limit=1000 if queue_limit is None else queue_limit)
        if streamed is not None:
            return streamed
    loaded = report_source(source, pairs=pairs, run=run, allow_unpaired=allow_unpaired)
    people = read_records(human, allow_unpaired=True) if human is not None else None
    return report_of_records(loaded, options, human=people.frame if people is not None else None,
                             human_source=people.source if people is not None else "human records")


def _streamed(source: str | Path, read: ReadEngine, options: ReportOptions, *, pairs: str | Path | None,
              allow_unpaired: bool, human: str | Path | None, queue_limit: int) -> ReportInputs | None:
    """The report from the streaming engine's counts, or None when the records are to be read whole: a stored
    run, a file `workflows.engine.streams` does not stream, or (under auto) one with a section that needs the
    rows."""
    from swapjudge.core.analysis import analyze_source
    from swapjudge.probes.segments import NOT_SEGMENTS, refuse_field
    from swapjudge.reading.streaming import open_source, parquet_rows, record_fields
    from swapjudge.workflows.engine import streams
    from swapjudge.workflows.streamed_report import needs_rows, streamed_report

    if not streams(source, read) or is_run_store(Path(source)):
        return None
    try:
        fields = record_fields(source)
    except InputError:  # a file DuckDB cannot read: the reduction names the line
        fields = []
    # auto reads a file whole for a section that needs the rows only when memory holds it at ease: a larger
    # file is reduced, and the report says what it left out
    rows = parquet_rows(source)
    whole_if_needed = read is ReadEngine.auto and rows is not None and rows <= AUTO_WHOLE_RECORDS
    if whole_if_needed and needs_rows(fields, pairs=pairs is not None):
        return None
    people = read_records(human, allow_unpaired=True) if human is not None else None
    opts = options.resolved({})  # a records file registered nothing
    segment = opts.segment
    usable = segment is not None and segment in fields and segment not in NOT_SEGMENTS
    with open_source(source, allow_unpaired=allow_unpaired, segment=segment if usable else None,
                     split=False) as reduced:
        if whole_if_needed and opts.judge is None and len(reduced.judges()) >= 2:
            return None  # the panel compares the judges pair by pair: read whole
        if segment is not None and not usable:
            # as the rows path: the file's checks, then the whole file's analysis, then the field
            analyze_source(reduced, judge=opts.judge, a=opts.a, b=opts.b, tie_policy=opts.policy,
                           confidence=opts.confidence, min_consistency=opts.gate)
            refuse_field(fields, segment)
        return streamed_report(reduced, fields, opts, pairs=pairs,
                               human=people.frame if people is not None else None,
                               human_source=people.source if people is not None else "human records",
                               queue_limit=queue_limit)


def registered_settings(source: ReportSource | StreamedSource) -> dict[str, Any]:
    """The tie policy and gate a stored run was registered with (empty for a records file)."""
    config = source.provenance.get("config")
    if not isinstance(config, dict):
        return {}
    out: dict[str, Any] = {}
    if config.get("tie_policy") in TiePolicy.__members__:
        out["tie_policy"] = TiePolicy(config["tie_policy"])
    gates = config.get("gates")
    if isinstance(gates, dict) and isinstance(gates.get("min_self_consistency"), int | float):
        out["min_consistency"] = float(gates["min_self_consistency"])
    return out


def prepare_report(source: ReportSource, *, judge: str | None = None, a: str | None = None, b: str | None = None,
                   tie_policy: TiePolicy | str | None = None, min_consistency: float | None = None,
                   confidence: float = 0.95, segment: str | None = None, rank_rounds: int = DEFAULT_REPORT_ROUNDS,
                   rank_seed: int = 0, rank_model: Model | str = Model.rao_kupper,
                   human: pl.DataFrame | None = None, human_source: str = "human records") -> ReportInputs:
    """Run the core analysis (and per-segment analyses when `segment` names a field) and collect the pairs
    that flipped or half-tied. The tie policy and gate default to those the run was registered with, else
    half_credit and 0.70. Where the data allow it, also: each judge's ranking of more than two systems
    (`rank_rounds` bootstrap rounds, 0 for none), the length probe (answer texts or lengths in the records) and
    the panel of several judges over the same pairs."""
    return report_of_records(source, ReportOptions(
        judge=judge, a=a, b=b, tie_policy=tie_policy, min_consistency=min_consistency, confidence=confidence,
        segment=segment, rank_rounds=rank_rounds, rank_seed=rank_seed, rank_model=rank_model),
        human=human, human_source=human_source)


def report_of_records(source: ReportSource, options: ReportOptions, *, human: pl.DataFrame | None = None,
                      human_source: str = "human records") -> ReportInputs:
    """`prepare_report` with its options gathered (`ReportOptions`; the tie policy and gate settled here): the
    records' counts (`MemoryCounts`) through the one builder, `report_of_counts`."""
    opts = options.resolved(registered_settings(source))
    return report_of_counts(MemoryCounts(source), opts, human=human, human_source=human_source)


@dataclass(frozen=True)
class MemoryCounts:
    """A report's counts from records read whole (`ReportCounts`): the analyses reduce them in memory
    (`reading.reduce.FrameSource`), the rest reads the rows, which also give the length probe and the panel."""

    source: ReportSource
    engine: str = "memory"

    def analyses(self, options: ReportOptions) -> tuple[list[JudgeAnalysis], SegmentedAnalysis | None]:
        o = options
        if o.segment is None:
            return analyze_records(self.source.records, judge=o.judge, a=o.a, b=o.b, tie_policy=o.policy,
                                   min_consistency=o.gate, confidence=o.confidence), None
        segmented = segment_analyses(self.source.records, o.segment, judge=o.judge, a=o.a, b=o.b,
                                     tie_policy=o.policy, min_consistency=o.gate, confidence=o.confidence)
        return list(segmented.overall), segmented

    def judges(self, judge: str | None) -> list[str]:
        return select_judges(self.source.frame, judge)

    def comparisons(self, judge: str) -> Comparisons:
        return comparisons_from_records(self.source.frame, judge=judge)

    def queue(self, judge: str | None, a: str | None, b: str | None) -> tuple[pl.DataFrame, dict[str, int] | None]:
        return review_queue(self.source.frame, judge=judge, a=a, b=b), None

    def calls(self, judge: str, pair: tuple[str, str]) -> pl.DataFrame:
        return self.source.frame.filter(pl.col("judge") == judge)

    def lengths(self, analyses: Sequence[JudgeAnalysis], judges: list[str],
                options: ReportOptions) -> tuple[LengthProbe, ...]:
        compared = {x.judge: x.pair for x in analyses}
        gates = {x.judge: x.gate for x in analyses}
        known = answer_lengths(self.source.frame)
        return tuple(length_with_holm([p for name in judges if known
                     if (p := judge_length(self.source, known, name, compared.get(name or None), options.policy,
                                           options.confidence, gates.get(name or None)))]))

    def panel(self, judges: list[str], options: ReportOptions) -> PanelResult | None:
        return judges_panel(self.source, judges, options.confidence, options.gate)

    def left_out(self, judges: list[str]) -> tuple[str, ...]:
        return ()


def answer_lengths(frame: pl.DataFrame, unit: LengthUnit = LengthUnit.chars) -> dict[tuple[str, str], float]:
    """Answer lengths keyed by (item, system): from the records' answer texts, else their length columns."""
    texts = texts_from_records(frame)
    if texts:
        return {key: float(text_length(text, unit)) for key, text in texts.items()}
    if not all(c in frame.columns and frame.schema[c].is_numeric() for c in LENGTH_COLUMNS):
        return {}
    out: dict[tuple[str, str], float] = {}
    for slot, column in zip(("first", "second"), LENGTH_COLUMNS, strict=True):
        for item, system, length in frame.select("item", slot, column).drop_nulls().iter_rows():
            out.setdefault((item, system), float(length))
    return out


def judge_length(source: ReportSource, lengths: dict[tuple[str, str], float], judge: str,
                 pair: tuple[str, str] | None, policy: TiePolicy, confidence: float,
                 gate: Gate | None = None) -> LengthProbe | None:
    """The length probe over the judge's complete pairs whose two answer lengths are known (None: no such pair);
    its win rates pass the judge's own `gate`, the one the analysis applied."""
    table = (source.records.pairs or build_pairs(source.frame)).frame.filter(pl.col("judge") == judge)
    items, x, y = (table.get_column(c).to_list() for c in ("item", "x", "y"))
    lx = np.array([lengths.get((str(i), s), np.nan) for i, s in zip(items, x, strict=True)])
    ly = np.array([lengths.get((str(i), s), np.nan) for i, s in zip(items, y, strict=True)])
    found = ~(np.isnan(lx) | np.isnan(ly))
    complete = table.get_column("outcome").to_numpy() != Outcome.INCOMPLETE
    if not (found & complete).any():  # e.g. single-order imports that carry their texts
        return None
    keep = np.flatnonzero(found)
    options = LengthOptions(length_controlled=pair is not None, tie_policy=policy, confidence=confidence)
    return length_probe(table.get_column("outcome").to_numpy()[keep], lx[keep], ly[keep], options,
                        judge=judge or None, x=np.asarray(x, dtype=object)[keep],
                        y=np.asarray(y, dtype=object)[keep], pair=pair, missing_texts=int((~found).sum()),
                        gate=gate, items=np.asarray(items, dtype=object)[keep])


def judges_panel(source: ReportSource, judges: list[str], confidence: float,
                 min_consistency: float = DEFAULT_MIN_CONSISTENCY) -> PanelResult | None:
    """The panel when two or more judges judged some of the same pairs completely."""
    if len(judges) < 2:
        return None
    result = panel_of_records(source.frame, judges=judges, confidence=confidence, min_consistency=min_consistency)
    return result if result.common_pairs else None
