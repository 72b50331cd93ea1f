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
from swapjudge.segments import Segment, by_segment


@dataclass(frozen=True)
class ReportInputs:
    """The analyses (one per judge), per-segment analyses, the review queue and the settings behind them."""

    source: ReportSource
    analyses: tuple[JudgeAnalysis, ...]
    queue: pl.DataFrame
    settings: dict[str, Any]
    segment_field: str | None = None
    segments: tuple[Segment, ...] = ()
    generated_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def segments_for(self, analysis: JudgeAnalysis) -> list[Segment]:
        return [s for s in self.segments if s.analysis.judge == analysis.judge]

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


def prepare_report(source: ReportSource, *, judge: str | None = None, a: str | None = None, b: str | None = None,
                   tie_policy: TiePolicy | str = TiePolicy.half_credit,
                   min_consistency: float = DEFAULT_MIN_CONSISTENCY, confidence: float = 0.95,
                   segment: str | None = None) -> ReportInputs:
    """Run the core analysis (and per-segment analyses when `segment` names a field) and collect the pairs
    that flipped or half-tied."""
    policy = TiePolicy(tie_policy)
    analyses = analyze(source.records, judge=judge, a=a, b=b, tie_policy=policy, min_consistency=min_consistency,
                       confidence=confidence)
    segments: list[Segment] = []
    if segment is not None:
        segments = by_segment(source.records, segment, judge=judge, a=a, b=b, tie_policy=policy,
                              min_consistency=min_consistency, confidence=confidence)
    settings = {"judge": judge, "a": a, "b": b, "tie_policy": policy.value, "min_consistency": min_consistency,
                "confidence": confidence, "segment": segment}
    queue = review_queue(source.frame, judge=judge, a=a, b=b)
    return ReportInputs(source, tuple(analyses), queue, settings, segment, tuple(segments))
