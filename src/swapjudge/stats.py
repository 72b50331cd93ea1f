"""Interval estimates and tests, thin wrappers over scipy so every module computes them the same way."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Proportion:
    """k successes of n with a Wilson interval; `rate`, `low`, `high` are None when n is 0."""

    k: int
    n: int
    rate: float | None
    low: float | None
    high: float | None

    def to_dict(self) -> dict[str, float | int | None]:
        return {"k": self.k, "n": self.n, "rate": self.rate, "low": self.low, "high": self.high}


def wilson(k: int, n: int, confidence: float = 0.95) -> Proportion:
    """Proportion with its Wilson score interval (scipy's binomtest); empty when n == 0."""
    if n == 0:
        return Proportion(k, n, None, None, None)
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return Proportion(int(k), int(n), k / n, float(ci.low), float(ci.high))


def binomial_p(k: int, n: int, p: float = 0.5) -> float | None:
    """Exact two-sided binomial test of k of n against p; None when n == 0."""
    if n == 0:
        return None
    return float(stats.binomtest(int(k), int(n), p).pvalue)


def mean_interval(scores: np.ndarray, confidence: float = 0.95) -> tuple[float | None, float | None, float | None]:
    """Mean of per-item scores in [0, 1] with an interval over items.

    0/1 scores get the Wilson interval; scores with halves (split credit) get a Student-t interval on the
    per-item mean, clipped to [0, 1]: each item is one observation, so the interval is never narrowed by
    counting both orders as separate samples.
    """
    n = int(scores.size)
    if n == 0:
        return None, None, None
    mean = float(scores.mean())
    if np.all((scores == 0) | (scores == 1)):
        p = wilson(int(scores.sum()), n, confidence)
        return mean, p.low, p.high
    if n == 1:
        return mean, 0.0, 1.0
    se = float(scores.std(ddof=1)) / math.sqrt(n)
    half = float(stats.t.ppf(0.5 + confidence / 2, df=n - 1)) * se
    return mean, max(0.0, mean - half), min(1.0, mean + half)


def band(consistency: float | None) -> str | None:
    """Sensitivity band of a swap-consistency estimate (DESIGN 3.2)."""
    if consistency is None:
        return None
    if consistency >= 0.90:
        return "low"
    if consistency >= 0.75:
        return "moderate"
    return "high"
