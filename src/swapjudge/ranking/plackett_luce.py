"""Strengths from best-of-N calls: a Plackett-Luce fit with slot effects (Luce's choice model when the calls give
picks only), by maximum likelihood, with intervals from the item bootstrap.

A call that shows systems s_1..s_N in slots 1..N and picks slot k has probability
exp(theta[s_k] + gamma[k]) / sum_j exp(theta[s_j] + gamma[j]): theta is each system's log-worth, gamma each slot's
pull. A ranking adds one such choice per place among the slots not yet ranked (the Plackett-Luce model), each with
the same slot pull. Both theta and gamma are reported centred (mean 0): only differences are identified. The slot
pull is identified only when systems move between slots (rotations); when they do not, the fit says so and fits
the strengths alone, which then carry whatever pull the fixed order had.

Calls of one item are not independent (the same answers, shown N times), so the intervals resample items.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from swapjudge.errors import ArgumentError, InputError
from swapjudge.reading.listwise import ListwiseCall

BLOCK_CELLS = 1 << 18  # fits x rows x slots x K^2 in one Newton block: below OpenBLAS's threading threshold
DEFAULT_RIDGE = 0.01  # a weak Gaussian prior on the centred log-worths: finite when a system is never picked


@dataclass(frozen=True)
class StrengthEstimate:
    """One log-worth with its bootstrap percentile interval (None without bootstrap rounds)."""

    value: float
    low: float | None
    high: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high}


@dataclass(frozen=True)
class PlackettLuce:
    """A fitted Plackett-Luce / Luce model. `strengths`: system to centred log-worth; `slot_effects`: one centred
    log-worth per slot (None when the slots cannot be told from the systems); `model` "luce" (picks only) or
    "plackett_luce" (rankings used)."""

    strengths: dict[str, StrengthEstimate]
    slot_effects: tuple[StrengthEstimate, ...] | None
    model: str
    calls: int
    items: int
    rounds: int
    confidence: float
    note: str | None = None

    def order(self) -> list[str]:
        """Systems from strongest to weakest."""
        return sorted(self.strengths, key=lambda s: (-self.strengths[s].value, s))

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "scale": "log-worth, mean 0",
                "strengths": {s: self.strengths[s].to_dict() for s in self.order()},
                "slot_effects": None if self.slot_effects is None else [e.to_dict() for e in self.slot_effects],
                "calls": self.calls, "items": self.items, "bootstrap": {
                    "rounds": self.rounds, "confidence": self.confidence, "resampled": "items",
                    "interval": "percentile"},
                "note": self.note}


@dataclass(frozen=True)
class ChoiceData:
    """The calls as weighted choices: unique choice rows (candidates' system and slot indices, -1 padded, and the
    chosen column) and the count of each row in each item, so the bootstrap reweights rows, never refits rows."""

    systems: tuple[str, ...]
    n_slots: int
    system_index: np.ndarray  # (rows, N) int, -1 where padded
    slot_index: np.ndarray  # (rows, N) int
    chosen: np.ndarray  # (rows,) column of the chosen candidate
    counts: Any  # scipy.sparse (items, rows)
    calls: int
    uses_ranking: bool

    @property
    def weights(self) -> np.ndarray:
        return np.asarray(self.counts.sum(axis=0)).ravel().astype(float)


def choice_data(calls: Sequence[ListwiseCall], *, use_ranking: bool = True) -> ChoiceData:
    """The stages of each usable call: its pick, or each place of its ranking when it has one (`use_ranking`)."""
    from scipy import sparse

    usable = [c for c in calls if c.pick is not None]
    if not usable:
        raise InputError("no call has a usable pick: nothing to fit")
    systems = tuple(sorted({s for c in usable for s in c.slots}))
    n = max(c.n for c in usable)
    index = {s: i for i, s in enumerate(systems)}
    items = {it: i for i, it in enumerate(dict.fromkeys(c.item for c in usable))}
    rows: dict[tuple[tuple[int, ...], tuple[int, ...], int], int] = {}
    entries: dict[tuple[int, int], int] = {}
    ranked = False
    for call in usable:
        order = list(call.ranking) if use_ranking and call.ranking is not None and len(call.ranking) > 1 else None
        stages = order if order is not None else [call.pick]
        ranked = ranked or order is not None
        remaining = list(range(1, call.n + 1))
        for place in stages[: call.n - 1]:
            assert place is not None
            cand_sys = tuple(index[call.slots[s - 1]] for s in remaining) + (-1,) * (n - len(remaining))
            cand_slot = tuple(s - 1 for s in remaining) + (-1,) * (n - len(remaining))
            key = (cand_sys, cand_slot, remaining.index(place))
            row = rows.setdefault(key, len(rows))
            cell = (items[call.item], row)
            entries[cell] = entries.get(cell, 0) + 1
            remaining.remove(place)
    keys = list(rows)
    cells = np.array(list(entries), dtype=np.int64).reshape(-1, 2)
    counts = sparse.csr_matrix((np.array(list(entries.values()), dtype=float), (cells[:, 0], cells[:, 1])),
                               shape=(len(items), len(keys)))
    return ChoiceData(systems, n, np.array([k[0] for k in keys], dtype=np.int64),
                      np.array([k[1] for k in keys], dtype=np.int64), np.array([k[2] for k in keys], dtype=np.int64),
                      counts, len(usable), ranked)


def _design(data: ChoiceData, slots: bool) -> np.ndarray:
    """(rows, N, K) one-hot design in the free parameters: systems 2..S, then slots 2..N (the first of each is the
    reference; the fit is centred afterwards)."""
    s, n = len(data.systems), data.n_slots
    k = (s - 1) + ((n - 1) if slots else 0)
    x = np.zeros((*data.system_index.shape, k))
    r, j = np.nonzero(data.system_index > 0)
    x[r, j, data.system_index[r, j] - 1] = 1.0
    if slots:
        r, j = np.nonzero(data.slot_index > 0)
        x[r, j, (s - 1) + data.slot_index[r, j] - 1] = 1.0
    return x


def _centring(m: int) -> np.ndarray:
    """The map from m - 1 free parameters (the first fixed at 0) to the m centred values."""
    full = np.zeros((m, m - 1))
    full[1:, :] = np.eye(m - 1)
    centred: np.ndarray = full - full.mean(axis=0)
    return centred


def _penalty_matrix(s: int, n: int, slots: bool, ridge: float) -> np.ndarray:
    """The Gaussian prior's precision in the free parameters: `ridge` on each centred system log-worth and on
    each centred slot pull (finite even when a system is never picked or a slot always is)."""
    blocks = [_centring(s)] + ([_centring(n)] if slots else [])
    k = sum(b.shape[1] for b in blocks)
    p = np.zeros((k, k))
    at = 0
    for b in blocks:
        size = b.shape[1]
        p[at: at + size, at: at + size] = ridge * b.T @ b
        at += size
    return p


def _newton(x: np.ndarray, mask: np.ndarray, chosen: np.ndarray, w: np.ndarray, penalty: np.ndarray,
            start: np.ndarray | None = None, iterations: int = 100) -> np.ndarray:
    """Maximum (penalised) likelihood by Newton's method with step halving; the log-likelihood is concave.
    `w` is one weight per row, or one row of weights per fit (rounds, rows): then each fit runs its own Newton
    iterations (its own step halving and stopping), evaluated together in blocks small enough that a BLAS
    product stays on one thread (threads fighting over loaded cores made one big block slower than a loop),
    and the result is (rounds, K)."""
    weights = np.atleast_2d(np.asarray(w, dtype=float))
    r_, n_, k = x.shape
    block = max(1, BLOCK_CELLS // (r_ * n_ * k * k))
    fits = np.concatenate([_newton_block(x, mask, chosen, weights[i: i + block], penalty, start, iterations)
                           for i in range(0, weights.shape[0], block)])
    return fits[0] if np.ndim(w) == 1 else fits


def _newton_block(x: np.ndarray, mask: np.ndarray, chosen: np.ndarray, weights: np.ndarray, penalty: np.ndarray,
                  start: np.ndarray | None, iterations: int) -> np.ndarray:
    """Newton's method for a block of fits (rows of `weights`), each with its own step halving and stopping."""
    r_, n_, k = x.shape
    fits = weights.shape[0]
    beta = np.zeros((fits, k)) if start is None else np.tile(np.asarray(start, dtype=float), (fits, 1))
    rows = np.arange(r_)
    flat = x.reshape(r_ * n_, k)
    outer_t = np.ascontiguousarray((flat[:, :, None] * flat[:, None, :]).reshape(r_ * n_, k * k).T)
    flat_t = np.ascontiguousarray(flat.T)
    chosen_x_t = np.ascontiguousarray(x[rows, chosen].T)
    cutoff = np.finfo(float).eps * k  # np.linalg.lstsq's default cut-off for small singular values

    def objective(b: np.ndarray, wt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # laid out (rows, slots, fits): the fits run along the fast axis
        m = b.shape[0]
        eta = np.where(mask[:, :, None], (flat @ b.T).reshape(r_, n_, m), -np.inf)
        top = eta.max(axis=1)
        p = np.exp(eta - top[:, None, :])
        z = p.sum(axis=1)
        p /= z[:, None, :]
        ll = (wt * (eta[rows, chosen] - top - np.log(z))).sum(axis=0) - 0.5 * ((b @ penalty) * b).sum(axis=1)
        weighted = (wt[:, None, :] * p).reshape(r_ * n_, m)
        grad = (chosen_x_t @ wt - flat_t @ weighted).T - b @ penalty
        mean_x = np.matmul(p.transpose(0, 2, 1), x)  # (rows, fits, K)
        spread = np.matmul((wt[:, :, None] * mean_x).transpose(1, 2, 0), mean_x.transpose(1, 0, 2))
        second = (outer_t @ weighted).T.reshape(m, k, k) - spread
        return ll, grad, second + penalty

    ll, grad, info = objective(beta, weights.T)
    active = np.arange(fits)
    for _ in range(iterations):
        if not active.size:
            break
        wt = np.ascontiguousarray(weights[active].T)
        step = np.matmul(np.linalg.pinv(info[active], rcond=cutoff), grad[active][:, :, None])[:, :, 0]
        t = np.ones(active.size)
        new = beta[active] + step
        new_ll, new_grad, new_info = objective(new, wt)
        halve = ~((new_ll >= ll[active] - 1e-12) | (t < 1e-8))
        while halve.any():
            t[halve] /= 2
            new[halve] = beta[active[halve]] + t[halve, None] * step[halve]
            new_ll[halve], new_grad[halve], new_info[halve] = objective(new[halve], wt[:, halve])
            halve &= ~((new_ll >= ll[active] - 1e-12) | (t < 1e-8))
        done = ((np.abs(new_ll - ll[active]) < 1e-10 * (1 + np.abs(ll[active])))
                & (np.max(np.abs(t[:, None] * step), axis=1) < 1e-8))
        beta[active], ll[active], grad[active], info[active] = new, new_ll, new_grad, new_info
        active = active[~done]
    return beta


def _centred(beta: np.ndarray, s: int, n: int, slots: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """The centred log-worths (and slot pulls) of one fit, or of each row of fits."""
    zero = np.zeros((*beta.shape[:-1], 1))
    theta = np.concatenate([zero, beta[..., : s - 1]], axis=-1)
    gamma = np.concatenate([zero, beta[..., s - 1:]], axis=-1) if slots else None
    return (theta - theta.mean(axis=-1, keepdims=True),
            None if gamma is None else gamma - gamma.mean(axis=-1, keepdims=True))


def _connected(data: ChoiceData) -> bool:
    """Whether every system is linked to every other through calls that showed them together."""
    parent = list(range(len(data.systems)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for row in data.system_index:
        shown = [int(v) for v in row if v >= 0]
        for other in shown[1:]:
            parent[find(other)] = find(shown[0])
    return len({find(i) for i in range(len(parent))}) == 1


def fit_plackett_luce(calls: Sequence[ListwiseCall], *, rounds: int = 200, seed: int = 0, confidence: float = 0.95,
                      ridge: float = DEFAULT_RIDGE, slot_effects: bool = True,
                      use_ranking: bool = True) -> PlackettLuce:
    """Fit strengths (and slot effects) to one judge's listwise calls; `rounds` item-bootstrap rounds give
    percentile intervals at `confidence` (0: none). `ridge` is the weight of a Gaussian prior on the centred
    log-worths and slot pulls (0: the plain maximum likelihood, infinite for a system never picked)."""
    if not 0 < confidence < 1:
        raise ArgumentError(f"{{confidence}} must be between 0 and 1, got {confidence}", "confidence")
    if rounds < 0:
        raise ArgumentError(f"{{rounds}} must be 0 or more, got {rounds}", "rounds")
    if ridge < 0:
        raise ArgumentError(f"{{ridge}} must be 0 or more, got {ridge}", "ridge")
    data = choice_data(calls, use_ranking=use_ranking)
    s, n = len(data.systems), data.n_slots
    if s < 2:
        raise InputError("fewer than two systems to rank")
    if not _connected(data):
        raise InputError("the systems fall into groups never shown in one call: their strengths cannot be compared")
    mask = data.system_index >= 0
    note = None
    use_slots = slot_effects
    x = _design(data, use_slots)
    if use_slots:
        # the slot pull is identified only if systems move between slots: the information at 0 has full rank
        p0 = mask / mask.sum(axis=1, keepdims=True)
        mean_x = np.einsum("rj,rjk->rk", p0, x)
        info = (np.einsum("r,rj,rjk,rjl->kl", data.weights, p0, x, x)
                - np.einsum("r,rk,rl->kl", data.weights, mean_x, mean_x))
        if np.linalg.matrix_rank(info, tol=1e-8 * max(1.0, float(np.abs(info).max()))) < x.shape[2]:
            use_slots = False
            x = _design(data, False)
            note = ("the systems were not rotated over the slots enough to tell a slot's pull from a system's "
                    "strength: strengths fitted without slot effects, and they carry any pull of the order shown")
    penalty = _penalty_matrix(s, n, use_slots, ridge)
    beta = _newton(x, mask, data.chosen, data.weights, penalty)
    theta, gamma = _centred(beta, s, n, use_slots)
    thetas: np.ndarray = np.empty((rounds, s))
    gammas: np.ndarray | None = np.empty((rounds, n)) if gamma is not None else None
    if rounds:
        rng = np.random.default_rng(seed)
        items = data.counts.shape[0]
        counts_t = data.counts.T.tocsr()
        drawn = rng.multinomial(items, np.full(items, 1.0 / items), size=rounds).astype(float)
        # every round's Newton fit at once (each with its own steps and stopping): the same fits as one by one
        fits = _newton(x, mask, data.chosen, np.asarray((counts_t @ drawn.T).T), penalty, start=beta)
        thetas, gammas = _centred(fits, s, n, use_slots)
    tail = (1 - confidence) / 2

    def estimate(value: float, draws: np.ndarray | None) -> StrengthEstimate:
        if not rounds or draws is None:
            return StrengthEstimate(float(value), None, None)
        low, high = np.quantile(draws, [tail, 1 - tail])
        return StrengthEstimate(float(value), float(low), float(high))

    strengths = {name: estimate(theta[i], thetas[:, i] if rounds else None) for i, name in enumerate(data.systems)}
    slots_out = None
    if gamma is not None:
        slots_out = tuple(estimate(gamma[j], gammas[:, j] if rounds and gammas is not None else None)
                          for j in range(n))
    return PlackettLuce(strengths, slots_out, "plackett_luce" if data.uses_ranking else "luce", data.calls,
                        data.counts.shape[0], rounds, confidence, note)

