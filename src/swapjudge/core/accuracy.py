"""Accuracy against human or gold labels: is the judge right in each order, and once order is controlled?

A label names the better of a pair's two answers, or says "tie". A verdict is right when it names the labelled
answer, tie for tie. Every accuracy carries the denominator it was computed over (`denominators` in the JSON).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from swapjudge.core.stats import (
    Independence,
    Proportion,
    Tally,
    normal_quantile,
    tally,
    tally_proportion_interval,
    wilson,
)
from swapjudge.reading.pairs import FIRST, MISSING, SECOND, TIE

TIE_LABEL = "tie"


@dataclass(frozen=True)
class Accuracy:
    """Right answers against labels, each share over its own denominator.

    pairs: complete pairs (both orders with a verdict) whose label names one of the two answers or "tie".
    better_first / better_second: over the `decided_pairs` among them (label names an answer): share of calls with
    the labelled-better answer in slot 1 that name it, the same with it in slot 2 (their gap is position bias in
    correctness terms). both: over all `pairs`, right in both calls (a consistent tie on a tie-labelled pair is
    right), which is the accuracy of the order-controlled verdict. consistent: the same among `consistent_pairs`.
    per_call: over every labelled call with a verdict (`calls`), whether or not its pair is complete, so single-order
    data has it too: the share whose verdict names the labelled answer, tie for tie.
    """

    pairs: int
    right_first: int
    right_second: int
    right_both: int
    consistent_pairs: int
    confidence: float
    decided_pairs: int = 0
    tie_pairs: int = 0
    incomplete_pairs: int = 0
    calls: int = 0
    right_calls: int = 0
    per_call_interval: tuple[float | None, float | None] = (None, None)
    per_call_effective_n: float | None = None
    # better_first / better_second / both: their intervals, clustered by item when pairs share one
    pair_intervals: Mapping[str, tuple[float | None, float | None]] = field(default_factory=dict)
    independence: Independence | None = None  # what those pair intervals treat as independent

    def _rate(self, k: int, n: int) -> float | None:
        return wilson(k, n, self.confidence).rate

    @property
    def denominators(self) -> dict[str, int]:
        """The count each accuracy is a share of."""
        return {"better_first": self.decided_pairs, "better_second": self.decided_pairs, "both": self.pairs,
                "consistent": self.consistent_pairs, "per_call": self.calls}

    def to_dict(self) -> dict[str, Any]:
        low, high = self.per_call_interval
        per_call = Proportion(self.right_calls, self.calls, self._rate(self.right_calls, self.calls), low, high)
        out: dict[str, Any] = {
            "pairs": self.pairs,
            "better_first": self._rate(self.right_first, self.decided_pairs),
            "better_second": self._rate(self.right_second, self.decided_pairs),
            "both": self._rate(self.right_both, self.pairs),
            "consistent": self._rate(self.right_both, self.consistent_pairs),
            "consistent_pairs": self.consistent_pairs,
            "decided_pairs": self.decided_pairs,
            "tie_pairs": self.tie_pairs,
            "incomplete_pairs": self.incomplete_pairs,
            "per_call": {"value": per_call.rate, "low": per_call.low, "high": per_call.high,
                         "right": self.right_calls, "calls": self.calls,
                         "effective_n": self.per_call_effective_n, "interval_unit": "item"},
            "denominators": self.denominators,
        }
        out["intervals"] = {name: {"low": low, "high": high} for name, (low, high) in self.pair_intervals.items()}
        out["intervals"]["per_call"] = {"low": per_call.low, "high": per_call.high}
        out.update((self.independence or Independence("pairs", self.pairs, 1.0)).to_dict())
        return out


def clustered_share(right: np.ndarray, cluster: np.ndarray, confidence: float = 0.95) -> tuple[Proportion, float]:
    """Share of True in `right` with a Wilson interval on the effective sample size left once units of the same
    cluster (calls of one item) are allowed to be correlated: n_eff = p(1 - p) / V, V the cluster-robust (CR1)
    variance of the share, capped at n; the number of clusters when every unit agrees. Returns it and n_eff."""
    right = np.asarray(right, dtype=bool)
    if right.size == 0:
        return wilson(0, 0, confidence), 0.0
    counted = tally(right.astype(float), np.asarray(cluster, dtype=object).astype(str))
    assert counted is not None  # 0/1 flags
    return clustered_share_of_tally(counted, confidence)


def clustered_share_of_tally(right: Tally, confidence: float = 0.95) -> tuple[Proportion, float]:
    """`clustered_share` from the tally of the units' flags by cluster, in exact integer arithmetic: with D_g =
    n k_g - k n_g per cluster, V = g / (g - 1) * sum(D_g^2) / n^4."""
    n = right.n
    if n == 0:
        return wilson(0, 0, confidence), 0.0
    groups = right.groups
    k = right.total // 2
    p = k / n
    between = sum(int(c) * (n * (int(s) // 2) - k * int(u)) ** 2
                  for u, s, c in zip(right.units.tolist(), right.doubled.tolist(), right.clusters.tolist(),
                                     strict=True))
    variance = groups / max(groups - 1, 1) * (between / n**4)
    # with no spread to measure (all right or all wrong), count as many independent units as items
    effective = min(float(n), p * (1 - p) / variance) if variance > 0 and 0 < p < 1 else float(min(groups, n))
    z = normal_quantile(confidence)
    centre = (p + z**2 / (2 * effective)) / (1 + z**2 / effective)
    half = z / (1 + z**2 / effective) * math.sqrt(p * (1 - p) / effective + z**2 / (4 * effective**2))
    low, high = (0.0 if k == 0 else centre - half), (1.0 if k == n else centre + half)
    return Proportion(k, n, p, low, high), effective


def _names_label(code: np.ndarray, label_first: np.ndarray, label_second: np.ndarray,
                 label_tie: np.ndarray) -> np.ndarray:
    """Whether a positional verdict names the labelled answer (tie for tie) in its own call's frame."""
    named: np.ndarray = (((code == FIRST) & label_first) | ((code == SECOND) & label_second)
                         | ((code == TIE) & label_tie))
    return named


def label_accuracy(x: np.ndarray, y: np.ndarray, label: np.ndarray, vx: np.ndarray, vy: np.ndarray,
                   consistent: np.ndarray, confidence: float = 0.95, *,
                   item: np.ndarray | None = None) -> Accuracy | None:
    """Accuracy against labels; None when no pair carries a label naming x, y or tie. `item` (one per pair) is
    the unit the per-call interval treats as independent; without it, each pair."""
    label = np.asarray(label, dtype=object)
    better_x, better_y, tie = label == x, label == y, label == TIE_LABEL
    labelled = better_x | better_y | tie
    if not labelled.any():
        return None
    # each call in its own frame: the x-first call shows x in slot 1, the y-first call shows y in slot 1
    right_x_first = _names_label(vx, better_x, better_y, tie)
    right_y_first = _names_label(vy, better_y, better_x, tie)
    complete = (vx != MISSING) & (vy != MISSING)
    usable = labelled & complete
    decided = usable & ~tie
    # the call with the better answer in slot 1 is the x-first call when x is better, else the y-first call
    right_when_first = np.where(better_x, right_x_first, right_y_first)[decided]
    right_when_second = np.where(better_x, right_y_first, right_x_first)[decided]
    calls_x, calls_y = labelled & (vx != MISSING), labelled & (vy != MISSING)
    unit = np.arange(x.size) if item is None else np.asarray(item, dtype=object).astype(str)
    right_both = right_x_first & right_y_first

    def counted(flags: np.ndarray, clusters: np.ndarray) -> Tally:
        found = tally(np.asarray(flags, dtype=float), clusters)
        assert found is not None  # 0/1 flags
        return found

    return accuracy_of_counts(AccuracyCounts(
        pairs=int(usable.sum()), right_first=int(right_when_first.sum()), right_second=int(right_when_second.sum()),
        right_both=int((right_both & usable).sum()), consistent_pairs=int(consistent[usable].sum()),
        decided_pairs=int(decided.sum()), tie_pairs=int((usable & tie).sum()),
        incomplete_pairs=int((labelled & ~complete).sum()), calls=int(calls_x.sum() + calls_y.sum()),
        right_calls=int((right_x_first & calls_x).sum() + (right_y_first & calls_y).sum()),
        # pairs of one item (other systems, other rounds) move together: the pair shares' intervals count items
        better_first=counted(right_when_first, unit[decided]), better_second=counted(right_when_second, unit[decided]),
        both=counted(right_both[usable], unit[usable]),
        per_call=counted(np.concatenate([right_x_first[calls_x], right_y_first[calls_y]]),
                         np.concatenate([unit[calls_x], unit[calls_y]]))), confidence)


@dataclass(frozen=True)
class AccuracyCounts:
    """The counts behind `Accuracy` and the tallies (by item) of its clustered intervals."""

    pairs: int
    right_first: int
    right_second: int
    right_both: int
    consistent_pairs: int
    decided_pairs: int
    tie_pairs: int
    incomplete_pairs: int
    calls: int
    right_calls: int
    better_first: Tally
    better_second: Tally
    both: Tally
    per_call: Tally


def accuracy_of_counts(c: AccuracyCounts, confidence: float = 0.95) -> Accuracy:
    """`Accuracy` from its counts and tallies (`label_accuracy` and `reading.reduce` both end here)."""
    shares = {"better_first": tally_proportion_interval(c.better_first, confidence),
              "better_second": tally_proportion_interval(c.better_second, confidence),
              "both": tally_proportion_interval(c.both, confidence)}
    per_call, effective = clustered_share_of_tally(c.per_call, confidence)
    return Accuracy(
        pairs=c.pairs, right_first=c.right_first, right_second=c.right_second, right_both=c.right_both,
        consistent_pairs=c.consistent_pairs, confidence=confidence, decided_pairs=c.decided_pairs,
        tie_pairs=c.tie_pairs, incomplete_pairs=c.incomplete_pairs, calls=c.calls, right_calls=c.right_calls,
        per_call_interval=(per_call.low, per_call.high),
        per_call_effective_n=effective if per_call.n else None,
        pair_intervals={name: (m.low, m.high) for name, m in shares.items()},
        independence=shares["both"].independence,
    )
