"""Any analysis broken down by a record field (task category, question type, ...).

Position preference concentrates on close, hard items, so one overall consistency can hide a segment where the
judge is a coin toss. Each segment is the records whose field has one value, analysed by `core.analysis.analyze_records`
exactly as a whole file is: consistency and win rate per segment with their intervals, the gate per segment.
The field must be the same on both calls of a pair (a pair belongs to one segment); a field that differs
between the two calls (latency, raw text) is refused with the pair it differs on.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import polars as pl

from swapjudge.core.analysis import JudgeAnalysis, analyze_records, with_holm
from swapjudge.core.policy import DEFAULT_MIN_CONSISTENCY, TiePolicy
from swapjudge.errors import SwapjudgeError
from swapjudge.outcome import Concluded, Ending, gates_ending
from swapjudge.reading.records import RecordSet

if TYPE_CHECKING:
    from swapjudge.reading.streaming import StreamingSource

MISSING_VALUE = "(missing)"
# below this many complete pairs a segment's consistency interval is too wide for its gate to mean much
MIN_SEGMENT_PAIRS = 30
# fields that identify a call rather than describe the pair: segmenting by them is meaningless or circular
NOT_SEGMENTS = ("first", "second", "verdict")


@dataclass(frozen=True)
class Segment:
    """One value of the segment field and the analysis of its records, one result per judge."""

    value: str
    analyses: tuple[JudgeAnalysis, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value,
                "analyses": [{**a.to_dict(), "too_small_for_gate": too_small(a)} for a in self.analyses]}


def too_small(analysis: JudgeAnalysis) -> bool:
    """A segment with fewer than MIN_SEGMENT_PAIRS complete pairs: its gate, passed or failed, is not to be
    trusted."""
    return analysis.outcomes.complete < MIN_SEGMENT_PAIRS


def small_segment_note(analysis: JudgeAnalysis) -> str:
    return (f"only {analysis.outcomes.complete} complete pair(s), fewer than {MIN_SEGMENT_PAIRS}: too few for the "
            "gate to be trusted either way")


@dataclass(frozen=True)
class SegmentedAnalysis(Concluded):
    """The whole file's analysis (`overall`) and one `Segment` per value of `by`, in value order."""

    by: str
    overall: tuple[JudgeAnalysis, ...]
    segments: tuple[Segment, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"by": self.by, "overall": [a.to_dict() for a in self.overall],
                "segments": [s.to_dict() for s in self.segments]}

    def ending(self) -> Ending:
        """The whole file's gate decides (a segment's is shown, not enforced): failed when a judge fails."""
        return gates_ending((a.judge, a.gate) for a in self.overall)


def segment_values(frame: pl.DataFrame, by: str) -> pl.Series:
    """The segment value of every record as a string (`(missing)` for null), checked to be constant per pair."""
    refuse_field(frame.columns, by)
    values = frame.get_column(by).cast(pl.String).fill_null(MISSING_VALUE).alias("_segment")
    keyed = frame.select("judge", "round", "item", "first", "second").with_columns(
        pl.min_horizontal("first", "second").alias("_x"), pl.max_horizontal("first", "second").alias("_y"), values)
    spread = (keyed.group_by("judge", "round", "item", "_x", "_y")
              .agg(pl.col("_segment").n_unique().alias("_n"), pl.col("_segment").unique().sort().alias("_v"))
              .filter(pl.col("_n") > 1))
    if spread.height:
        row = spread.row(0, named=True)
        raise SwapjudgeError(
            f"field {by!r} differs between the calls of a pair (item {row['item']!r}, {row['_x']!r} vs "
            f"{row['_y']!r}: {', '.join(repr(v) for v in row['_v'])}); segments need a field fixed per pair")
    return values


def refuse_field(fields: list[str], by: str) -> None:
    """The error for a segment field the records lack, or one that names a call rather than its pair."""
    if by not in fields:
        extras = [c for c in fields if c not in NOT_SEGMENTS]
        raise SwapjudgeError(f"no field {by!r} in the records; fields: " + ", ".join(extras))
    if by in NOT_SEGMENTS:
        raise SwapjudgeError(f"cannot segment by {by!r}: it differs between the two calls of a pair")


def _sort_key(value: str) -> tuple[int, float, str]:
    """Numbers in numeric order, then text; the missing value last."""
    if value == MISSING_VALUE:
        return (2, 0.0, value)
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


def segment_analyses(records: RecordSet | pl.DataFrame, by: str, *, judge: str | None = None,
                     a: str | None = None, b: str | None = None,
                     tie_policy: TiePolicy | str = TiePolicy.half_credit,
                     min_consistency: float = DEFAULT_MIN_CONSISTENCY,
                     confidence: float = 0.95) -> SegmentedAnalysis:
    """Analyse the whole file and each segment of it (records with one value of the field `by`)."""
    frame = records.frame if isinstance(records, RecordSet) else records
    overall = analyze_records(records, judge=judge, a=a, b=b, tie_policy=tie_policy, min_consistency=min_consistency,
                              confidence=confidence)
    values = segment_values(frame, by)
    tagged = frame.with_columns(values)
    if judge is not None:
        tagged = tagged.filter(pl.col("judge") == judge)
    # the compared pair is settled on the whole file, so every segment compares the same two systems
    chosen = {x.judge or "": x.pair for x in overall}
    segments = []
    for value in sorted(tagged.get_column("_segment").unique().to_list(), key=_sort_key):
        part = tagged.filter(pl.col("_segment") == value).drop("_segment")
        results: list[JudgeAnalysis] = []
        for name in sorted(part.get_column("judge").unique().to_list()):
            pair = chosen.get(name)
            calls = part.filter(pl.col("judge") == name)
            seen = set(calls.get_column("first").to_list()) | set(calls.get_column("second").to_list())
            if pair is not None:
                calls = calls.filter(pl.col("first").is_in(pair) & pl.col("second").is_in(pair))
                if calls.height == 0:
                    continue
            pa, pb = pair if pair is not None and set(pair) <= seen else (None, None)
            found = analyze_records(calls, judge=name, a=pa, b=pb, tie_policy=tie_policy,
                                    min_consistency=min_consistency, confidence=confidence)
            if pair is None:
                # a segment that happens to hold two systems must not get a win rate the whole file has not
                found = [replace(x, pair=None, cross_table=None, ungated_win_rate=None, decision=None) for x in found]
            results += found
        if results:
            segments.append(Segment(value, tuple(results)))
    return SegmentedAnalysis(by, tuple(overall), _holm_segments(segments))


def _holm_segments(segments: list[Segment]) -> tuple[Segment, ...]:
    """Every segment's flip-direction test is one of many run at once: Holm-adjust them as one family, and note
    the segments too small for the gate."""
    flat = with_holm([a for s in segments for a in s.analyses])
    out, at = [], 0
    for s in segments:
        found = flat[at:at + len(s.analyses)]
        at += len(s.analyses)
        found = [replace(a, notes=(*a.notes, small_segment_note(a))) if too_small(a) else a for a in found]
        out.append(Segment(s.value, tuple(found)))
    return tuple(out)


def segment_analyses_of_source(source: StreamingSource, by: str, *, judge: str | None = None,
                               a: str | None = None, b: str | None = None,
                               tie_policy: TiePolicy | str = TiePolicy.half_credit,
                               min_consistency: float = DEFAULT_MIN_CONSISTENCY,
                               confidence: float = 0.95) -> SegmentedAnalysis:
    """`segment_analyses` from a records file reduced to counts (`reading.streaming`, opened with `segment=by` and
    `split=False`): the whole file analysed by `core.counted`, then each segment as the rows path analyses it
    (the compared pair settled on the whole file, the records between its two systems, the tie policy as given,
    the segment's own adaptive threshold)."""
    from swapjudge.core.analysis import adaptive_view_of_counts, analysis_of_counts, analyze_source, choose_pair
    from swapjudge.core.counted import unswapped_of
    from swapjudge.reading.reduce import one_value

    overall = analyze_source(source, judge=judge, a=a, b=b, tie_policy=tie_policy, min_consistency=min_consistency,
                             confidence=confidence)
    policy = TiePolicy(tie_policy)
    chosen = {x.judge or "": x.pair for x in overall}
    segments = []
    for value in sorted(source.segment_values(judge), key=_sort_key):
        results: list[JudgeAnalysis] = []
        for name, keys in sorted(source.segment_pairs(value, judge).items()):
            pair = chosen.get(name)
            seen = {s for key in keys for s in key}
            if pair is not None:
                lo, hi = sorted(pair)
                keys = {k for k in keys if k == (lo, hi) or (k[0] == k[1] and k[0] in pair)}
                if not keys:
                    continue
            systems = sorted({s for x, y in keys if x != y for s in (x, y)})
            pa, pb = pair if pair is not None and set(pair) <= seen else (None, None)
            compared = choose_pair(systems, pa, pb)
            counts = source.counts(name, compared or pair, segment=value)
            found = analysis_of_counts(name, systems, counts, compared, policy, min_consistency, confidence)
            threshold = one_value(source.thresholds(name, segment=value, pair=pair))
            if threshold is not None:
                found = adaptive_view_of_counts(found, unswapped_of(counts, compared), threshold,
                                                {"tie_policy": policy, "confidence": confidence})
            if pair is None:
                found = replace(found, pair=None, cross_table=None, ungated_win_rate=None, decision=None)
            results.append(found)
        if results:
            segments.append(Segment(value, tuple(results)))
    return SegmentedAnalysis(by, tuple(overall), _holm_segments(segments))
