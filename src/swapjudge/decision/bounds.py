"""The bounds on the candidate's win rate over items, each item one independent unit (its score in [0, 1]).

- `fixed_bound`: the fixed-sample interval, read once. The lower and upper bounds are each one-sided at level
  alpha (the two-sided interval at 1 - 2 alpha), so the false-ship rate at the bar is alpha. It is
  `core.stats.mean_interval` (Wilson on an effective sample size that accounts for split credit) over item scores.
- `BettingSequence` / `betting_sequence`: an anytime-valid confidence sequence for a bounded mean by betting
  (Waudby-Smith and Ramdas, "Estimating means of bounded random variables by betting", JRSS-B 2024). For each
  candidate mean m, a gambler bets lambda_t * (x_t - m) on every new item; the capital
  K_t(m) = prod (1 + lambda_t (x_t - m)) is a nonnegative supermartingale whenever the true mean is at most m, so
  by Ville's inequality it reaches 1/alpha with probability at most alpha, however long one watches. Every m whose
  capital ever reached 1/alpha is excluded: the lower bound is the largest such m (the upper bound the same with
  the bet reversed). The bets are the paper's predictable plug-in (PrPl) choice,
  lambda_t = min(c, sqrt(2 log(1/alpha) / (sigma2_{t-1} t log(1 + t)))) with sigma2 the regularised running
  variance, here the same for every m (truncated at c = 3/4 so every factor stays positive for m in [0, 1]), which
  makes K_t(m) monotone in m and each bound one root.

The decision at the bar reads the capital at the bar exactly; the bounds shown are on a grid of step 0.001 (the
bar included), rounded outward, so they are never narrower than the exact ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from swapjudge.core.stats import mean_interval

BET_CAP = 0.75  # c: the largest bet, so that 1 + lambda (x - m) >= 1/4 for every x, m in [0, 1]
GRID_STEP = 0.001
_CHUNK = 4096  # items per block when the sequence is computed for a whole stream at once


@dataclass(frozen=True)
class Bound:
    """The candidate's win rate over items with its lower and upper bounds (each one-sided at `alpha`)."""

    value: float | None
    low: float | None
    high: float | None
    n: int  # items
    alpha: float
    method: str  # "wilson_effective_n" (fixed) | "betting_cs" (sequential)
    effective_n: float | None = None
    ship_at: int | None = None  # sequential: the item at which the lower bound first cleared the bar
    keep_at: int | None = None  # sequential: the item at which the upper bound first fell below the bar

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n, "alpha": self.alpha,
                "one_sided_confidence": 1 - self.alpha, "method": self.method, "effective_n": self.effective_n,
                "independent": "items", "clusters": self.n, "ship_at": self.ship_at, "keep_at": self.keep_at}


def fixed_bound(scores: np.ndarray, alpha: float) -> Bound:
    """The fixed-sample interval over item scores, its bounds one-sided at `alpha` each."""
    m = mean_interval(np.asarray(scores, dtype=float), confidence=1 - 2 * alpha)
    return Bound(m.value, m.low, m.high, m.n, alpha, m.method, m.effective_n)


def bet_sizes(x: np.ndarray, alpha: float) -> np.ndarray:
    """The predictable plug-in bets lambda_t for a stream (along the last axis): each uses items before t only."""
    x = np.asarray(x, dtype=float)
    t = np.arange(1, x.shape[-1] + 1, dtype=float)
    mu = (0.5 + np.cumsum(x, axis=-1)) / (t + 1)  # mu_hat_t includes x_t
    dev = np.cumsum((x - mu) ** 2, axis=-1)
    before = np.concatenate([np.zeros((*x.shape[:-1], 1)), dev[..., :-1]], axis=-1)
    sigma2 = (0.25 + before) / t  # sigma2_{t-1} = (1/4 + sum_{i<t} (x_i - mu_hat_i)^2) / t
    return np.minimum(BET_CAP, np.sqrt(2 * math.log(1 / alpha) / (sigma2 * t * np.log1p(t))))


def grid_with(bar: float) -> np.ndarray:
    """The grid of candidate means, the bar included exactly."""
    return np.union1d(np.round(np.arange(0, 1 + GRID_STEP / 2, GRID_STEP), 10), [bar])


class BettingSequence:
    """The confidence sequence, updated item by item in O(grid) (never refitted): `update(x)` after each item."""

    def __init__(self, bar: float, alpha: float) -> None:
        self.bar, self.alpha = float(bar), float(alpha)
        self.grid = grid_with(self.bar)
        self._bar_at = int(np.searchsorted(self.grid, self.bar))
        self._threshold = math.log(1 / self.alpha)
        self._log_up = np.zeros(self.grid.size)  # capital betting the mean is above m
        self._log_down = np.zeros(self.grid.size)  # capital betting it is below m
        self.t = 0
        self._sum = 0.0
        self._dev = 0.0
        self._low_at = -1  # largest grid index ever excluded from below
        self._high_at = self.grid.size  # smallest grid index ever excluded from above
        self.ship_at: int | None = None
        self.keep_at: int | None = None

    def bet(self) -> float:
        """The next bet, from the items so far."""
        t = self.t + 1
        sigma2 = (0.25 + self._dev) / t
        return min(BET_CAP, math.sqrt(2 * math.log(1 / self.alpha) / (sigma2 * t * math.log1p(t))))

    def update(self, x: float) -> None:
        lam = self.bet()
        gap = x - self.grid
        self._log_up += np.log1p(lam * gap)
        self._log_down += np.log1p(-lam * gap)
        self.t += 1
        self._sum += x
        self._dev += (x - (0.5 + self._sum) / (self.t + 1)) ** 2
        # the capital from below falls as m rises: the excluded means are a prefix [0, r_t] of the grid
        excluded_low = int(np.searchsorted(-self._log_up, -self._threshold, side="right")) - 1
        excluded_high = int(np.searchsorted(self._log_down, self._threshold, side="left"))
        self._low_at = max(self._low_at, excluded_low)
        self._high_at = min(self._high_at, excluded_high)
        if self.ship_at is None and self._log_up[self._bar_at] >= self._threshold:
            self.ship_at = self.t
        if self.keep_at is None and self._log_down[self._bar_at] >= self._threshold:
            self.keep_at = self.t

    @property
    def low(self) -> float:
        return float(self.grid[self._low_at]) if self._low_at >= 0 else 0.0

    @property
    def high(self) -> float:
        return float(self.grid[self._high_at]) if self._high_at < self.grid.size else 1.0

    def bound(self) -> Bound:
        value = self._sum / self.t if self.t else None
        return Bound(value, self.low if self.t else None, self.high if self.t else None, self.t, self.alpha,
                     "betting_cs", None, self.ship_at, self.keep_at)


def _first(hit: np.ndarray) -> int | None:
    where = np.flatnonzero(hit)
    return int(where[0]) + 1 if where.size else None


def _ever_excluded(x: np.ndarray, lam: np.ndarray, grid: np.ndarray, threshold: float, up: bool) -> np.ndarray:
    """For each grid mean, whether its capital (betting up or down) ever reached the threshold over the stream."""
    sign = 1.0 if up else -1.0
    carry = np.zeros(grid.size)
    ever = np.zeros(grid.size, dtype=bool)
    for start in range(0, x.size, _CHUNK):
        xs, ls = x[start:start + _CHUNK, None], lam[start:start + _CHUNK, None]
        path = carry + np.cumsum(np.log1p(sign * ls * (xs - grid)), axis=0)
        ever |= (path >= threshold).any(axis=0)
        carry = path[-1]
    return ever


def _extreme_excluded(x: np.ndarray, lam: np.ndarray, bar: float, threshold: float, up: bool) -> float:
    """The lower (up) or upper bound on the grid of `grid_with(bar)`: a coarse pass finds the cell, a fine pass the
    grid point, which equals the full grid's answer at a tenth of the work."""
    full = grid_with(bar)
    coarse = full[np.isin(np.round(full, 10), np.round(np.arange(0, 1.001, 0.01), 10)) | (full == bar)]
    ever = _ever_excluded(x, lam, coarse, threshold, up)
    if up:
        if not ever.any():
            return 0.0
        k = int(np.flatnonzero(ever)[-1])
        hi = coarse[k + 1] if k + 1 < coarse.size else 1.0
        fine = full[(full > coarse[k]) & (full < hi)]
        fine_ever = _ever_excluded(x, lam, fine, threshold, up) if fine.size else np.zeros(0, dtype=bool)
        return float(fine[np.flatnonzero(fine_ever)[-1]]) if fine_ever.any() else float(coarse[k])
    if not ever.any():
        return 1.0
    k = int(np.flatnonzero(ever)[0])
    lo = coarse[k - 1] if k > 0 else 0.0
    fine = full[(full < coarse[k]) & (full > lo)]
    fine_ever = _ever_excluded(x, lam, fine, threshold, up) if fine.size else np.zeros(0, dtype=bool)
    return float(fine[np.flatnonzero(fine_ever)[0]]) if fine_ever.any() else float(coarse[k])


def betting_sequence(scores: np.ndarray, bar: float, alpha: float) -> Bound:
    """The confidence sequence over a whole stream at once (what `BettingSequence` gives after its last update)."""
    x = np.asarray(scores, dtype=float)
    if x.size == 0:
        return Bound(None, None, None, 0, alpha, "betting_cs")
    lam = bet_sizes(x, alpha)
    threshold = math.log(1 / alpha)
    gap = x - bar
    ship_at = _first(np.cumsum(np.log1p(lam * gap)) >= threshold)
    keep_at = _first(np.cumsum(np.log1p(-lam * gap)) >= threshold)
    low = _extreme_excluded(x, lam, bar, threshold, up=True)
    high = _extreme_excluded(x, lam, bar, threshold, up=False)
    return Bound(float(x.mean()), low, high, int(x.size), alpha, "betting_cs", None, ship_at, keep_at)


def first_crossings(streams: np.ndarray, bar: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """For each stream (a row), the item at which the sequence first ships and first keeps (0: never), vectorised
    over streams: what the power simulations and the monitoring studies read."""
    x = np.asarray(streams, dtype=float)
    lam = bet_sizes(x, alpha)
    threshold = math.log(1 / alpha)
    gap = x - bar
    up = np.cumsum(np.log1p(lam * gap), axis=-1) >= threshold
    down = np.cumsum(np.log1p(-lam * gap), axis=-1) >= threshold
    ship = np.where(up.any(axis=-1), up.argmax(axis=-1) + 1, 0)
    keep = np.where(down.any(axis=-1), down.argmax(axis=-1) + 1, 0)
    return ship, keep
