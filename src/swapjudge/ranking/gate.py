"""The consistency gate of a ranking: the same gate as `analyze`, on every complete pair of the ranked judge.

A ranking is win rates under another name, so a judge that cannot tell answers apart in both orders gets none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from swapjudge.core.policy import Gate, gate
from swapjudge.core.swap import Consistency, consistency_of_pairs, consistency_of_tally
from swapjudge.outcome import Conclusion, Ending
from swapjudge.reading.pairs import build_pairs
from swapjudge.reading.reduce import PairCounts


@dataclass(frozen=True)
class RankGate:
    """The judge's swap-consistency over all its complete pairs (every system) and the gate applied to it.

    `enforced` is False when the minimum is 0: the ranking is fitted whatever the consistency (or its absence)."""

    consistency: Consistency | None
    gate: Gate

    @property
    def enforced(self) -> bool:
        return self.gate.min_self_consistency > 0

    @property
    def blocks(self) -> bool:
        """True when no ranking may be reported."""
        return self.enforced and not self.gate.passed

    def ending(self, judge: str | None) -> Ending:
        """Failed when the gate forbids a ranking (nothing is fitted; exit 1 at the CLI); ok otherwise."""
        if not self.blocks:
            return Ending()
        reason = (self.gate.reason or "").removesuffix("; no win rate reported")
        return Ending(Conclusion.failed, (f"gate: judge {judge or '(unnamed)'}: {reason}; no ranking reported "
                                       "({min_consistency} 0 ranks anyway)",), ("min_consistency",))

    def sentence(self) -> str:
        """The line printed above the table."""
        c = self.consistency
        if c is None or c.rate is None:
            measured = "swap-consistency not measured (no pair has verdicts in both orders)"
        else:
            level = f"{round(c.confidence * 100)}%"
            measured = (f"swap-consistency {c.rate:.1%} ({level} interval {c.low:.1%}–{c.high:.1%}, "
                        f"{c.pairs:,} complete pairs)")
        if not self.enforced:
            return f"{measured}; gate off (--min-consistency 0)"
        return f"{measured}; gate {self.gate.min_self_consistency:.0%}: {'passed' if self.gate.passed else 'FAILED'}"

    def to_dict(self) -> dict[str, Any]:
        c = self.consistency
        return {
            "consistency": (c.to_dict() if c is not None else
                            {"rate": None, "low": None, "high": None, "band": None}),
            "gate": {**self.gate.to_dict(), "enforced": self.enforced},
        }


def rank_gate(frame: pl.DataFrame, min_consistency: float, confidence: float = 0.95) -> RankGate:
    """The gate over one judge's records (probe calls and incomplete pairs left out, as `analyze` does)."""
    pairs = build_pairs(frame)
    # pairs judged on the same item (other systems, other rounds) count as one cluster, as in `analyze`
    measured = consistency_of_pairs(pairs.outcome, pairs.frame.get_column("item").cast(pl.String).to_numpy(),
                                    confidence)
    return _gated(measured if measured.pairs else None, min_consistency)


def rank_gate_of_counts(counts: PairCounts, min_consistency: float, confidence: float = 0.95) -> RankGate:
    """`rank_gate` from one judge's pairs reduced to counts (`reading.reduce.PairCounts` of all its pairs): the same
    consistency, clustered by item through the kinds of items, as `core.counted` measures it for `analyze`."""
    from swapjudge.core.counted import COMPLETE, CONSISTENT, kind_tally, outcomes_of

    outcomes = outcomes_of(counts.type_counts)
    if not outcomes.complete:
        return _gated(None, min_consistency)
    flags = kind_tally(counts.kinds, COMPLETE, 2 * (CONSISTENT & COMPLETE).astype(np.int64))
    return _gated(consistency_of_tally(outcomes.consistent, outcomes.complete, flags, confidence), min_consistency)


def _gated(cons: Consistency | None, min_consistency: float) -> RankGate:
    result = gate(cons.rate if cons is not None else None, min_consistency,
                  cons.low if cons is not None else None, cons.high if cons is not None else None)
    if min_consistency <= 0 and not result.passed:
        result = Gate(min_consistency, True, None)  # no minimum: nothing to fail
    return RankGate(cons, result)
