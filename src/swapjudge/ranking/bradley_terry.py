"""Ranking many systems from pairwise outcomes: tie-aware Bradley-Terry fits with item-bootstrap intervals.

Three models, all fitted by damped Newton on counts aggregated per pair of systems (the fit costs the same for
a thousand comparisons or two million):

- ``rao-kupper``: P(i beats j) = pi_i / (pi_i + theta pi_j), a tie takes the rest (theta >= 1 estimated);
- ``davidson``: P(i beats j) : P(tie) : P(j beats i) = pi_i : nu sqrt(pi_i pi_j) : pi_j (nu >= 0 estimated);
- ``bt-half``: plain Bradley-Terry with every tie counted as half a win for each side.

Scores are natural log-strengths centred at mean 0, with a small ridge (on the scores and on the fitting scale
of the tie parameter) so that a system that wins everything, or a judge that calls nearly everything a tie,
stays finite. Intervals come from a bootstrap over items (percentile, or BCa on request): an item's
comparisons (both orders, all its pairs) are resampled together, never call by call.
"""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.special import expit, ndtr, ndtri
from threadpoolctl import ThreadpoolController

from swapjudge.core import documents
from swapjudge.core.choices import DEFAULT_ROUNDS, FEW_ITEMS, IntervalMethod, Model
from swapjudge.core.display import Displayable

# defined in core.choices (light), used from here too
__all__ = ["DEFAULT_ROUNDS", "FEW_ITEMS", "IntervalMethod", "Model"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

ELO_PER_UNIT = 400.0 / math.log(10.0)  # one natural-log unit of strength on the Elo scale
ELO_CENTRE = 1000.0
DEFAULT_RIDGE = 1e-2  # a N(0, 10^2) prior on each centred log-strength: invisible unless data are separated
_BATCH = 100  # bootstrap rounds whose item draws are made at once (fewer when the items are many)
_DRAW_BYTES = 64 * 2**20  # at most this much memory holds one batch's item draws


class Battle(enum.IntEnum):
    """The outcome of one comparison between the `left` and the `right` system."""

    LEFT = 0
    RIGHT = 1
    TIE = 2


JACKKNIFE_GROUPS = 200  # BCa's acceleration: leave one item out up to this many items, groups of items beyond
TIE_PARAMETER_NAME = {Model.rao_kupper: "theta", Model.davidson: "nu", Model.bt_half: None}


def _readonly(values: npt.ArrayLike, dtype: type) -> npt.NDArray[Any]:
    array: npt.NDArray[Any] = np.array(values, dtype=dtype).reshape(-1)
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class Comparisons:
    """Pairwise outcomes as parallel arrays; systems are indices into `systems`.

    `item` is the bootstrap group of each comparison (an item's comparisons are resampled together); `pair`,
    when given, says which comparisons belong to the same pair of answers (both calls of a pair under
    `--outcome calls`), only used to count the pairs each system took part in. `weight`, when given, is how much
    each comparison counts (1 each by default): a graded pair is a left win weighted by its graded score and
    a right win weighted by the rest (`--outcome graded`). `count`, when given, is how many identical comparisons
    each row stands for (records reduced to counts: the same fit, tallies and bootstrap as the rows, since an
    item's rows are resampled together); `system_pairs` is then how many pairs each system took part in, when
    the rows are calls whose pairs they cannot tell apart (`--outcome calls`).
    """

    systems: tuple[str, ...]
    item: IntArray
    left: IntArray
    right: IntArray
    outcome: npt.NDArray[np.int8]
    pair: IntArray | None = None
    weight: FloatArray | None = None
    count: IntArray | None = None
    system_pairs: IntArray | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "systems", tuple(self.systems))
        for name in ("item", "left", "right"):
            object.__setattr__(self, name, _readonly(getattr(self, name), np.int64))
        object.__setattr__(self, "outcome", _readonly(self.outcome, np.int8))
        if self.pair is not None:
            object.__setattr__(self, "pair", _readonly(self.pair, np.int64))
        if self.weight is not None:
            object.__setattr__(self, "weight", _readonly(self.weight, np.float64))
        for name in ("count", "system_pairs"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, _readonly(getattr(self, name), np.int64))
        n = len(self.item)
        lengths = {len(self.left), len(self.right), len(self.outcome)}
        if self.pair is not None:
            lengths.add(len(self.pair))
        if self.weight is not None:
            lengths.add(len(self.weight))
            if np.any(~np.isfinite(self.weight)) or np.any(self.weight < 0):
                raise ValueError("weight must be finite and not negative")
        if self.count is not None:
            lengths.add(len(self.count))
            if np.any(self.count < 1):
                raise ValueError("count must be at least 1")
        if self.system_pairs is not None and len(self.system_pairs) != len(self.systems):
            raise ValueError("system_pairs must hold one number per system")
        if lengths != {n}:
            raise ValueError("item, left, right, outcome (and pair) must have the same length")
        if len(set(self.systems)) != len(self.systems):
            raise ValueError("system names must be unique")
        if n:
            k = len(self.systems)
            if min(self.left.min(), self.right.min()) < 0 or max(self.left.max(), self.right.max()) >= k:
                raise ValueError("left/right must be indices into systems")
            if np.any(self.left == self.right):
                raise ValueError("a system cannot be compared with itself")
            if not np.isin(self.outcome, (Battle.LEFT, Battle.RIGHT, Battle.TIE)).all():
                raise ValueError("outcome must be 0 (left wins), 1 (right wins) or 2 (tie)")

    @classmethod
    def from_labels(cls, items: Sequence[Any], left: Sequence[str], right: Sequence[str],
                    outcome: Sequence[int] | npt.ArrayLike, *, pairs: Sequence[Any] | None = None,
                    systems: Sequence[str] | None = None, weight: npt.ArrayLike | None = None) -> Comparisons:
        """Build from item labels and system names (systems sorted by name unless given)."""
        names = tuple(systems) if systems is not None else tuple(sorted(set(left) | set(right)))
        index = {name: i for i, name in enumerate(names)}
        unknown = (set(left) | set(right)) - index.keys()
        if unknown:
            raise ValueError(f"systems not listed: {sorted(unknown)}")
        item_ids = np.unique(np.asarray(items, dtype=object).astype(str), return_inverse=True)[1]
        pair_ids = None
        if pairs is not None:
            pair_ids = np.unique(np.asarray(pairs, dtype=object).astype(str), return_inverse=True)[1]
        return cls(systems=names, item=item_ids, left=np.array([index[s] for s in left], dtype=np.int64),
                   right=np.array([index[s] for s in right], dtype=np.int64),
                   outcome=np.asarray(outcome, dtype=np.int8), pair=pair_ids,
                   weight=None if weight is None else np.asarray(weight, dtype=np.float64))

    def __len__(self) -> int:
        return len(self.item)

    @property
    def total(self) -> int:
        """How many comparisons the rows stand for (each row one, unless `count` says more)."""
        return len(self) if self.count is None else int(self.count.sum())

    @property
    def multiplicity(self) -> FloatArray | None:
        """What each row adds to the counts: its weight times its count (None: 1 each)."""
        if self.count is None:
            return self.weight
        return self.count.astype(np.float64) if self.weight is None else self.weight * self.count


@dataclass(frozen=True)
class _Cells:
    """Comparisons aggregated per unordered pair of systems (lo < hi): columns lo wins, hi wins, tie."""

    n_systems: int
    lo: IntArray
    hi: IntArray
    cell: IntArray  # per comparison: 3 * its pair + its column
    counts: FloatArray  # 3 * pairs, the observed totals


def comparison_cells(data: Comparisons) -> _Cells:
    n = len(data.systems)
    lo = np.minimum(data.left, data.right)
    hi = np.maximum(data.left, data.right)
    key = lo * n + hi
    # A lookup table over all n*n keys numbers the observed pairs without sorting the comparisons.
    seen = np.bincount(key, minlength=n * n) > 0
    keys = np.flatnonzero(seen)
    lookup = np.cumsum(seen) - 1
    column = data.outcome.astype(np.int64)
    # A left win is a win of `lo` unless left is the higher index; ties stay ties.
    column = np.where((data.left != lo) & (column != Battle.TIE), 1 - column, column)
    cell = 3 * lookup[key] + column
    counts = np.bincount(cell, weights=data.multiplicity, minlength=3 * len(keys)).astype(np.float64)
    return _Cells(n_systems=n, lo=keys // n, hi=keys % n, cell=cell, counts=counts)


def item_matrix(data: Comparisons, cells: _Cells) -> sparse.csr_matrix:
    """Cells x items: column i holds item i's contribution to every count (what the bootstrap reweights)."""
    _, item_index = np.unique(data.item, return_inverse=True)
    n_items = int(item_index.max()) + 1
    multiplicity = data.multiplicity
    weight = np.ones(len(data), dtype=np.float64) if multiplicity is None else multiplicity
    matrix = sparse.csr_matrix((weight, (cells.cell, item_index)),
                               shape=(len(cells.counts), n_items))
    matrix.sum_duplicates()
    return matrix


def _reaches_all(adjacency: npt.NDArray[np.bool_]) -> bool:
    """Whether system 0 reaches every system along the edges (breadth first, one dense step per level)."""
    reached = np.zeros(adjacency.shape[0], dtype=bool)
    reached[0] = True
    while True:
        grown = reached | adjacency[reached].any(axis=0)
        if grown.all() or (grown == reached).all():
            return bool(grown.all())
        reached = grown


def open_sides(cells: _Cells, counts: FloatArray) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Per system, whether these counts leave its score without a finite upper (lower) bound: it belongs to a
    group that never lost to, nor tied with, the other systems it is connected with (never beat nor tied them),
    so raising (lowering) the whole group always raises the likelihood and only the ridge stops it.

    Edges run from loser to winner (both ways for a tie). The group of system i is what i reaches (the systems
    reaching i, for the lower side). Centring moves the rest of the component the other way, by the group's
    share; a side is called open only for a group of at most half of its component, the side that carries the
    drift (a system that never loses among many that do is open above; the many are not called open below)."""
    n = cells.n_systems
    none = np.zeros(n, dtype=bool)
    a, b, t = counts[0::3], counts[1::3], counts[2::3]
    up, down = (b + t) > 0, (a + t) > 0  # lo lost to or tied with hi; hi lost to or tied with lo
    src = np.concatenate([cells.lo[up], cells.hi[down]])
    dst = np.concatenate([cells.hi[up], cells.lo[down]])
    adjacency = np.zeros((n, n), dtype=bool)
    adjacency[src, dst] = True
    if _reaches_all(adjacency) and _reaches_all(adjacency.T):  # strongly connected: every score bounded
        return none, none.copy()  # (the usual case, checked first without building a sparse graph)
    graph = sparse.csr_matrix((np.ones(src.size), (src, dst)), shape=(n, n))
    n_strong, strong = connected_components(graph, directed=True, connection="strong")
    n_weak, weak = connected_components(graph, directed=True, connection="weak")
    if n_strong == n_weak:  # every component strongly connected
        return none, none.copy()
    # reachability between strongly connected components, by repeated squaring of the condensed graph
    reach = np.eye(n_strong)
    reach[strong[src], strong[dst]] = 1.0
    for _ in range(max(1, math.ceil(math.log2(n_strong)))):
        reach = np.minimum(reach @ reach, 1.0)
    size = np.bincount(strong, minlength=n_strong).astype(np.float64)
    component = np.bincount(weak, minlength=n_weak)[weak]
    above = (reach @ size)[strong]  # systems i reaches (itself included): the group that can rise with it
    below = (size @ reach)[strong]  # systems that reach i: the group that can sink with it
    upper_open = (above < component) & (2 * above <= component)
    lower_open = (below < component) & (2 * below <= component)
    return upper_open, lower_open


def _identical_items(by_cell: sparse.csr_matrix) -> bool:
    """True when every item contributes the same counts, so every bootstrap resample is the data itself."""
    if by_cell.shape[1] < 2:
        return True
    rng = np.random.default_rng(0)
    # two random projections of each item's column: equal columns give equal sums exactly, others almost never
    projections = by_cell.T @ rng.random((by_cell.shape[0], 2))
    return bool(np.all(projections == projections[0]))


# ---------------------------------------------------------------------------------------------------------
# Per-pair log-likelihood terms. d = s_lo - s_hi, tau = the tie parameter on the scale Newton works in
# (eta = log theta for Rao-Kupper, log nu for Davidson). Each returns the summed log-likelihood, the first and
# second derivatives in d per pair and those in tau summed. All three are concave in (s, tau).
# ---------------------------------------------------------------------------------------------------------

# (log-likelihood, d/dd per pair, d/dtau summed, d2/dd2 per pair, d2/dd dtau per pair, d2/dtau2 summed)
_Terms = tuple[float, FloatArray, float, FloatArray, FloatArray, float]


def _terms_bt(d: FloatArray, a: FloatArray, b: FloatArray, t: FloatArray) -> _Terms:
    wa, n = a + 0.5 * t, a + b + t
    p = expit(d)
    ll = float(-(wa @ np.logaddexp(0.0, -d)) - ((n - wa) @ np.logaddexp(0.0, d)))
    return ll, wa - n * p, 0.0, -n * p * (1.0 - p), np.zeros_like(d), 0.0


def _terms_rao_kupper(d: FloatArray, eta: float, a: FloatArray, b: FloatArray, t: FloatArray) -> _Terms:
    # P(lo wins) = sigmoid(d - eta), P(hi wins) = sigmoid(-d - eta), P(tie) = (theta^2 - 1) * both of them.
    u, v = d - eta, -d - eta
    wu, wv = a + t, b + t
    su, sv = expit(u), expit(v)
    qu, qv = su * (1.0 - su), sv * (1.0 - sv)
    em = -math.expm1(-2.0 * eta)  # 1 - exp(-2 eta), > 0 for eta > 0
    total_t = float(t.sum())
    ll = float(-(wu @ np.logaddexp(0.0, -u)) - (wv @ np.logaddexp(0.0, -v)))
    ll += total_t * (2.0 * eta + math.log(em))
    g_d = wu * (1.0 - su) - wv * (1.0 - sv)
    h_dd = -wu * qu - wv * qv
    # the last terms come from log(theta^2 - 1), once per tie
    g_e = float(-(wu @ (1.0 - su)) - (wv @ (1.0 - sv))) + 2.0 * total_t / em
    h_ee = float(h_dd.sum()) - 4.0 * total_t * math.exp(-2.0 * eta) / em**2
    return ll, g_d, g_e, h_dd, wu * qu - wv * qv, h_ee


def _terms_davidson(d: FloatArray, tau: float, a: FloatArray, b: FloatArray, t: FloatArray) -> _Terms:
    # log-lik = a d/2 - b d/2 + t tau - n log(e^{d/2} + e^{-d/2} + e^tau): a log-sum-exp, so concave.
    n = a + b + t
    half = 0.5 * d
    log_z = np.logaddexp(np.logaddexp(half, -half), tau)
    pw, pl, pt = np.exp(half - log_z), np.exp(-half - log_z), np.exp(tau - log_z)
    ll = float(half @ (a - b) + tau * t.sum() - n @ log_z)
    mean_d = 0.5 * (pw - pl)
    g_d = 0.5 * (a - b) - n * mean_d
    g_t = float(t.sum() - n @ pt)
    h_dd = -n * (0.25 * (pw + pl) - mean_d**2)
    h_tt = -float(n @ (pt * (1.0 - pt)))
    h_dt = n * mean_d * pt
    return ll, g_d, g_t, h_dd, h_dt, h_tt


def _pair_terms(model: Model, d: FloatArray, tie: float, a: FloatArray, b: FloatArray,
                t: FloatArray) -> _Terms:
    if model is Model.rao_kupper:
        return _terms_rao_kupper(d, tie, a, b, t)
    if model is Model.davidson:
        return _terms_davidson(d, tie, a, b, t)
    return _terms_bt(d, a, b, t)


@dataclass(frozen=True)
class _Solution:
    scores: FloatArray
    tie: float  # eta (Rao-Kupper), log nu (Davidson); nan when the model has no tie parameter or no ties
    log_likelihood: float
    iterations: int
    converged: bool
    gradient_norm: float


def _initial_tie(model: Model, tie_share: float) -> float:
    # The tie parameter that reproduces the observed tie share between equally strong systems.
    p = min(max(tie_share, 1e-6), 1.0 - 1e-6)
    if model is Model.rao_kupper:
        return math.log((1.0 + p) / (1.0 - p))
    return math.log(2.0 * p / (1.0 - p))


def solve_strengths(model: Model, lo: IntArray, hi: IntArray, n_systems: int, counts: FloatArray, ridge: float,
           start: _Solution | None = None, tol: float = 1e-9, max_iter: int = 100) -> _Solution:
    """Maximise the ridge-penalised log-likelihood by Newton's method with a backtracking line search."""
    a, b, t = counts[0::3], counts[1::3], counts[2::3]
    total = float(counts.sum())
    # Without ties Rao-Kupper and Davidson both reduce to Bradley-Terry (tie parameter at its boundary).
    fit_model = model if model is Model.bt_half or t.sum() > 0 else Model.bt_half
    has_tie = fit_model is not Model.bt_half
    k = n_systems + int(has_tie)
    ones = np.zeros(k)
    ones[:n_systems] = 1.0 / math.sqrt(n_systems)
    gauge = np.outer(ones, ones)  # fixes the free shift of the scores (the likelihood ignores it)
    flat_lo_hi, flat_hi_lo = lo * n_systems + hi, hi * n_systems + lo
    diag = np.arange(n_systems) * (n_systems + 1)

    x = np.zeros(k)
    if start is not None:
        x[:n_systems] = start.scores
        if has_tie:
            x[n_systems] = start.tie if math.isfinite(start.tie) else _initial_tie(fit_model, 0.0)
    elif has_tie:
        x[n_systems] = _initial_tie(fit_model, float(t.sum() / max(counts.sum(), 1.0)))

    def objective(x: FloatArray) -> _Terms:
        s = x[:n_systems]
        tie = x[n_systems] if has_tie else 0.0
        terms = _pair_terms(fit_model, s[lo] - s[hi], tie, a, b, t)
        # The ridge also holds the tie parameter when (nearly) every outcome is a tie.
        return (terms[0] - 0.5 * ridge * (float(s @ s) + tie * tie), *terms[1:])

    def feasible(x: FloatArray) -> bool:
        return fit_model is not Model.rao_kupper or x[n_systems] > 0.0

    terms = objective(x)
    converged, iterations, grad_norm = False, 0, math.inf
    for iterations in range(1, max_iter + 1):  # noqa: B007  (the last value is reported)
        value, g_d, g_t, h_dd, h_dt, h_tt = terms
        grad = np.empty(k)
        grad[:n_systems] = (np.bincount(lo, g_d, n_systems) - np.bincount(hi, g_d, n_systems)
                            - ridge * x[:n_systems])
        hess = np.zeros((k, k))
        hs = np.bincount(flat_lo_hi, h_dd, n_systems * n_systems)
        hs += np.bincount(flat_hi_lo, h_dd, n_systems * n_systems)
        hs = -hs
        hs[diag] = np.bincount(lo, h_dd, n_systems) + np.bincount(hi, h_dd, n_systems) - ridge
        hess[:n_systems, :n_systems] = hs.reshape(n_systems, n_systems)
        if has_tie:
            grad[n_systems] = g_t - ridge * x[n_systems]
            cross = np.bincount(lo, h_dt, n_systems) - np.bincount(hi, h_dt, n_systems)
            hess[n_systems, :n_systems] = hess[:n_systems, n_systems] = cross
            hess[n_systems, n_systems] = h_tt - ridge
        grad_norm = float(np.abs(grad).max())
        try:
            step = np.linalg.solve(gauge - hess, grad)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(gauge - hess, grad, rcond=None)[0]
        size = float(np.abs(step).max())
        # Newton converges quadratically, so the remaining error is far below `tol`; a gradient at the level
        # of rounding in the summed counts cannot be improved on.
        if size < tol or grad_norm < 1e-9 * max(1.0, total):
            converged = True
            break
        decrement = float(grad @ step)
        # Close to the maximum the objective's own rounding would stall a line search: take full steps.
        near = decrement < 1e-8 * max(1.0, abs(value))
        alpha = 1.0
        for _ in range(60):
            trial = x + alpha * step
            trial[:n_systems] -= trial[:n_systems].sum() / n_systems
            if feasible(trial):
                trial_terms = objective(trial)
                if near or trial_terms[0] >= value + 1e-4 * alpha * decrement:
                    break
            alpha *= 0.5
        else:
            converged = size < 1e-6  # rounding blocks any ascent only right next to the maximum
            break
        x, terms = trial, trial_terms
    tie = float(x[n_systems]) if has_tie else math.nan
    return _Solution(scores=x[:n_systems].copy(), tie=tie, log_likelihood=float(terms[0]),
                     iterations=iterations, converged=converged, gradient_norm=grad_norm)


# (log-likelihood per fit, d/dd per fit and pair, d/dtau per fit, d2/dd2, d2/dd dtau per fit and pair, d2/dtau2
# per fit): the terms above for many fits at once, one row per fit (tau a column)
_BatchTerms = tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]


def _batch_terms(model: Model, d: FloatArray, tau: FloatArray, a: FloatArray, b: FloatArray,
                 t: FloatArray) -> _BatchTerms:
    if model is Model.rao_kupper:
        eta = tau[:, None]
        u, v = d - eta, -d - eta
        wu, wv = a + t, b + t
        su, sv = expit(u), expit(v)
        qu, qv = su * (1.0 - su), sv * (1.0 - sv)
        em = -np.expm1(-2.0 * tau)
        total_t = t.sum(axis=1)
        ll = -(wu * np.logaddexp(0.0, -u)).sum(axis=1) - (wv * np.logaddexp(0.0, -v)).sum(axis=1)
        ll += total_t * (2.0 * tau + np.log(em))
        h_dd = -wu * qu - wv * qv
        g_e = -(wu * (1.0 - su)).sum(axis=1) - (wv * (1.0 - sv)).sum(axis=1) + 2.0 * total_t / em
        h_ee = h_dd.sum(axis=1) - 4.0 * total_t * np.exp(-2.0 * tau) / em**2
        return ll, wu * (1.0 - su) - wv * (1.0 - sv), g_e, h_dd, wu * qu - wv * qv, h_ee
    if model is Model.davidson:
        n = a + b + t
        half = 0.5 * d
        log_z = np.logaddexp(np.logaddexp(half, -half), tau[:, None])
        pw, pl, pt = np.exp(half - log_z), np.exp(-half - log_z), np.exp(tau[:, None] - log_z)
        ll = (half * (a - b)).sum(axis=1) + tau * t.sum(axis=1) - (n * log_z).sum(axis=1)
        mean_d = 0.5 * (pw - pl)
        h_dd = -n * (0.25 * (pw + pl) - mean_d**2)
        return (ll, 0.5 * (a - b) - n * mean_d, t.sum(axis=1) - (n * pt).sum(axis=1), h_dd, n * mean_d * pt,
                -(n * (pt * (1.0 - pt))).sum(axis=1))
    wa, n = a + 0.5 * t, a + b + t
    p = expit(d)
    ll = -(wa * np.logaddexp(0.0, -d)).sum(axis=1) - ((n - wa) * np.logaddexp(0.0, d)).sum(axis=1)
    zero = np.zeros(d.shape[0])
    return ll, wa - n * p, zero, -n * p * (1.0 - p), np.zeros_like(d), zero


@dataclass(frozen=True)
class _Solutions:
    """solve_strengths's results for many fits, one row (or entry) per fit."""

    scores: FloatArray
    tie: FloatArray
    iterations: npt.NDArray[np.int64]
    converged: npt.NDArray[np.bool_]


def solve_strengths_batch(model: Model, lo: IntArray, hi: IntArray, n_systems: int, counts: FloatArray,
                          ridge: float, start: _Solution, tol: float = 1e-9, max_iter: int = 100) -> _Solutions:
    """solve_strengths for many count vectors (rows of `counts`) from one start: each fit takes its own Newton
    steps, line search and stopping, as it would alone; the fits still moving are evaluated together."""
    fits = counts.shape[0]
    scores = np.empty((fits, n_systems))
    tie = np.full(fits, math.nan)
    iterations = np.zeros(fits, dtype=np.int64)
    converged = np.zeros(fits, dtype=bool)
    tied = counts[:, 2::3].sum(axis=1) > 0
    # Without ties Rao-Kupper and Davidson both reduce to Bradley-Terry (tie parameter at its boundary).
    groups = [(model, tied), (Model.bt_half, ~tied)] if model is not Model.bt_half else [(model, tied | ~tied)]
    for fit_model, member in groups:
        if member.any():
            part = _solve_group(fit_model, lo, hi, n_systems, counts[member], ridge, start, tol, max_iter)
            scores[member], tie[member], iterations[member], converged[member] = part
    return _Solutions(scores, tie, iterations, converged)


def _bincount_rows(index: IntArray, values: FloatArray, size: int) -> FloatArray:
    """np.bincount(index, row, size) for every row of `values`, summed in the same order as one row alone: a
    fit's numbers never depend on which other fits share its batch."""
    rows = values.shape[0]
    at = (index[None, :] + size * np.arange(rows)[:, None]).ravel()
    summed: FloatArray = np.asarray(np.bincount(at, values.ravel(), rows * size), dtype=np.float64)
    return summed.reshape(rows, size)


def _solve_group(model: Model, lo: IntArray, hi: IntArray, n_systems: int, counts: FloatArray, ridge: float,
                 start: _Solution, tol: float, max_iter: int
                 ) -> tuple[FloatArray, FloatArray, npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    fits = counts.shape[0]
    a, b, t = counts[:, 0::3], counts[:, 1::3], counts[:, 2::3]
    total = counts.sum(axis=1)
    has_tie = model is not Model.bt_half
    k = n_systems + int(has_tie)
    ones = np.zeros(k)
    ones[:n_systems] = 1.0 / math.sqrt(n_systems)
    gauge = np.outer(ones, ones)
    flat_lo_hi, flat_hi_lo = lo * n_systems + hi, hi * n_systems + lo
    diag = np.arange(n_systems) * (n_systems + 1)

    x = np.zeros((fits, k))
    x[:, :n_systems] = start.scores
    if has_tie:
        x[:, n_systems] = start.tie if math.isfinite(start.tie) else _initial_tie(model, 0.0)

    def objective(x: FloatArray, rows: IntArray) -> _BatchTerms:
        s = x[:, :n_systems]
        tau = x[:, n_systems] if has_tie else np.zeros(len(rows))
        terms = _batch_terms(model, s[:, lo] - s[:, hi], tau, a[rows], b[rows], t[rows])
        return (terms[0] - 0.5 * ridge * ((s * s).sum(axis=1) + tau * tau), *terms[1:])

    terms = list(objective(x, np.arange(fits)))
    iterations = np.full(fits, max_iter, dtype=np.int64)
    converged = np.zeros(fits, dtype=bool)
    active = np.arange(fits)
    for iteration in range(1, max_iter + 1):
        if not active.size:
            break
        xa = x[active]
        value, g_d, g_t, h_dd, h_dt, h_tt = (term[active] for term in terms)
        grad = np.empty((active.size, k))
        grad[:, :n_systems] = (_bincount_rows(lo, g_d, n_systems) - _bincount_rows(hi, g_d, n_systems)
                               - ridge * xa[:, :n_systems])
        hs = _bincount_rows(flat_lo_hi, h_dd, n_systems * n_systems)
        hs += _bincount_rows(flat_hi_lo, h_dd, n_systems * n_systems)
        hs = -hs
        hs[:, diag] = _bincount_rows(lo, h_dd, n_systems) + _bincount_rows(hi, h_dd, n_systems) - ridge
        hess = np.zeros((active.size, k, k))
        hess[:, :n_systems, :n_systems] = hs.reshape(-1, n_systems, n_systems)
        if has_tie:
            grad[:, n_systems] = g_t - ridge * xa[:, n_systems]
            cross = _bincount_rows(lo, h_dt, n_systems) - _bincount_rows(hi, h_dt, n_systems)
            hess[:, n_systems, :n_systems] = hess[:, :n_systems, n_systems] = cross
            hess[:, n_systems, n_systems] = h_tt - ridge
        grad_norm = np.abs(grad).max(axis=1)
        system = gauge - hess
        try:
            step = np.linalg.solve(system, grad[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            step = np.empty_like(grad)
            for i in range(active.size):
                try:
                    step[i] = np.linalg.solve(system[i], grad[i])
                except np.linalg.LinAlgError:
                    step[i] = np.linalg.lstsq(system[i], grad[i], rcond=None)[0]
        size = np.abs(step).max(axis=1)
        stop = (size < tol) | (grad_norm < 1e-9 * np.maximum(1.0, total[active]))
        decrement = (grad * step).sum(axis=1)
        near = decrement < 1e-8 * np.maximum(1.0, np.abs(value))
        alpha = np.ones(active.size)
        searching = ~stop
        accepted = np.zeros(active.size, dtype=bool)
        trial = xa.copy()
        trial_terms = [term.copy() for term in (value, g_d, g_t, h_dd, h_dt, h_tt)]
        for _ in range(60):
            if not searching.any():
                break
            rows = np.flatnonzero(searching)
            candidate = xa[rows] + alpha[rows, None] * step[rows]
            candidate[:, :n_systems] -= candidate[:, :n_systems].sum(axis=1, keepdims=True) / n_systems
            ok = candidate[:, n_systems] > 0.0 if model is Model.rao_kupper else np.ones(rows.size, dtype=bool)
            if ok.any():
                good = rows[ok]
                found = objective(candidate[ok], active[good])
                take = near[good] | (found[0] >= value[good] + 1e-4 * alpha[good] * decrement[good])
                done_rows = good[take]
                trial[done_rows] = candidate[ok][take]
                for term, new in zip(trial_terms, found, strict=True):
                    term[done_rows] = new[take]
                accepted[done_rows] = True
                searching[done_rows] = False
            alpha[searching] *= 0.5
        # a search that found no ascent in 60 halvings ends the fit where it is (rounding next to the maximum)
        failed = ~stop & ~accepted
        ended = stop | failed
        finished = active[ended]
        iterations[finished] = iteration
        converged[active[stop]] = True
        converged[active[failed]] = size[failed] < 1e-6
        moved = active[accepted]
        x[moved] = trial[accepted]
        for term, new in zip(terms, trial_terms, strict=True):
            term[moved] = new[accepted]
        active = active[~ended]
    return x[:, :n_systems], x[:, n_systems] if has_tie else np.full(fits, math.nan), iterations, converged


def _public_tie(model: Model, tie: float) -> float | None:
    """The tie parameter on its usual scale: theta = e^eta (>= 1), nu = e^tau (>= 0)."""
    if model is Model.bt_half:
        return None
    if not math.isfinite(tie):  # no ties observed: the boundary value
        return 1.0 if model is Model.rao_kupper else 0.0
    return math.exp(tie)


def outcome_probabilities(model: Model | str, score_a: float, score_b: float,
                          tie_parameter: float | None) -> tuple[float, float, float]:
    """P(a beats b), P(tie), P(b beats a) under the fitted model (bt-half predicts no ties)."""
    model = Model(model)
    d = score_a - score_b
    if model is Model.rao_kupper:
        theta = 1.0 if tie_parameter is None else tie_parameter
        win = 1.0 / (1.0 + theta * math.exp(-d))
        loss = 1.0 / (1.0 + theta * math.exp(d))
        return win, 1.0 - win - loss, loss
    if model is Model.davidson:
        nu = 0.0 if tie_parameter is None else tie_parameter
        ea, eb = math.exp(0.5 * d), math.exp(-0.5 * d)
        z = ea + eb + nu
        return ea / z, nu / z, eb / z
    win = float(expit(d))
    return win, 0.0, 1.0 - win


# ---------------------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------------------


def elo(score: float) -> float:
    """A centred log-strength on the familiar Elo-like scale (1000 at the mean, 400 per factor of 10)."""
    return ELO_CENTRE + ELO_PER_UNIT * score


@dataclass(frozen=True)
class SystemScore:
    """One system's fit. `low`/`high` are None when there is no interval, or when that side is open
    (`low_open`/`high_open`: the resamples leave it unbounded, so a finite limit would be the ridge's).
    `never_loses`/`never_wins`: in the data itself its group never lost (won) against the rest, so the score
    is held finite only by the ridge."""

    system: str
    score: float
    low: float | None
    high: float | None
    rank: int
    rank_low: int
    rank_high: int
    wins: int
    ties: int
    losses: int
    pairs: int
    low_open: bool = False
    high_open: bool = False
    never_loses: bool = False
    never_wins: bool = False

    @property
    def rating(self) -> float:
        return elo(self.score)

    @property
    def rating_low(self) -> float | None:
        return None if self.low is None else elo(self.low)

    @property
    def rating_high(self) -> float | None:
        return None if self.high is None else elo(self.high)

    def to_dict(self) -> dict[str, Any]:
        return {
            "system": self.system, "score": self.score, "low": self.low, "high": self.high,
            "rating": self.rating, "rating_low": self.rating_low, "rating_high": self.rating_high,
            "rank": self.rank, "rank_low": self.rank_low, "rank_high": self.rank_high,
            "wins": self.wins, "ties": self.ties, "losses": self.losses, "pairs": self.pairs,
            "open": {"low": self.low_open, "high": self.high_open},
            "score_set_by_ridge": self.never_loses or self.never_wins,
        }


@dataclass(frozen=True)
class Convergence:
    """How the point fit and the bootstrap refits ended."""

    converged: bool
    iterations: int
    gradient_norm: float
    log_likelihood: float
    connected: bool  # False: some systems were never compared, even indirectly; only the ridge ties them
    components: int
    bootstrap_rounds: int = 0
    bootstrap_not_converged: int = 0
    bootstrap_max_iterations: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "converged": self.converged, "iterations": self.iterations, "gradient_norm": self.gradient_norm,
            "log_likelihood": self.log_likelihood, "connected": self.connected, "components": self.components,
            "bootstrap_rounds": self.bootstrap_rounds,
            "bootstrap_not_converged": self.bootstrap_not_converged,
            "bootstrap_max_iterations": self.bootstrap_max_iterations,
        }


@dataclass(frozen=True)
class Ranking(Displayable):
    """Systems sorted by fitted score (best first), with bootstrap intervals and rank ranges."""

    model: Model
    rows: tuple[SystemScore, ...]
    tie_parameter: float | None
    tie_low: float | None
    tie_high: float | None
    comparisons: int
    items: int
    rounds: int
    seed: int | None
    confidence: float
    ridge: float
    convergence: Convergence
    interval: IntervalMethod = IntervalMethod.percentile
    no_interval: str | None = None  # why the bootstrap gives no interval although rounds were asked for

    @property
    def tie_parameter_name(self) -> str | None:
        return TIE_PARAMETER_NAME[self.model]

    def probabilities(self, a: str, b: str) -> tuple[float, float, float]:
        """Predicted P(a wins), P(tie), P(b wins) for one comparison of systems a and b."""
        scores = {row.system: row.score for row in self.rows}
        for name in (a, b):
            if name not in scores:
                raise KeyError(f"unknown system {name!r}")
        return outcome_probabilities(self.model, scores[a], scores[b], self.tie_parameter)

    def to_frame(self, backend: str = "polars") -> Any:
        """One row per system, best first (score, interval, rating, rank range, wins/ties/losses): polars, or
        pandas with `backend="pandas"`."""
        return documents.frame([row.to_dict() for row in self.rows], backend)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model.value,
            "systems": [row.to_dict() for row in self.rows],
            "tie_parameter": None if self.tie_parameter is None else {
                "name": self.tie_parameter_name, "value": self.tie_parameter,
                "low": self.tie_low, "high": self.tie_high,
            },
            "comparisons": self.comparisons,
            "items": self.items,
            "bootstrap": {"rounds": self.rounds, "seed": self.seed, "unit": "item",
                          "method": self.interval.value, "no_interval": self.no_interval,
                          "few_items": 0 < self.items < FEW_ITEMS},
            "confidence": self.confidence,
            "ridge": self.ridge,
            "scale": {"elo_per_unit": ELO_PER_UNIT, "elo_centre": ELO_CENTRE},
            "convergence": self.convergence.to_dict(),
        }


# ---------------------------------------------------------------------------------------------------------
# Fitting and bootstrap
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fit:
    """A point fit: centred log-strengths per system and the tie parameter on its usual scale."""

    model: Model
    systems: tuple[str, ...]
    scores: FloatArray
    tie_parameter: float | None
    log_likelihood: float
    iterations: int
    converged: bool
    gradient_norm: float


@functools.cache
def _blas_controller() -> ThreadpoolController:
    # finding the loaded BLAS libraries costs about 2 ms (threadpool_limits does it on every entry, more than a
    # whole fit): found once, the BLAS numpy loaded at import, the one the solves use
    return ThreadpoolController()


def one_blas_thread() -> Any:
    """A context in which the BLAS runs on one thread (systems + 1 unknowns are too few to share out)."""
    return _blas_controller().limit(limits=1, user_api="blas")


def fit(data: Comparisons, model: Model | str = Model.rao_kupper, *, ridge: float = DEFAULT_RIDGE) -> Fit:
    """Fit one model to all comparisons (no intervals)."""
    model = Model(model)
    cells = comparison_cells(data)
    with one_blas_thread():
        sol = solve_strengths(model, cells.lo, cells.hi, cells.n_systems, cells.counts, ridge)
    return Fit(model=model, systems=data.systems, scores=sol.scores,
               tie_parameter=_public_tie(model, sol.tie),
               log_likelihood=sol.log_likelihood, iterations=sol.iterations, converged=sol.converged,
               gradient_norm=sol.gradient_norm)


@dataclass(frozen=True)
class BootstrapDraws:
    """Scores (rounds x systems) and tie parameters of every bootstrap refit."""

    scores: FloatArray
    tie: FloatArray
    not_converged: int
    max_iterations: int
    upper_open: npt.NDArray[np.bool_] | None = None  # rounds x systems: the resample left that side unbounded
    lower_open: npt.NDArray[np.bool_] | None = None


def _bootstrap(model: Model, cells: _Cells, by_cell: sparse.csr_matrix, point: _Solution, ridge: float,
               rounds: int, rng: np.random.Generator) -> BootstrapDraws:
    n_items = by_cell.shape[1]
    scores = np.empty((rounds, cells.n_systems))
    tie = np.empty(rounds)
    upper_open = np.zeros((rounds, cells.n_systems), dtype=bool)
    lower_open = np.zeros((rounds, cells.n_systems), dtype=bool)
    not_converged, max_iterations = 0, 0
    # numpy draws bounds below 2^32 through one 32-bit path whatever the dtype: int32 draws are the int64 ones
    # (a test holds them equal), in half the memory, which the draws of many items dominate
    dtype = np.int32 if n_items < 2**31 else np.int64
    # numpy's generator fills arrays from one stream in order, so the draws do not depend on the batch's size
    batch = max(1, min(_BATCH, _DRAW_BYTES // (np.dtype(dtype).itemsize * max(n_items, 1))))
    for start in range(0, rounds, batch):
        size = min(batch, rounds - start)
        draws = rng.integers(0, n_items, size=(size, n_items), dtype=dtype)
        # how often each round drew each item (a multinomial resample of the items), then the counts it gives:
        # sums of integers, exact in any order; the batch's rounds are then fitted together, each as alone
        counts = np.empty((size, len(cells.counts)))
        for r in range(size):
            counts[r] = by_cell @ np.bincount(draws[r], minlength=n_items).astype(np.float64)
        sols = solve_strengths_batch(model, cells.lo, cells.hi, cells.n_systems, counts, ridge, start=point)
        scores[start: start + size] = sols.scores
        tie[start: start + size] = sols.tie
        for r in range(size):
            upper_open[start + r], lower_open[start + r] = open_sides(cells, counts[r])
        not_converged += int((~sols.converged).sum())
        max_iterations = max(max_iterations, int(sols.iterations.max()))
    return BootstrapDraws(scores=scores, tie=tie, not_converged=not_converged, max_iterations=max_iterations,
                          upper_open=upper_open, lower_open=lower_open)


def _jackknife(model: Model, cells: _Cells, by_cell: sparse.csr_matrix, point: _Solution, ridge: float,
               seed: int | None) -> FloatArray:
    """Refits with one item (or, beyond JACKKNIFE_GROUPS items, one random group of items) left out: rows of
    scores with the tie parameter (fitting scale) appended."""
    n_items = by_cell.shape[1]
    groups = min(n_items, JACKKNIFE_GROUPS)
    member = np.arange(n_items) if groups == n_items else np.random.default_rng(seed).permutation(n_items) % groups
    indicator = sparse.csr_matrix((np.ones(n_items), (np.arange(n_items), member)), shape=(n_items, groups))
    left_out = np.asarray((by_cell @ indicator).todense())
    rows = np.empty((groups, cells.n_systems + 1))
    for g in range(groups):
        sol = solve_strengths(model, cells.lo, cells.hi, cells.n_systems, cells.counts - left_out[:, g], ridge,
                              start=point)
        rows[g, :-1] = sol.scores
        rows[g, -1] = sol.tie
    rows[:, -1] = _tie_or_boundary(model, rows[:, -1])
    return rows


def _tie_or_boundary(model: Model, tie: FloatArray) -> FloatArray:
    """Tie parameters on the fitting scale, with fits that saw no ties (nan) at the boundary: theta = 1
    (eta = 0) for Rao-Kupper, nu = e^-50 (about 0, but finite for quantiles) for Davidson; 0 for bt-half."""
    if model is Model.bt_half:
        return np.zeros_like(tie)
    return np.nan_to_num(tie, nan=0.0 if model is Model.rao_kupper else -50.0)


def _acceleration(jack: FloatArray) -> FloatArray:
    """BCa's acceleration per column from jackknife estimates (Efron 1987); 0 where it is undefined."""
    with np.errstate(invalid="ignore"):
        u = jack.mean(axis=0) - jack
        num = (u**3).sum(axis=0)
        den = 6.0 * (u**2).sum(axis=0) ** 1.5
    ok = np.isfinite(num) & np.isfinite(den) & (den > 0)
    return np.where(ok, num / np.where(ok, den, 1.0), 0.0)


def _bca_levels(boot: FloatArray, estimate: FloatArray, acceleration: FloatArray, alpha: float) -> FloatArray:
    """Bias-corrected and accelerated percentile levels (2 x columns): the quantiles BCa reads off the draws."""
    rounds = boot.shape[0]
    share = ((boot < estimate).sum(axis=0) + (boot <= estimate).sum(axis=0)) / (2.0 * rounds)
    z0 = ndtri(np.clip(share, 0.5 / rounds, 1.0 - 0.5 / rounds))  # a draw-free tail would make it infinite
    levels = np.empty((2, boot.shape[1]))
    for row, z in enumerate((ndtri(alpha), ndtri(1.0 - alpha))):
        levels[row] = ndtr(z0 + (z0 + z) / (1.0 - acceleration * (z0 + z)))
    return levels


def _bca_limits(boot: FloatArray, estimate: FloatArray, acceleration: FloatArray, alpha: float) -> FloatArray:
    """Bias-corrected and accelerated percentile limits (2 x columns) of bootstrap draws."""
    levels = _bca_levels(boot, estimate, acceleration, alpha)
    limits = np.empty_like(levels)
    for row in range(2):
        for col in range(boot.shape[1]):
            limits[row, col] = np.quantile(boot[:, col], levels[row, col])
    return limits


_SAME_SCORE = 1e-9  # systems with identical counts get scores equal up to rounding: the same rank


def rank_of(scores: FloatArray) -> npt.NDArray[np.int64]:
    """Competition ranks, 1 = best, along the last axis (equal scores share the better rank)."""
    s = np.asarray(scores)
    ranks: npt.NDArray[np.int64] = (s[..., None, :] > s[..., :, None] + _SAME_SCORE).sum(axis=-1) + 1
    return ranks


def fit_ranking(data: Comparisons, model: Model | str = Model.rao_kupper, *, rounds: int = DEFAULT_ROUNDS,
         seed: int | None = 0, confidence: float = 0.95, ridge: float = DEFAULT_RIDGE,
         interval: IntervalMethod | str = IntervalMethod.percentile) -> Ranking:
    """Fit `model`, bootstrap over items `rounds` times, and return the systems sorted by score.

    Score intervals are percentile (default) or BCa ones; rank ranges are always percentiles of the ranks.
    """
    model = Model(model)
    interval = IntervalMethod(interval)
    if len(data) == 0:
        raise ValueError("no comparisons to rank")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1")
    cells = comparison_cells(data)
    n = cells.n_systems
    with one_blas_thread():
        point = solve_strengths(model, cells.lo, cells.hi, n, cells.counts, ridge)

    adjacency = sparse.coo_matrix((np.ones(len(cells.lo)), (cells.lo, cells.hi)), shape=(n, n))
    components = int(connected_components(adjacency, directed=False)[0])

    alpha = (1.0 - confidence) / 2.0
    by_cell = item_matrix(data, cells)
    items = by_cell.shape[1]
    # one item, or items that are all alike: every resample is the data itself, so there is no interval
    no_interval = None
    if rounds > 0 and _identical_items(by_cell):
        no_interval = ("one item: resampling items cannot vary the data" if items == 1 else
                       f"all {items} items hold the same comparisons and outcomes: every resample is the data "
                       "itself")
    point_upper, point_lower = open_sides(cells, cells.counts)
    low_open = high_open = np.zeros(n, dtype=bool)
    if rounds > 0 and no_interval is None:
        # A solve of systems + 1 unknowns is too small for threads: a multithreaded BLAS only contends
        # (measured: 12 ms instead of 0.3 ms per solve on a busy 2-core machine).
        with one_blas_thread():
            draws = _bootstrap(model, cells, by_cell, point, ridge, rounds, np.random.default_rng(seed))
        ranks = rank_of(draws.scores)
        rank_low, rank_high = np.quantile(ranks, [alpha, 1.0 - alpha], axis=0, method="inverted_cdf")
        # Scores and the tie parameter (on its fitting scale) side by side, as the columns of one array.
        boot = np.column_stack([draws.scores, _tie_or_boundary(model, draws.tie)])
        estimate = np.append(point.scores, _tie_or_boundary(model, np.array([point.tie])))
        if interval is IntervalMethod.bca:
            with one_blas_thread():
                jack = _jackknife(model, cells, by_cell, point, ridge, seed)
            acceleration = _acceleration(jack)
            levels = _bca_levels(boot, estimate, acceleration, alpha)
            limits = _bca_limits(boot, estimate, acceleration, alpha)
        else:
            levels = np.array([[alpha], [1.0 - alpha]]) * np.ones((2, n + 1))
            limits = np.quantile(boot, [alpha, 1.0 - alpha], axis=0)
        low, high = limits[0, :n], limits[1, :n]
        # a limit read where resamples left that side unbounded is the ridge's, not the data's: open
        assert draws.upper_open is not None and draws.lower_open is not None
        high_open = draws.upper_open.mean(axis=0) > 1.0 - levels[1, :n]
        low_open = draws.lower_open.mean(axis=0) > levels[0, :n]
        tie_low, tie_high = (_public_tie(model, float(v)) or 0.0 for v in limits[:, n])
    else:
        draws = BootstrapDraws(np.empty((0, n)), np.empty(0), 0, 0)
        low = high = np.full(n, math.nan)
        rank_low = rank_high = rank_of(point.scores)
        tie_low = tie_high = math.nan

    # in the data itself a separated system's every resample is separated too: both limits would be the ridge's
    separated = point_upper | point_lower
    high_open, low_open = high_open | point_upper, low_open | point_lower

    def bound(value: float, is_open: bool, i: int) -> float | None:
        return None if is_open or separated[i] or math.isnan(value) else float(value)

    a, b, t = cells.counts[0::3], cells.counts[1::3], cells.counts[2::3]
    wins = np.bincount(cells.lo, a, n) + np.bincount(cells.hi, b, n)
    losses = np.bincount(cells.lo, b, n) + np.bincount(cells.hi, a, n)
    ties = np.bincount(cells.lo, t, n) + np.bincount(cells.hi, t, n)
    pairs = _pairs_per_system(data)
    point_rank = rank_of(point.scores)

    order = sorted(range(n), key=lambda i: (point_rank[i], data.systems[i]))
    rows = tuple(
        SystemScore(system=data.systems[i], score=float(point.scores[i]),
                    low=bound(low[i], low_open[i], i), high=bound(high[i], high_open[i], i),
                    rank=int(point_rank[i]), rank_low=int(rank_low[i]), rank_high=int(rank_high[i]),
                    wins=round(wins[i]), ties=round(ties[i]), losses=round(losses[i]), pairs=int(pairs[i]),
                    low_open=bool(low_open[i]), high_open=bool(high_open[i]),
                    never_loses=bool(point_upper[i]), never_wins=bool(point_lower[i]))
        for i in order
    )
    tie_parameter = _public_tie(model, point.tie)
    return Ranking(
        model=model, rows=rows, tie_parameter=tie_parameter,
        tie_low=None if tie_parameter is None or math.isnan(tie_low) else tie_low,
        tie_high=None if tie_parameter is None or math.isnan(tie_high) else tie_high,
        # weighted outcomes (a graded pair as a weighted win and a weighted loss) count their pairs once
        comparisons=data.total if data.weight is None or data.pair is None else int(np.unique(data.pair).size),
        items=items, rounds=rounds, seed=seed, no_interval=no_interval,
        confidence=confidence, ridge=ridge, interval=interval,
        convergence=Convergence(
            converged=point.converged, iterations=point.iterations, gradient_norm=point.gradient_norm,
            log_likelihood=point.log_likelihood, connected=components == 1, components=components,
            bootstrap_rounds=rounds, bootstrap_not_converged=draws.not_converged,
            bootstrap_max_iterations=draws.max_iterations,
        ),
    )


def _pairs_per_system(data: Comparisons) -> npt.NDArray[np.int64]:
    n = len(data.systems)
    if data.system_pairs is not None:
        return np.asarray(data.system_pairs, dtype=np.int64)
    if data.pair is None:
        per_row = data.count
        return (np.bincount(data.left, weights=per_row, minlength=n)
                + np.bincount(data.right, weights=per_row, minlength=n)).astype(np.int64)
    _, first = np.unique(data.pair, return_index=True)
    return np.bincount(data.left[first], minlength=n) + np.bincount(data.right[first], minlength=n)
