"""Simulated best-of-N judges with known strengths and a known slot pull, for the listwise tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from swapjudge.reading.listwise import ListwiseCall


def latin_orders(rng: np.random.Generator, n: int) -> list[list[int]]:
    """A cyclic Latin square's rows over a shuffled base order: each candidate once in each slot."""
    base = rng.permutation(n)
    return [[int(base[(r + j) % n]) for j in range(n)] for r in range(n)]


def simulate(rng: np.random.Generator, theta: Sequence[float], *, items: int = 200,
             gamma: Sequence[float] | None = None, lift: float = 0.0, item_sd: float = 0.0, judge: str = "sim",
             label: bool = False,
             rotations: str = "latin") -> list[ListwiseCall]:
    """Calls of a judge that picks by Luce's model on theta + the slot's gamma (+ an item's own normal noise of
    `item_sd` per system, shared by its rotations), and with probability `lift` picks slot 1 whatever it shows.
    `label`: each call carries the truly strongest system as its label. Vectorised: Gumbel-max draws."""
    n = len(theta)
    g = np.zeros(n) if gamma is None else np.asarray(gamma, dtype=float)
    best = f"s{int(np.argmax(theta))}"
    local = np.asarray(theta, dtype=float)[None, :] + (rng.normal(0.0, item_sd, (items, n)) if item_sd else 0.0)
    if rotations == "latin":
        base = np.argsort(rng.random((items, n)), axis=1)
        shift = (np.arange(n)[:, None] + np.arange(n)[None, :]) % n  # row r, slot j: base[(r + j) % n]
        orders = base[:, shift]  # (items, n rotations, n slots)
    else:
        orders = np.argsort(rng.random((items, 1, n)), axis=2)
    eta = np.take_along_axis(np.broadcast_to(local[:, None, :], orders.shape), orders, axis=2) + g
    picks = np.argmax(eta + rng.gumbel(size=eta.shape), axis=2) + 1
    picks = np.where(rng.random(picks.shape) < lift, 1, picks)
    names = [f"s{k}" for k in range(n)]
    return [ListwiseCall(f"q{i}", tuple(names[o] for o in orders[i, r]), int(picks[i, r]), judge,
                         label=best if label else None)
            for i in range(items) for r in range(orders.shape[1])]


def always_first(items: int = 50, n: int = 4, seed: int = 0) -> list[ListwiseCall]:
    """A judge that picks slot 1 in every call of a Latin design."""
    rng = np.random.default_rng(seed)
    return [ListwiseCall(f"q{i}", tuple(f"s{o}" for o in order), 1, "first", label="s0")
            for i in range(items) for order in latin_orders(rng, n)]
