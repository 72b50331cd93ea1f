"""The bounds against independent computations: scipy's Wilson interval, and the betting confidence sequence
written out term by term (math, a loop, scipy's root finder) from Waudby-Smith and Ramdas' definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from swapjudge.core.stats import mean_interval
from swapjudge.decision.bounds import (
    GRID_STEP,
    BettingSequence,
    bet_sizes,
    betting_sequence,
    first_crossings,
    fixed_bound,
)


def test_fixed_bound_is_scipys_one_sided_wilson_for_win_or_loss_items():
    rng = np.random.default_rng(3)
    for n, p in [(50, 0.6), (400, 0.52), (1000, 0.45)]:
        x = (rng.random(n) < p).astype(float)
        k = int(x.sum())
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.90, method="wilson")
        b = fixed_bound(x, alpha=0.05)
        assert b.low == pytest.approx(ci.low, abs=1e-12) and b.high == pytest.approx(ci.high, abs=1e-12)
        assert b.n == n and b.to_dict()["independent"] == "items" and b.to_dict()["one_sided_confidence"] == 0.95


def test_fixed_bound_with_split_credit_is_core_mean_interval_at_one_minus_two_alpha():
    x = np.random.default_rng(4).choice([0.0, 0.5, 1.0], size=300, p=[0.3, 0.3, 0.4])
    m = mean_interval(x, confidence=0.98)
    b = fixed_bound(x, alpha=0.01)
    assert (b.value, b.low, b.high, b.effective_n) == (m.value, m.low, m.high, m.effective_n)


def reference_bets(x: list[float], alpha: float) -> list[float]:
    """lambda_t = min(3/4, sqrt(2 log(1/alpha) / (sigma2_{t-1} t log(1+t)))), sigma2 and mu as in the paper."""
    bets, sq, total = [], 0.25, 0.0
    for t, xt in enumerate(x, start=1):
        sigma2 = sq / t  # (1/4 + sum_{i<t} (x_i - mu_i)^2) / t
        bets.append(min(0.75, math.sqrt(2 * math.log(1 / alpha) / (sigma2 * t * math.log(1 + t)))))
        total += xt
        mu = (0.5 + total) / (t + 1)
        sq += (xt - mu) ** 2
    return bets


def log_capital(x: list[float], bets: list[float], m: float, t: int, up: bool) -> float:
    sign = 1 if up else -1
    return sum(math.log(1 + sign * lam * (xi - m)) for xi, lam in zip(x[:t], bets[:t], strict=True))


def exact_bounds(x: list[float], alpha: float) -> tuple[float, float]:
    """The running intersection of the exact sequence: roots of log K_t(m) = log(1/alpha), by brentq."""
    bets, thr = reference_bets(x, alpha), math.log(1 / alpha)
    low, high = 0.0, 1.0
    for t in range(1, len(x) + 1):
        def up(m: float, t: int = t) -> float:
            return log_capital(x, bets, m, t, True) - thr

        def down(m: float, t: int = t) -> float:
            return log_capital(x, bets, m, t, False) - thr

        if up(0.0) >= 0:
            low = max(low, 1.0 if up(1.0) >= 0 else optimize.brentq(up, 0.0, 1.0, xtol=1e-12))
        if down(1.0) >= 0:
            high = min(high, 0.0 if down(0.0) >= 0 else optimize.brentq(down, 0.0, 1.0, xtol=1e-12))
    return low, high


@pytest.mark.parametrize("p", [(0.3, 0.3, 0.4), (0.45, 0.3, 0.25), (0.2, 0.2, 0.6)])
def test_sequence_matches_the_definition_term_by_term(p):
    x = np.random.default_rng(7).choice([0.0, 0.5, 1.0], size=150, p=p)
    assert bet_sizes(x, 0.05) == pytest.approx(reference_bets(list(x), 0.05), rel=1e-12)
    low, high = exact_bounds(list(x), 0.05)
    b = betting_sequence(x, 0.5, 0.05)
    # the grid rounds outward: never narrower than the exact sequence, at most one grid step wider
    assert low - GRID_STEP - 1e-9 <= b.low <= low + 1e-9
    assert high - 1e-9 <= b.high <= high + GRID_STEP + 1e-9
    bets = reference_bets(list(x), 0.05)
    ship = next((t for t in range(1, 151) if log_capital(list(x), bets, 0.5, t, True) >= math.log(20)), None)
    keep = next((t for t in range(1, 151) if log_capital(list(x), bets, 0.5, t, False) >= math.log(20)), None)
    assert (b.ship_at, b.keep_at) == (ship, keep)


def test_incremental_updates_equal_the_whole_stream_and_the_vectorised_crossings():
    rng = np.random.default_rng(11)
    for bar, p in [(0.5, (0.25, 0.3, 0.45)), (0.47, (0.35, 0.3, 0.35)), (0.5, (0.5, 0.2, 0.3))]:
        x = rng.choice([0.0, 0.5, 1.0], size=2500, p=p)
        seq = BettingSequence(bar, 0.05)
        for v in x:
            seq.update(float(v))
        whole = betting_sequence(x, bar, 0.05)
        assert (seq.low, seq.high, seq.ship_at, seq.keep_at) == (whole.low, whole.high, whole.ship_at, whole.keep_at)
        ship, keep = first_crossings(x[None, :], bar, 0.05)
        assert (int(ship[0]) or None, int(keep[0]) or None) == (whole.ship_at, whole.keep_at)


def test_the_sequence_is_wider_than_the_fixed_interval_and_contains_the_mean():
    x = np.random.default_rng(5).choice([0.0, 0.5, 1.0], size=1000, p=[0.3, 0.3, 0.4])
    seq, fixed = betting_sequence(x, 0.5, 0.05), fixed_bound(x, 0.05)
    assert seq.low < fixed.low < x.mean() < fixed.high < seq.high
