"""Interval estimates and tests, in one place so every module computes them the same way.

The normal quantile and the exact binomial test behind the Wilson interval and the flip-direction test use the
standard library (statistics.NormalDist, exact binomial terms), so `swapjudge calc` starts without numpy or
scipy; the rest use scipy.special's distribution functions, imported when first called (importing scipy.special
costs about 0.4 s on a command's start, scipy.stats more). tests/core/test_stats.py holds them equal to
scipy.stats.binomtest, scipy.stats.norm and scipy.stats.t.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


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
    return NormalDist().inv_cdf(0.5 + confidence / 2)


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
    return min(1.0, 2 * _lower_tail_half(min(k, n - k), n))


# up to this many trials the largest term of the tail is the exact integer ratio comb(n, m) / 2**n (math.comb
# takes milliseconds here, seconds at a million); beyond it, Loader's saddle-point form (relative error ~1e-15)
_EXACT_TERM_LIMIT = 20_000


def _stirling_error(x: float) -> float:
    """log(x!) - log(sqrt(2 pi x) (x / e)**x), by its series for large x (Loader 2000)."""
    if x <= 15:
        return math.lgamma(x + 1) - (x + 0.5) * math.log(x) + x - 0.5 * math.log(2 * math.pi)
    x2 = x * x
    return (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - 1 / (1188 * x2)) / x2) / x2) / x2) / x


def _deviance_term(x: float, mean: float) -> float:
    """x log(x / mean) + mean - x, without cancellation when x is near the mean (Loader 2000)."""
    if abs(x - mean) >= 0.1 * (x + mean):
        return x * math.log(x / mean) + mean - x
    v = (x - mean) / (x + mean)
    total, power, j = (x - mean) * v, 2 * x * v, 1
    while True:
        power *= v * v
        more = total + power / (2 * j + 1)
        if more == total:
            return more
        total, j = more, j + 1


def _binomial_half_term(m: int, n: int) -> float:
    """P(X = m) for X ~ Binomial(n, 1/2)."""
    if n <= _EXACT_TERM_LIMIT:
        return math.comb(n, m) / (1 << n)  # int / int is correctly rounded
    if m == 0:
        return math.ldexp(1.0, -n)
    rest, mean = n - m, n / 2
    log_term = (_stirling_error(n) - _stirling_error(m) - _stirling_error(rest)
                - _deviance_term(m, mean) - _deviance_term(rest, mean))
    return math.exp(log_term) * math.sqrt(n / (2 * math.pi * m * rest))


def _lower_tail_half(m: int, n: int) -> float:
    """P(X <= m) for X ~ Binomial(n, 1/2) and m < n / 2: the largest term, P(X = m), then the smaller ones below
    it by the ratio P(X = i - 1) / P(X = i) = i / (n - i + 1), summed until they no longer change the total."""
    top = _binomial_half_term(m, n)
    total, term = 1.0, 1.0  # in units of the top term, so a top term near underflow loses no precision
    for i in range(m, 0, -1):
        term *= i / (n - i + 1)
        total += term
        if term < total * 1e-17:
            break
    return top * total


# half a consistent win and half a consistent loss, added when measuring the spread of split-credit scores only:
# without them 20 splits of 20 would have no spread and a zero-width interval
SPREAD_PSEUDO = 0.5


@dataclass(frozen=True)
class Independence:
    """What an interval treats as independent: each pair (`units` "pairs") or each item, every pair judged on an
    item moving together (`units` "items"); `clusters` counts the independent units and `design_effect` is how
    much the sharing widens the variance (cluster-robust over independent-pairs variance, never below 1)."""

    units: str
    clusters: int
    design_effect: float

    def to_dict(self) -> dict[str, Any]:
        return {"independent": self.units, "clusters": self.clusters, "design_effect": self.design_effect}


@dataclass(frozen=True)
class Tally:
    """Units grouped in clusters (pairs or calls grouped by item), reduced to exactly what every clustered interval
    here needs. Each unit's value is a multiple of 1/2 (a 0/1 flag; a win, split or loss score), kept doubled as an
    integer. Row i: `clusters[i]` clusters each hold `units[i]` units whose doubled values sum to `doubled[i]`;
    `squares` sums every unit's doubled value squared. The rows are merged and sorted, so the same units give the
    same tally however they arrive (an array per pair, or counts reduced from a file larger than memory), and
    every figure computed from it is the same to the last bit: the sums below are exact integers."""

    units: np.ndarray
    doubled: np.ndarray
    clusters: np.ndarray
    squares: int

    @classmethod
    def of_kinds(cls, units: np.ndarray, doubled: np.ndarray, clusters: np.ndarray, squares: int) -> Tally:
        """Merge rows of the same (units, doubled) and drop clusters without units."""
        import numpy as np

        units, doubled, clusters = (np.asarray(v, dtype=np.int64).reshape(-1) for v in (units, doubled, clusters))
        keep = (units > 0) & (clusters > 0)
        if not keep.all():
            units, doubled, clusters = units[keep], doubled[keep], clusters[keep]
        if units.size == 0:
            empty = np.zeros(0, dtype=np.int64)
            return cls(empty, empty, empty, int(squares))
        rows, inverse = np.unique(np.stack([units, doubled], axis=1), axis=0, return_inverse=True)
        merged = np.bincount(inverse.reshape(-1), weights=clusters, minlength=len(rows)).astype(np.int64)
        return cls(rows[:, 0].copy(), rows[:, 1].copy(), merged, int(squares))

    @property
    def n(self) -> int:
        """Units."""
        return int(self.clusters @ self.units)

    @property
    def total(self) -> int:
        """The doubled values' sum (twice the values' sum)."""
        return int(self.clusters @ self.doubled)

    @property
    def groups(self) -> int:
        """Clusters holding at least one unit."""
        return int(self.clusters.sum())


def doubled_values(values: np.ndarray) -> np.ndarray | None:
    """Twice each value as an integer when every value is a multiple of 1/2 (flags, scores), else None."""
    import numpy as np

    doubled = np.asarray(values, dtype=float) * 2
    ints = np.rint(doubled)
    if not np.array_equal(ints, doubled) or (ints.size and np.abs(ints).max() > 2**20):
        return None
    out: np.ndarray = ints.astype(np.int64)
    return out


def tally(values: np.ndarray, clusters: np.ndarray | None = None) -> Tally | None:
    """The tally of units with these values in these clusters (each unit alone when None); None when a value is
    not a multiple of 1/2."""
    import numpy as np

    doubled = doubled_values(values)
    if doubled is None:
        return None
    squares = int(doubled @ doubled)
    if clusters is None:
        levels, counts = np.unique(doubled, return_counts=True)
        return Tally.of_kinds(np.ones_like(levels), levels, counts, squares)
    keys = np.asarray(clusters)
    _, codes = np.unique(keys.astype(str) if keys.dtype == object else keys, return_inverse=True)
    codes = codes.reshape(-1)
    g = int(codes.max()) + 1 if codes.size else 0
    units = np.bincount(codes, minlength=g)
    sums = np.bincount(codes, weights=doubled, minlength=g).astype(np.int64)
    return Tally.of_kinds(units, sums, np.ones(g, dtype=np.int64), squares)


def tally_design(t: Tally, *, floor: bool = True) -> Independence:
    """`cluster_design` of a tally, in exact integer arithmetic: with A the doubled values' sum, Q their squares'
    and D_g = n A_g - n_g A per cluster, the ratio of the two variances is g (n-1) sum(D_g^2) / ((g-1) n^2
    (n Q - A^2))."""
    n, g = t.n, t.groups
    if n == 0 or g == n:
        return Independence("pairs", n, 1.0)
    if g == 1:
        return Independence("items", 1, float(n))  # every unit on one item: one observation's worth
    total = t.total
    spread = n * t.squares - total * total  # n^2 times the sum of squared residuals, over 4/n
    if spread == 0:
        return Independence("items", g, 1.0)
    between = sum(int(c) * (n * int(s) - int(u) * total) ** 2
                  for u, s, c in zip(t.units.tolist(), t.doubled.tolist(), t.clusters.tolist(), strict=True))
    ratio = (g * (n - 1) * between) / ((g - 1) * n * n * spread)  # int / int: correctly rounded
    return Independence("items", g, max(1.0, ratio) if floor else ratio)


def cluster_design(values: np.ndarray, clusters: np.ndarray | None, *, floor: bool = True) -> Independence:
    """Design effect of a mean over units that share clusters (items): the cluster-robust (sandwich) variance of
    the mean over the variance treating units as independent, each with its small-sample factor (G/(G-1) and
    n/(n-1)), floored at 1 (unless `floor` is False) so sharing never narrows an interval. Units in clusters of
    one give exactly 1. Values that are multiples of 1/2 go through `tally_design` (exact)."""
    import numpy as np

    values = np.asarray(values, dtype=float)
    n = int(values.size)
    if clusters is None or n == 0:
        return Independence("pairs", n, 1.0)
    counted = tally(values, clusters)
    if counted is not None:
        return tally_design(counted, floor=floor)
    keys = np.asarray(clusters)
    _, codes = np.unique(keys.astype(str) if keys.dtype == object else keys, return_inverse=True)
    codes = codes.reshape(-1)
    g = int(codes.max()) + 1
    if g == n:
        return Independence("pairs", n, 1.0)
    if g == 1:
        return Independence("items", 1, float(n))  # every unit on one item: one observation's worth
    resid = values - values.mean()
    ss_units = float(np.sum(resid**2))
    if ss_units == 0:
        return Independence("items", g, 1.0)
    totals = np.bincount(codes, weights=resid, minlength=g)
    ratio = (g / (g - 1) * float(np.sum(totals**2))) / (n / (n - 1) * ss_units)
    return Independence("items", g, max(1.0, ratio) if floor else ratio)


def _wilson_bounds(p: float, n_eff: float, z: float) -> tuple[float, float]:
    """Wilson score bounds for a rate p on a (possibly fractional) effective sample size."""
    denom = 2 * (n_eff + z**2)
    center = (2 * n_eff * p + z**2) / denom
    delta = z / denom * math.sqrt(max(0.0, 4 * n_eff * p * (1 - p) + z**2))
    return (0.0 if p <= 0 else max(0.0, center - delta)), (1.0 if p >= 1 else min(1.0, center + delta))


def _small_count_bounds(p: float, n: int, n_eff: float, low: float, high: float,
                        confidence: float) -> tuple[float, float]:
    """Brown, Cai and DasGupta's (2001) repair of Wilson's coverage dip near 0 and 1: with at most 2 (effective
    n <= 50) or 3 successes (or failures), the bound on that side is the one-sided Poisson bound. Not below 7
    pairs, where nearly every outcome is a small count and the repair would break monotonicity in wins."""
    limit = 2 if n_eff <= 50 else 3
    if n <= 2 * limit:
        return low, high
    alpha = 1 - confidence
    k, m = p * n_eff, (1 - p) * n_eff
    if not (0 < k <= limit or 0 < m <= limit):
        return low, high  # no small count: scipy is not imported (a command starts faster without it)
    from scipy import special  # only the small-count repair needs it

    if 0 < k <= limit:
        low = min(low, float(special.gammaincinv(k, alpha)) / n_eff)
    if 0 < m <= limit:
        high = max(high, 1 - float(special.gammaincinv(m, alpha)) / n_eff)
    return low, high


@dataclass(frozen=True)
class MeanInterval:
    """Mean of per-pair scores in [0, 1] with its interval and what the interval treated as independent."""

    value: float | None
    low: float | None
    high: float | None
    n: int
    effective_n: float | None
    method: str
    independence: Independence

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n,
                "effective_n": self.effective_n, "method": self.method, **self.independence.to_dict()}


def _spread(n: int, total: float, squares: float) -> float:
    w = SPREAD_PSEUDO
    size = float(n) + 2 * w
    mean = (total + w) / size
    var = (squares + w) / size - mean**2
    return min(1.0, max(var, 0.0) / (mean * (1 - mean)))


def score_spread(scores: np.ndarray) -> float:
    """Variance of per-pair scores relative to a 0/1 score with the same mean (1 for 0/1 scores, less with
    splits), measured with SPREAD_PSEUDO added on each side so it is never 0."""
    import numpy as np

    return _spread(int(scores.size), float(scores.sum()), float(np.sum(scores**2)))


def tally_mean_interval(t: Tally, confidence: float = 0.95) -> MeanInterval:
    """`mean_interval` of the scores a tally holds (the sums of halves and quarters are exact in floats)."""
    n = t.n
    design = tally_design(t)
    method = "wilson_effective_n"
    if n == 0:
        return MeanInterval(None, None, None, 0, None, method, design)
    total = t.total / 2
    p = total / n
    n_eff = n / (_spread(n, total, t.squares / 4) * design.design_effect)
    z = normal_quantile(confidence)
    low, high = _small_count_bounds(p, n, n_eff, *_wilson_bounds(p, n_eff, z), confidence)
    return MeanInterval(p, low, high, n, n_eff, method, design)


def mean_interval(scores: np.ndarray, confidence: float = 0.95, clusters: np.ndarray | None = None) -> MeanInterval:
    """Mean of per-pair scores in [0, 1] (1 win, 1/2 split, 0 loss; or per-call halves) with a Wilson interval on
    an effective sample size: n pairs, scaled up by how much less a split-credit score varies than a 0/1 score
    (score_spread) and down by the design effect of pairs that share an item (cluster_design, when `clusters`
    names each pair's item), with the small-count repair near 0 and 1. Each pair is one observation: both orders
    of a pair are never counted as two. Exact coverage over three-outcome multinomials is in docs/intervals.md."""
    import numpy as np

    scores = np.asarray(scores, dtype=float)
    counted = tally(scores, clusters) if clusters is not None else None
    if counted is not None:
        return tally_mean_interval(counted, confidence)
    n = int(scores.size)
    design = cluster_design(scores, clusters)
    method = "wilson_effective_n"
    if n == 0:
        return MeanInterval(None, None, None, 0, None, method, design)
    p = float(scores.mean())
    n_eff = n / (score_spread(scores) * design.design_effect)
    z = normal_quantile(confidence)
    low, high = _small_count_bounds(p, n, n_eff, *_wilson_bounds(p, n_eff, z), confidence)
    return MeanInterval(p, low, high, n, n_eff, method, design)


def tally_proportion_interval(t: Tally, confidence: float = 0.95, *, floor: bool = True) -> MeanInterval:
    """`proportion_interval` of the 0/1 flags a tally holds."""
    n = t.n
    design = tally_design(t, floor=floor)
    if n == 0:
        return MeanInterval(None, None, None, 0, None, "wilson", design)
    k = t.total // 2
    if design.design_effect == 1.0:
        w = wilson(k, n, confidence)
        return MeanInterval(w.rate, w.low, w.high, n, float(n), "wilson", design)
    p = k / n
    n_eff = n / design.design_effect
    low, high = _wilson_bounds(p, n_eff, normal_quantile(confidence))
    return MeanInterval(p, low, high, n, n_eff, "wilson_clustered", design)


def proportion_interval(flags: np.ndarray, confidence: float = 0.95, clusters: np.ndarray | None = None, *,
                        floor: bool = True) -> MeanInterval:
    """A 0/1 rate over pairs with its Wilson interval: exactly `wilson` when no two pairs share an item, and on
    the effective sample size n / design effect when they do (`clusters`: each pair's item)."""
    import numpy as np

    flags = np.asarray(flags, dtype=float)
    n = int(flags.size)
    if clusters is not None and n:
        counted = tally(flags, clusters)
        if counted is not None:
            return tally_proportion_interval(counted, confidence, floor=floor)
    design = cluster_design(flags, clusters, floor=floor)
    if n == 0:
        return MeanInterval(None, None, None, 0, None, "wilson", design)
    if design.design_effect == 1.0:
        w = wilson(int(flags.sum()), n, confidence)
        return MeanInterval(w.rate, w.low, w.high, n, float(n), "wilson", design)
    p = float(flags.mean())
    n_eff = n / design.design_effect
    low, high = _wilson_bounds(p, n_eff, normal_quantile(confidence))
    return MeanInterval(p, low, high, n, n_eff, "wilson_clustered", design)


def clustered_binomial_p(k: int, n: int, design: Independence) -> float | None:
    """Two-sided test of k of n against 1/2: the exact binomial test when the units are independent (design effect
    1); when they share items, a score test whose variance under 1/2 is scaled by the design effect (Rao and
    Scott's first-order correction), referred to Student's t on clusters - 1 degrees of freedom."""
    if n == 0 or design.design_effect == 1.0 or design.clusters < 2:
        return binomial_p(k, n)
    from scipy import special

    t = (k / n - 0.5) / math.sqrt(0.25 * design.design_effect / n)
    return float(min(1.0, 2 * special.stdtr(design.clusters - 1, -abs(t))))


def band(consistency: float | None) -> str | None:
    """Sensitivity band of a swap-consistency estimate (the counting rules of docs/records.md)."""
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
