"""Adaptive swapping. Offline: on a run where every pair has both orders and the judge's verdict probabilities,
what would "make the swapped call only when the first verdict's confidence is below t" have saved, how many
flips would it have missed (flips in pairs left unswapped, which an adaptive run never sees), and what
swap-consistency would it have reported (measured on the swapped pairs only, as an adaptive run does)?
And the analysis of an adaptive run, from its store or from its exported records (`adaptive_view`).

Light on purpose (no runner, no HTTP): the analysis of exported records imports it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from swapjudge.core.adaptive import verdict_confidence
from swapjudge.core.stats import Proportion, wilson
from swapjudge.defaults import ADAPTIVE_THRESHOLDS

if TYPE_CHECKING:
    pass

THRESHOLDS: tuple[float, ...] = ADAPTIVE_THRESHOLDS


@dataclass(frozen=True)
class ThresholdOutcome:
    """At one threshold: swapped calls saved, flips missed, and the consistency the run would have reported."""

    threshold: float
    pairs: int
    calls_saved: int
    flips: int
    flips_missed: int
    consistency_true: float | None
    consistency_reported: float | None  # what an adaptive run reports: over the swapped pairs only (None: none)

    @property
    def swapped(self) -> int:
        return self.pairs - self.calls_saved

    @property
    def saved_share(self) -> float | None:
        """Calls saved as a share of the 2 x pairs calls of always swapping."""
        return None if self.pairs == 0 else self.calls_saved / (2 * self.pairs)

    @property
    def missed_share(self) -> float | None:
        return None if self.flips == 0 else self.flips_missed / self.flips

    def to_dict(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "pairs": self.pairs, "calls_saved": self.calls_saved,
                "saved_share": self.saved_share, "flips": self.flips, "flips_missed": self.flips_missed,
                "missed_share": self.missed_share, "swapped_pairs": self.swapped,
                "consistency_true": self.consistency_true,
                "consistency_reported": self.consistency_reported}


@dataclass(frozen=True)
class AdaptiveAnalysis:
    pairs: int  # complete two-order pairs
    without_confidence: int  # of those, pairs whose first call carries no usable probability (always swapped)
    consistency: Proportion
    thresholds: tuple[ThresholdOutcome, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"pairs": self.pairs, "without_confidence": self.without_confidence,
                "consistency": self.consistency.to_dict(), "thresholds": [t.to_dict() for t in self.thresholds]}


def _named(call: Mapping[str, Any]) -> str:
    verdict = call["verdict"]
    return "tie" if verdict == "tie" else str(call["first"] if verdict == "first" else call["second"])


def adaptive_offline(calls: Iterable[Mapping[str, Any]], thresholds: Sequence[float] = THRESHOLDS,
                     confidence: float = 0.95) -> AdaptiveAnalysis:
    """`calls`: stored calls (round, item, first, second, order_index, verdict, probabilities, source). Pairs
    with both orders really called and both verdicts usable are counted; inferred or errored calls are not."""
    by_pair: dict[tuple[Any, ...], dict[int, Mapping[str, Any]]] = {}
    for c in calls:
        if c.get("source") == "inferred" or c.get("error") or c["first"] == c["second"]:
            continue
        key = (c["round"], str(c["item"]), frozenset((c["first"], c["second"])))
        by_pair.setdefault(key, {})[int(c["order_index"])] = c
    rows: list[tuple[float | None, bool]] = []  # (first call's confidence, consistent)
    for orders in by_pair.values():
        if set(orders) != {0, 1} or orders[0]["verdict"] is None or orders[1]["verdict"] is None:
            continue
        head = orders[0]
        rows.append((verdict_confidence(head["verdict"], head.get("probabilities")),
                     _named(head) == _named(orders[1])))
    n = len(rows)
    consistent = sum(ok for _, ok in rows)
    flips = n - consistent
    out = []
    for t in thresholds:
        skipped = [(conf, ok) for conf, ok in rows if conf is not None and conf >= t]
        missed = sum(not ok for _, ok in skipped)
        swapped = n - len(skipped)
        swapped_ok = consistent - sum(ok for _, ok in skipped)
        out.append(ThresholdOutcome(
            threshold=t, pairs=n, calls_saved=len(skipped), flips=flips, flips_missed=missed,
            consistency_true=None if n == 0 else consistent / n,
            consistency_reported=None if swapped == 0 else swapped_ok / swapped))
    return AdaptiveAnalysis(n, sum(conf is None for conf, _ in rows), wilson(consistent, n, confidence), tuple(out))
