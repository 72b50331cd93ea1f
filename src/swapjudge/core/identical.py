"""Identical-answer probe: the same text in both slots. Any named winner is a judge with no real difference to
see choosing anyway, and the slot it names shows which way it leans."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from swapjudge.core.stats import binomial_p, wilson
from swapjudge.reading.pairs import FIRST, MISSING, SECOND, TIE


@dataclass(frozen=True)
class IdenticalProbe:
    first: int
    second: int
    tie: int
    unparsed: int
    confidence: float
    # the judge answered tie in none of its calls (forced choice): every verdict is decided by construction,
    # so the decided rate is 100% with no interval to give
    forced_choice: bool = False

    def to_dict(self) -> dict[str, Any]:
        decided = wilson(self.first + self.second, self.first + self.second + self.tie, self.confidence)
        if self.forced_choice:
            decided = dataclasses.replace(decided, low=None, high=None)
        share = wilson(self.first, self.first + self.second, self.confidence)
        return {
            "first": self.first, "second": self.second, "tie": self.tie, "unparsed": self.unparsed,
            "decided_rate": decided.rate, "decided_low": decided.low, "decided_high": decided.high,
            "first_share": share.rate, "first_share_low": share.low, "first_share_high": share.high,
            "first_share_p_value": binomial_p(self.first, self.first + self.second),
            "decided_by_construction": self.forced_choice,
        }


def identical_probe(codes: np.ndarray, confidence: float = 0.95, *,
                    forced_choice: bool = False) -> IdenticalProbe | None:
    """Summarise verdict codes of identical-answer calls; None when there are none. `forced_choice`: the judge
    gave no tie anywhere, so its decided rate is 100% by construction."""
    if codes.size == 0:
        return None
    return IdenticalProbe(int(np.sum(codes == FIRST)), int(np.sum(codes == SECOND)), int(np.sum(codes == TIE)),
                          int(np.sum(codes == MISSING)), confidence, forced_choice)


@dataclass(frozen=True)
class IdenticalRun:
    judge: str
    planned: int
    failed: int  # calls with no reply after retries (their verdict is null)
    records: tuple[dict[str, Any], ...]
    probe: IdenticalProbe | None  # None when no call gave a verdict

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "calls": self.planned, "failed": self.failed,
                "identical": self.probe.to_dict() if self.probe else None}
