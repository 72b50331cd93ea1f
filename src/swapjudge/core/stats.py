"""Interval estimates and tests, thin wrappers over scipy so every module computes them the same way.

They use scipy.special's distribution functions, not scipy.stats: importing scipy.stats costs about 0.4 s more
on every command start, and these few functions are its one-line cases (tests/test_stats.py holds them equal to
scipy.stats.binomtest and scipy.stats.t).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special


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


def normal_quantile(confidence: float) -> float:
    """z of a two-sided interval at `confidence` (1.96 at 0.95)."""
    return float(special.ndtri(0.5 + confidence / 2))


def wilson(k: int, n: int, confidence: float = 0.95) -> Proportion:
    """Proportion with its Wilson score interval, without continuity correction (Newcombe 1998, method 3, as
    scipy.stats.binomtest(k, n).proportion_ci(method="wilson") computes it); empty when n == 0."""
    if n == 0:
        return Proportion(k, n, None, None, None)
    k, n = int(k), int(n)
    z, p = normal_quantile(confidence), k / n
    denom = 2 * (n + z**2)
    center = (2 * n * p + z**2) / denom
    delta = z / denom * math.sqrt(4 * n * p * (1 - p) + z**2)
    return Proportion(k, n, p, 0.0 if k == 0 else center - delta, 1.0 if k == n else center + delta)


def binomial_p(k: int, n: int) -> float | None:
    """Exact two-sided binomial test of k of n against 1/2; None when n == 0. With p = 1/2 the distribution is
    symmetric, so the outcomes at most as likely as k are the two tails beyond min(k, n - k)."""
    if n == 0:
        return None
    k, n = int(k), int(n)
    if 2 * k == n:
        return 1.0
    return min(1.0, 2 * float(special.bdtr(min(k, n - k), n, 0.5)))


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
    half = float(special.stdtrit(n - 1, 0.5 + confidence / 2)) * se
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


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of several p-values tested at once (None: no test, left out of the family);
    each adjusted p is the smallest family-wise level at which its test rejects."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m, running = len(tested), 0.0
    out: list[float | None] = [None] * len(p_values)
    for rank, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (m - rank) * p))  # step-down: never below an earlier adjusted p
        out[i] = running
    return out
