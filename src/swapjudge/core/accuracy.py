"""Accuracy against human or gold labels: is the judge right in each order, and once order is controlled?"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from swapjudge.core.pairs import FIRST, MISSING, SECOND
from swapjudge.core.stats import wilson


@dataclass(frozen=True)
class Accuracy:
    """Over complete pairs whose label names one of the two identities.

    better_first: share of calls with the labelled-better answer in slot 1 that name it; better_second: the same
    with it in slot 2 (their gap is position bias in correctness terms); both: right in both calls, which is the
    accuracy of the order-controlled verdict; consistent: accuracy among consistent pairs.
    """

    pairs: int
    right_first: int
    right_second: int
    right_both: int
    consistent_pairs: int
    confidence: float

    def _rate(self, k: int, n: int) -> float | None:
        return wilson(k, n, self.confidence).rate

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "pairs": self.pairs,
            "better_first": self._rate(self.right_first, self.pairs),
            "better_second": self._rate(self.right_second, self.pairs),
            "both": self._rate(self.right_both, self.pairs),
            "consistent": self._rate(self.right_both, self.consistent_pairs),
            "consistent_pairs": self.consistent_pairs,
        }
        out["intervals"] = {
            name: {"low": p.low, "high": p.high}
            for name, p in (("better_first", wilson(self.right_first, self.pairs, self.confidence)),
                            ("better_second", wilson(self.right_second, self.pairs, self.confidence)),
                            ("both", wilson(self.right_both, self.pairs, self.confidence)))
        }
        return out


def label_accuracy(x: np.ndarray, y: np.ndarray, label: np.ndarray, vx: np.ndarray, vy: np.ndarray,
                   consistent: np.ndarray, confidence: float = 0.95) -> Accuracy | None:
    """Accuracy against labels; None when no complete pair carries a label naming x or y."""
    better_x = label == x
    usable = (better_x | (label == y)) & (vx != MISSING) & (vy != MISSING)
    if not usable.any():
        return None
    # the call with the better answer in slot 1 is the x-first call when x is better, else the y-first call
    right_when_first = np.where(better_x, vx == FIRST, vy == FIRST)[usable]
    right_when_second = np.where(better_x, vy == SECOND, vx == SECOND)[usable]
    both = right_when_first & right_when_second
    return Accuracy(
        pairs=int(usable.sum()),
        right_first=int(right_when_first.sum()),
        right_second=int(right_when_second.sum()),
        right_both=int(both.sum()),
        consistent_pairs=int(consistent[usable].sum()),
        confidence=confidence,
    )
