"""Everything a report shows, computed once by the library (renderers only lay it out)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import polars as pl

from swapjudge.analysis import JudgeAnalysis, analyze
from swapjudge.policy import DEFAULT_MIN_CONSISTENCY, TiePolicy
from swapjudge.report.source import ReportSource
from swapjudge.review import review_queue
from swapjudge.segments import SegmentedAnalysis, segment_analyses

# one segment's value and its analysis for one judge
SegmentRow = tuple[str, JudgeAnalysis]


@dataclass(frozen=True)
class ReportInputs:
    """The analyses (one per judge), per-segment analyses, the review queue and the settings behind them."""

    source: ReportSource
    analyses: tuple[JudgeAnalysis, ...]
    queue: pl.DataFrame
    settings: dict[str, Any]
    segmented: SegmentedAnalysis | None = None
    generated_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @property
    def segment_field(self) -> str | None:
        return None if self.segmented is None else self.segmented.by

    def segments_for(self, analysis: JudgeAnalysis) -> list[SegmentRow]:
        """(value, analysis) of each segment in which this judge has pairs, in value order."""
        if self.segmented is None:
            return []
        return [(s.value, x) for s in self.segmented.segments for x in s.analyses if x.judge == analysis.judge]

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


def registered_settings(source: ReportSource) -> dict[str, Any]:
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
                   confidence: float = 0.95, segment: str | None = None) -> ReportInputs:
    """Run the core analysis (and per-segment analyses when `segment` names a field) and collect the pairs
    that flipped or half-tied. The tie policy and gate default to those the run was registered with, else
    half_credit and 0.70."""
    registered = registered_settings(source)
    policy = TiePolicy(tie_policy if tie_policy is not None else registered.get("tie_policy", TiePolicy.half_credit))
    if min_consistency is None:
        min_consistency = registered.get("min_consistency", DEFAULT_MIN_CONSISTENCY)
    segmented = None
    if segment is None:
        analyses = analyze(source.records, judge=judge, a=a, b=b, tie_policy=policy,
                           min_consistency=min_consistency, confidence=confidence)
    else:
        segmented = segment_analyses(source.records, segment, judge=judge, a=a, b=b, tie_policy=policy,
                                     min_consistency=min_consistency, confidence=confidence)
        analyses = list(segmented.overall)
    settings = {"judge": judge, "a": a, "b": b, "tie_policy": policy.value, "min_consistency": min_consistency,
                "confidence": confidence, "segment": segment}
    queue = review_queue(source.frame, judge=judge, a=a, b=b)
    return ReportInputs(source, tuple(analyses), queue, settings, segmented)
