"""Per-segment analysis: the records split by one field (e.g. `task`), each part run through the core analysis.

No statistic is computed here: each segment is a filtered frame handed to `analysis.analyze`, so a segment's
consistency, flip direction and win rate are exactly what `swapjudge analyze` would print for that subset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from swapjudge.analysis import JudgeAnalysis, analyze
from swapjudge.errors import SwapjudgeError
from swapjudge.policy import DEFAULT_MIN_CONSISTENCY, TiePolicy
from swapjudge.records import CORE_SCHEMA, RecordSet


@dataclass(frozen=True)
class Segment:
    """One value of the segment field and the analysis of the records carrying it (for one judge)."""

    field: str
    value: str
    analysis: JudgeAnalysis

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "value": self.value, "analysis": self.analysis.to_dict()}


def segment_fields(frame: pl.DataFrame) -> list[str]:
    """Extra columns that could split the records: text columns with between 2 and 50 distinct values."""
    out = []
    for name in frame.columns:
        if name in CORE_SCHEMA or frame.schema[name] != pl.String:
            continue
        if 2 <= frame.get_column(name).n_unique() <= 50:
            out.append(name)
    return out


def by_segment(records: RecordSet | pl.DataFrame, field: str, *, judge: str | None = None, a: str | None = None,
               b: str | None = None, tie_policy: TiePolicy | str = TiePolicy.half_credit,
               min_consistency: float = DEFAULT_MIN_CONSISTENCY, confidence: float = 0.95) -> list[Segment]:
    """Analyse each value of `field` separately (one Segment per judge and value, sorted by judge then value).

    Records without a value for the field form no segment. With `a`/`b` given, a segment in which a judge saw
    only one of the two systems is left out for that judge (there is nothing to compare).
    """
    frame = records.frame if isinstance(records, RecordSet) else records
    if field not in frame.columns:
        extras = [c for c in frame.columns if c not in CORE_SCHEMA]
        raise SwapjudgeError(f"no field {field!r} in the records to segment by; extra fields: "
                             + (", ".join(extras) if extras else "none"))
    column = pl.col(field).cast(pl.String)
    values = sorted(v for v in frame.select(column.unique()).to_series().to_list() if v not in (None, ""))
    judges = sorted(frame.get_column("judge").unique().to_list()) if judge is None else [judge]
    out: list[Segment] = []
    for name in judges:
        calls = frame.filter(pl.col("judge") == name)
        if calls.height == 0:
            raise SwapjudgeError(f"no records for judge {name!r}")
        for value in values:
            part = calls.filter(column == value)
            seen = set(part.get_column("first").to_list()) | set(part.get_column("second").to_list())
            if part.filter(pl.col("first") != pl.col("second")).height == 0:
                continue  # only identical-answer probe calls: no pair to analyse
            if (a is not None and a not in seen) or (b is not None and b not in seen):
                continue
            result = analyze(part, judge=name, a=a, b=b, tie_policy=tie_policy, min_consistency=min_consistency,
                             confidence=confidence)[0]
            out.append(Segment(field, value, result))
    return out
