"""A ranking that models the first slot and style: Bradley-Terry on single calls with a home-field (first-slot)
term and covariates, with an item bootstrap.

    P(first wins) = sigmoid(s_first - s_second + h + z . beta),   a tie counted as half a win for each side

`h` is the judge's first-slot preference in log-odds (sigmoid(h) is the first slot's win probability between
equals); `z` holds style covariates (normalised differences of the two answers' features, `ranking.style`).
With single-order or randomly ordered calls, `h` is the honest estimate of position preference and the
strengths are adjusted for it; with both orders of every pair it cross-checks the flip analysis.

Without covariates the calls are summed per ordered pair of systems, so a fit costs the same for a thousand
calls or two million. Intervals: percentiles of refits on items resampled with replacement (an item's calls
together, never call by call).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.special import expit

from swapjudge.ranking.bradley_terry import (
    DEFAULT_RIDGE,
    Convergence,
    IntervalMethod,
    Model,
    Ranking,
    SystemScore,
    one_blas_thread,
    rank_of,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
_BATCH = 50  # bootstrap rounds whose resampled weights are built in one sparse product
FULL_REFIT_LIMIT = 200_000  # calls with covariates beyond which a bootstrap round takes one Newton step


@dataclass(frozen=True)
class Calls:
    """Single calls: who sat first and second, the first's score (1 win, 0.5 tie, 0 loss), the item (bootstrap
    unit) and covariates (calls x names)."""

    systems: tuple[str, ...]
    item: IntArray
    first: IntArray
    second: IntArray
    score: FloatArray
    covariates: FloatArray
    covariate_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.item)
        cov = np.asarray(self.covariates, dtype=np.float64).reshape(n, -1)
        object.__setattr__(self, "covariates", cov)
        if {len(self.first), len(self.second), len(self.score)} != {n}:
            raise ValueError("item, first, second and score must have the same length")
        if cov.shape[1] != len(self.covariate_names):
            raise ValueError("one covariate name per column")
        if n and np.any(np.asarray(self.first) == np.asarray(self.second)):
            raise ValueError("a system cannot be compared with itself")

    def __len__(self) -> int:
        return len(self.item)


@dataclass(frozen=True)
class Coefficient:
    """A fitted term on the log-odds scale with its bootstrap interval (NaN ends without bootstrap rounds, null in
    JSON)."""

    name: str
    value: float
    low: float
    high: float

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "low": _end(self.low), "high": _end(self.high)}


@dataclass(frozen=True)
class AdjustedRanking:
    """The strengths adjusted for the first slot and/or style, with the terms that adjusted them."""

    ranking: Ranking
    order_effect: Coefficient | None
    controls: tuple[Coefficient, ...]
    bootstrap_refit: str = "full"  # or "one-step": one Newton step from the point fit per bootstrap round
    # two systems: P(first-named beats second-named) at equal style and with the slot's effect removed
    controlled_win_rate: Coefficient | None = None

    @property
    def first_slot_win_probability(self) -> tuple[float, float, float] | None:
        """P(first wins) between two equally strong systems with equal style: sigmoid(h), with its interval."""
        h = self.order_effect
        if h is None:
            return None
        return float(expit(h.value)), float(expit(h.low)), float(expit(h.high))

    def to_dict(self) -> dict[str, Any]:
        out = self.ranking.to_dict()
        out["bootstrap"]["refit"] = self.bootstrap_refit
        if self.order_effect is not None:
            p = self.first_slot_win_probability
            assert p is not None
            out["order_effect"] = {
                "value": self.order_effect.value, "low": _end(self.order_effect.low),
                "high": _end(self.order_effect.high), "scale": "log-odds",
                "first_slot_win_probability": {"value": p[0], "low": _end(p[1]), "high": _end(p[2])},
            }
        if self.controlled_win_rate is not None:
            out["controlled_win_rate"] = self.controlled_win_rate.to_dict()
        if self.controls:
            out["controls"] = [{**c.to_dict(), "scale": "log-odds per standard deviation of the normalised "
                                                         "difference"} for c in self.controls]
        return out


@dataclass(frozen=True)
class _Design:
    first: IntArray
    second: IntArray
    y: FloatArray  # the first's score per row (a mean over the calls a row sums)
    z: FloatArray  # rows x covariates


@dataclass(frozen=True)
class _Fit:
    theta: FloatArray
    log_likelihood: float
    iterations: int
    converged: bool
    gradient_norm: float


def _eta(d: _Design, t: FloatArray, k: int, home: bool) -> FloatArray:
    eta = t[d.first] - t[d.second]
    if home:
        eta = eta + t[k]
    if d.z.shape[1]:
        eta = eta + d.z @ t[k + int(home):]
    return eta


def _derivatives(d: _Design, w: FloatArray, eta: FloatArray, k: int, home: bool) -> tuple[FloatArray, FloatArray,
                                                                                          FloatArray]:
    """Per-row score residuals r = w (y - p), the likelihood's gradient and its negative Hessian (no ridge)."""
    c = d.z.shape[1]
    p_total = k + int(home) + c
    p = expit(eta)
    r = w * (d.y - p)
    v = w * p * (1.0 - p)
    grad = np.empty(p_total)
    grad[:k] = np.bincount(d.first, r, k) - np.bincount(d.second, r, k)
    hess = np.zeros((p_total, p_total))
    pair = np.bincount(d.first * k + d.second, v, k * k).reshape(k, k)
    hess[:k, :k] = -(pair + pair.T)
    # a system's weight in slot 1 and slot 2: the row and column sums of the ordered-pair table
    v_first, v_second = pair.sum(axis=1), pair.sum(axis=0)
    hess[np.arange(k), np.arange(k)] = v_first + v_second
    col = k
    if home:
        grad[col] = r.sum()
        cross = v_first - v_second
        hess[:k, col] = hess[col, :k] = cross
        hess[col, col] = v.sum()
        col += 1
    if c:
        grad[col:] = d.z.T @ r
        vz = d.z * v[:, None]
        for j in range(c):
            cross = np.bincount(d.first, vz[:, j], k) - np.bincount(d.second, vz[:, j], k)
            hess[:k, col + j] = hess[col + j, :k] = cross
        if home:
            hess[k, col:] = hess[col:, k] = vz.sum(axis=0)
        hess[col:, col:] = d.z.T @ vz
    return r, grad, hess


def _gauge(k: int, p_total: int) -> FloatArray:
    """Added to the negative Hessian: fixes the common shift of the strengths, which the likelihood ignores."""
    vec = np.zeros(p_total)
    vec[:k] = 1.0 / math.sqrt(k)
    return np.outer(vec, vec)


def _newton(d: _Design, w: FloatArray, k: int, home: bool, ridge: float, start: FloatArray | None = None,
            tol: float = 1e-8, max_iter: int = 100) -> _Fit:
    """Maximise the ridge-penalised weighted logistic log-likelihood over (strengths, h, beta)."""
    p_total = k + int(home) + d.z.shape[1]
    theta = np.zeros(p_total) if start is None else start.copy()
    gauge = _gauge(k, p_total)
    total = float(w.sum())

    def value_of(t: FloatArray) -> tuple[float, FloatArray]:
        eta = _eta(d, t, k, home)
        return float(w @ (d.y * eta - np.logaddexp(0.0, eta))) - 0.5 * ridge * float(t @ t), eta

    value, eta = value_of(theta)
    converged, iterations, grad_norm = False, 0, math.inf
    for iterations in range(1, max_iter + 1):
        _, grad, hess = _derivatives(d, w, eta, k, home)
        grad -= ridge * theta
        hess[np.arange(p_total), np.arange(p_total)] += ridge
        grad_norm = float(np.abs(grad).max())
        try:
            step = np.linalg.solve(hess + gauge, grad)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(hess + gauge, grad, rcond=None)[0]
        if float(np.abs(step).max()) < tol or grad_norm < 1e-9 * max(1.0, total):
            converged = True
            break
        decrement = float(grad @ step)
        alpha = 1.0
        if iterations > 1 and float(np.abs(step).max()) < 0.25:
            # close to the maximum of a concave likelihood a full Newton step is safe: skip the line search
            theta = theta + step
            theta[:k] -= theta[:k].mean()
            eta = _eta(d, theta, k, home)
            continue
        for _ in range(40):
            trial = theta + alpha * step
            trial[:k] -= trial[:k].mean()
            trial_value, trial_eta = value_of(trial)
            if trial_value >= value + 1e-4 * alpha * decrement or decrement < 1e-10 * max(1.0, abs(value)):
                break
            alpha *= 0.5
        else:
            converged = float(np.abs(step).max()) < 1e-6
            break
        theta, value, eta = trial, trial_value, trial_eta
    return _Fit(theta, value_of(theta)[0], iterations, converged, grad_norm)


def _one_step_draws(d: _Design, item_index: IntArray, n_items: int, point: _Fit, k: int, home: bool, ridge: float,
                    rounds: int, rng: np.random.Generator) -> FloatArray:
    """Bootstrap draws by one Newton step from the point fit (the linearised bootstrap): each round's gradient
    is its resampled items' summed score contributions, so a round costs a product with the items' scores
    instead of a refit on every call."""
    p_total = len(point.theta)
    r, _, hess = _derivatives(d, np.ones(len(d.y)), _eta(d, point.theta, k, home), k, home)
    hess[np.arange(p_total), np.arange(p_total)] += ridge
    inverse = np.linalg.inv(hess + _gauge(k, p_total))
    # items x parameters: each item's share of the gradient at the point fit
    per_item = np.zeros((n_items, p_total))
    np.add.at(per_item, (item_index, d.first), r)
    np.add.at(per_item, (item_index, d.second), -r)
    col = k
    if home:
        per_item[:, col] = np.bincount(item_index, r, n_items)
        col += 1
    for j in range(d.z.shape[1]):
        per_item[:, col + j] = np.bincount(item_index, r * d.z[:, j], n_items)
    draws = np.empty((rounds, p_total))
    for start in range(0, rounds, _BATCH):
        size = min(_BATCH, rounds - start)
        picks = rng.integers(0, n_items, size=(size, n_items))
        offsets = (np.arange(size, dtype=np.int64) * n_items)[:, None]
        times = np.bincount((picks + offsets).ravel(), minlength=size * n_items).reshape(size, n_items)
        gradient = (times - 1.0) @ per_item  # the point fit's own gradient (with the ridge) is 0
        draws[start:start + size] = point.theta + gradient @ inverse.T
        draws[start:start + size, :k] -= draws[start:start + size, :k].mean(axis=1, keepdims=True)
    return draws


def _cells(data: Calls) -> tuple[_Design, IntArray, FloatArray, FloatArray]:
    """Calls summed per ordered pair of systems (only without covariates): the design, each call's cell, and
    each cell's call count and summed score."""
    k = len(data.systems)
    key = data.first * k + data.second
    keys, cell = _dense_index(key, k * k)
    count = np.bincount(cell).astype(np.float64)
    wins = np.bincount(cell, data.score).astype(np.float64)
    design = _Design(first=keys // k, second=keys % k, y=wins / count, z=np.empty((len(keys), 0)))
    return design, cell.astype(np.int64), count, wins


def _dense_index(values: IntArray, bound: int | None = None) -> tuple[IntArray, IntArray]:
    """The distinct values and each value's index among them; a lookup table instead of a sort when the values
    are small non-negative integers (system pairs, item numbers)."""
    values = np.asarray(values, dtype=np.int64)
    if values.size and values.min() >= 0 and (bound or int(values.max()) + 1) <= 4 * values.size + 1024:
        seen = np.bincount(values, minlength=bound or 0) > 0
        lookup = np.cumsum(seen) - 1
        return np.flatnonzero(seen), lookup[values]
    distinct, index = np.unique(values, return_inverse=True)
    return distinct, index.astype(np.int64)


def _percentiles(draws: FloatArray, confidence: float) -> tuple[FloatArray, FloatArray]:
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(draws, [alpha, 1.0 - alpha], axis=0)
    return low, high


def fit_adjusted(data: Calls, *, order_effect: bool = True, rounds: int = 1000, seed: int | None = 0,
                 confidence: float = 0.95, ridge: float = DEFAULT_RIDGE, refit: str = "auto") -> AdjustedRanking:
    """Fit strengths with a first-slot term (when `order_effect`) and the covariates, and bootstrap over items.

    `refit`: "full" refits every bootstrap round; "one-step" takes one Newton step from the point fit (the
    linearised bootstrap, asymptotically the same); "auto" refits fully unless covariates force a pass over
    more than FULL_REFIT_LIMIT calls per round."""
    if refit not in ("auto", "full", "one-step"):
        raise ValueError("refit must be auto, full or one-step")
    if len(data) == 0:
        raise ValueError("no calls to rank")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1")
    k = len(data.systems)
    c = data.covariates.shape[1]
    aggregated = c == 0
    _, item_index = _dense_index(data.item)
    n_items = int(item_index.max()) + 1
    if aggregated:
        design, cell, count, _ = _cells(data)
        weights = count
    else:
        design = _Design(first=np.asarray(data.first, dtype=np.int64), second=np.asarray(data.second, dtype=np.int64),
                         y=np.asarray(data.score, dtype=np.float64), z=data.covariates)
        weights = np.ones(len(data))
    with one_blas_thread():
        warm = None
        if not aggregated:
            # start from the fit without covariates, which costs one pass over the calls: fewer full passes
            cells = _cells(Calls(data.systems, data.item, data.first, data.second, data.score,
                                 np.empty((len(data), 0))))
            warm = np.zeros(k + int(order_effect) + c)
            warm[:k + int(order_effect)] = _newton(cells[0], cells[2], k, order_effect, ridge).theta
        point = _newton(design, weights, k, order_effect, ridge, start=warm)
    n_params = len(point.theta)
    draws = np.empty((rounds, n_params))
    not_converged, max_iterations = 0, 0
    one_step = refit == "one-step" or (refit == "auto" and not aggregated and len(data) > FULL_REFIT_LIMIT)
    if rounds > 0 and one_step:
        with one_blas_thread():
            draws = _one_step_draws(design, item_index, n_items, point, k, order_effect, ridge, rounds,
                                    np.random.default_rng(seed)) if not aggregated else _one_step_draws(
                _Design(np.asarray(data.first), np.asarray(data.second), np.asarray(data.score, dtype=np.float64),
                        data.covariates), item_index, n_items, point, k, order_effect, ridge, rounds,
                np.random.default_rng(seed))
        low, high = _percentiles(draws, confidence)
    elif rounds > 0:
        rng = np.random.default_rng(seed)
        if aggregated:
            by_count = sparse.csr_matrix((np.ones(len(data)), (cell, item_index)), shape=(len(count), n_items))
            by_score = sparse.csr_matrix((data.score, (cell, item_index)), shape=(len(count), n_items))
        with one_blas_thread():
            for start in range(0, rounds, _BATCH):
                size = min(_BATCH, rounds - start)
                picks = rng.integers(0, n_items, size=(size, n_items))
                offsets = (np.arange(size, dtype=np.int64) * n_items)[:, None]
                times = np.bincount((picks + offsets).ravel(), minlength=size * n_items)
                times = times.reshape(size, n_items).astype(np.float64)
                if aggregated:
                    counts = np.asarray(by_count @ times.T).T
                    scores = np.asarray(by_score @ times.T).T
                for r in range(size):
                    if aggregated:
                        w = counts[r]
                        with np.errstate(invalid="ignore", divide="ignore"):
                            y = np.where(w > 0, scores[r] / np.where(w > 0, w, 1.0), 0.5)
                        resampled = _Design(design.first, design.second, y, design.z)
                    else:
                        w = times[r][item_index]
                        resampled = design
                    sol = _newton(resampled, w, k, order_effect, ridge, start=point.theta)
                    draws[start + r] = sol.theta
                    not_converged += not sol.converged
                    max_iterations = max(max_iterations, sol.iterations)
        low, high = _percentiles(draws, confidence)
    else:
        low = high = np.full(n_params, math.nan)
    ranking = _ranking(data, n_items, point, draws, low, high, rounds, seed, confidence, ridge, not_converged,
                       max_iterations)
    col = k
    effect = None
    if order_effect:
        effect = Coefficient("first_slot", float(point.theta[col]), float(low[col]), float(high[col]))
        col += 1
    controls = tuple(Coefficient(name, float(point.theta[col + j]), float(low[col + j]), float(high[col + j]))
                     for j, name in enumerate(data.covariate_names))
    controlled = None
    if k == 2:
        gap = draws[:, 0] - draws[:, 1]
        gap_low, gap_high = _percentiles(gap[:, None], confidence) if rounds > 0 else (np.array([math.nan]),) * 2
        controlled = Coefficient(f"{data.systems[0]} over {data.systems[1]}",
                                 float(expit(point.theta[0] - point.theta[1])), float(expit(gap_low[0])),
                                 float(expit(gap_high[0])))
    return AdjustedRanking(ranking=ranking, order_effect=effect, controls=controls,
                           bootstrap_refit="one-step" if one_step else "full", controlled_win_rate=controlled)


def _end(value: float) -> float | None:
    """An interval's end, None without bootstrap rounds (as bradley_terry's fit gives it)."""
    return None if math.isnan(value) else float(value)


def _ranking(data: Calls, n_items: int, point: _Fit, draws: FloatArray, low: FloatArray, high: FloatArray, rounds: int,
             seed: int | None, confidence: float, ridge: float, not_converged: int, max_iterations: int) -> Ranking:
    k = len(data.systems)
    scores = point.theta[:k]
    alpha = (1.0 - confidence) / 2.0
    point_rank = rank_of(scores)
    if rounds > 0:
        ranks = rank_of(draws[:, :k])
        rank_low, rank_high = np.quantile(ranks, [alpha, 1.0 - alpha], axis=0, method="inverted_cdf")
    else:
        rank_low = rank_high = point_rank
    s = np.asarray(data.score)
    first, second = np.asarray(data.first), np.asarray(data.second)
    # counts per ordered pair of systems and outcome (first won, tie, second won), summed per system
    table = np.bincount((first * k + second) * 3 + (2 - 2 * s).astype(np.int64), minlength=3 * k * k)
    table = table.reshape(k, k, 3)
    wins = table[:, :, 0].sum(axis=1) + table[:, :, 2].sum(axis=0)
    losses = table[:, :, 2].sum(axis=1) + table[:, :, 0].sum(axis=0)
    ties = table[:, :, 1].sum(axis=1) + table[:, :, 1].sum(axis=0)
    appearances = wins + losses + ties
    seen = np.flatnonzero(table.sum(axis=2))
    adjacency = sparse.coo_matrix((np.ones(seen.size), (seen // k, seen % k)), shape=(k, k))
    components = int(connected_components(adjacency, directed=False)[0])
    order = sorted(range(k), key=lambda i: (point_rank[i], data.systems[i]))
    rows = tuple(SystemScore(system=data.systems[i], score=float(scores[i]), low=_end(low[i]), high=_end(high[i]),
                             rank=int(point_rank[i]), rank_low=int(rank_low[i]), rank_high=int(rank_high[i]),
                             wins=round(wins[i]), ties=round(ties[i]), losses=round(losses[i]),
                             pairs=int(appearances[i]))
                 for i in order)
    return Ranking(model=Model.bt_half, rows=rows, tie_parameter=None, tie_low=None, tie_high=None,
                   comparisons=len(data), items=n_items, rounds=rounds, seed=seed,
                   confidence=confidence, ridge=ridge, interval=IntervalMethod.percentile,
                   convergence=Convergence(converged=point.converged, iterations=point.iterations,
                                           gradient_norm=point.gradient_norm, log_likelihood=point.log_likelihood,
                                           connected=components == 1, components=components,
                                           bootstrap_rounds=rounds, bootstrap_not_converged=not_converged,
                                           bootstrap_max_iterations=max_iterations))
