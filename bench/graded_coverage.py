"""Coverage of the graded score's interval (over items) and of arena-hard's x3 convention (over battles), by a
seeded simulation with known truth.

The judge: each item i has a latent quality difference d_i ~ N(mean, spread) of system a over system b. A call
sees d (a in slot 1) or -d (b in slot 1), plus a lean toward slot 1 and its own noise, and answers the level its
latent falls in (A>>B above 1, A>B above 0.25, A=B within 0.25, B>A, B>>A below -1). Both calls of a pair share
d_i, and with `rounds` > 1 every round of an item shares it too, so the pairs of one item move together.

Truth, by Gauss-Hermite quadrature over d (no simulation noise):
- the graded score: E[(score of a's call with a in slot 1 + score with b in slot 1) / 2], per-level scores
  1, 0.75, 0.5, 0.25, 0;
- arena-hard's figure: E[weighted wins of a] / E[battles], a strong verdict 3 battles, each call on its own.

Each simulated file gets both intervals at 95%; coverage is the share of files whose interval holds its truth.
Run: .venv/bin/python bench/graded_coverage.py  (prints the figures in docs/graded.md)
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from swapjudge.core.graded import arena_hard_interval, graded_scores
from swapjudge.core.stats import mean_interval

CUTS = (-1.0, -0.25, 0.25, 1.0)  # latent boundaries between B>>A | B>A | A=B | A>B | A>>B


@dataclass(frozen=True)
class Judge:
    mean: float = 0.4  # a's average advantage
    spread: float = 1.2  # how much items differ
    lean: float = 0.3  # toward slot 1
    noise: float = 0.5  # call to call


def level_probabilities(latent_mean: np.ndarray, noise: float) -> np.ndarray:
    """P(level) for calls whose latent is N(latent_mean, noise): columns A>>B, A>B, A=B, B>A, B>>A."""
    cdf = ndtr((np.asarray(CUTS)[None, :] - latent_mean[:, None]) / noise)  # P(latent < cut)
    below = np.concatenate([np.zeros((cdf.shape[0], 1)), cdf, np.ones((cdf.shape[0], 1))], axis=1)
    bins = np.diff(below, axis=1)  # B>>A, B>A, A=B, A>B, A>>B
    result: np.ndarray = bins[:, ::-1]
    return result


SLOT_ONE_SCORE = np.array([1.0, 0.75, 0.5, 0.25, 0.0])
SLOT_ONE_WIN = np.array([1.0, 1.0, 0.5, 0.0, 0.0])
BATTLES = np.array([3.0, 1.0, 1.0, 1.0, 3.0])


def truths(judge: Judge, nodes: int = 200) -> tuple[float, float]:
    """(graded score, arena-hard figure) of a, exactly (quadrature over the item's latent difference)."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    d = judge.mean + judge.spread * x
    weight = w / w.sum()
    a_first = level_probabilities(d + judge.lean, judge.noise)  # a in slot 1
    b_first = level_probabilities(-d + judge.lean, judge.noise)  # b in slot 1: a's latent is -(-d)
    graded = weight @ ((a_first @ SLOT_ONE_SCORE + (1 - b_first @ SLOT_ONE_SCORE)) / 2)
    wins = weight @ (a_first @ (SLOT_ONE_WIN * BATTLES) + b_first @ ((1 - SLOT_ONE_WIN) * BATTLES))
    battles = weight @ (a_first @ BATTLES + b_first @ BATTLES)
    return float(graded), float(wins / battles)


def simulate(rng: np.random.Generator, judge: Judge, items: int, rounds: int = 1
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One file: per pair, the level of the call with a in slot 1, with b in slot 1, and the pair's item."""
    d = np.repeat(judge.mean + judge.spread * rng.standard_normal(items), rounds)
    item = np.repeat(np.arange(items), rounds)
    edges = np.asarray(CUTS)

    def level(latent: np.ndarray) -> np.ndarray:
        return 4 - np.searchsorted(edges, latent)  # above 1 -> 0 (A>>B) ... below -1 -> 4 (B>>A)

    la = level(d + judge.lean + judge.noise * rng.standard_normal(d.size))
    lb = level(-d + judge.lean + judge.noise * rng.standard_normal(d.size))
    return la.astype(np.int8), lb.astype(np.int8), item


@dataclass(frozen=True)
class Coverage:
    files: int
    items: int
    rounds: int
    graded: float  # the graded score's interval, clustered by item
    graded_unclustered: float  # the same scores with every pair independent
    arena_hard: float  # arena-hard's figure with its every-battle-independent interval
    graded_width: float
    arena_hard_width: float


def coverage(files: int, items: int, rounds: int = 1, judge: Judge = Judge(), seed: int = 26) -> Coverage:
    rng = np.random.default_rng(seed)
    true_graded, true_arena = truths(judge)
    hits = np.zeros(3)
    widths = np.zeros(2)
    for _ in range(files):
        la, lb, item = simulate(rng, judge, items, rounds)
        scores = graded_scores(la, lb)
        clustered = mean_interval(scores, 0.95, item)
        plain = mean_interval(scores, 0.95)
        arena, _ = arena_hard_interval(la, lb, 0.95)
        for k, m, truth in ((0, clustered, true_graded), (1, plain, true_graded), (2, arena, true_arena)):
            assert m.low is not None and m.high is not None
            hits[k] += m.low <= truth <= m.high
        assert clustered.low is not None and clustered.high is not None
        assert arena.low is not None and arena.high is not None
        widths += (clustered.high - clustered.low, arena.high - arena.low)
    return Coverage(files, items, rounds, *(hits / files), *(widths / files))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args()
    true_graded, true_arena = truths(Judge())
    print(f"judge {Judge()}: true graded score {true_graded:.4f}, true arena-hard figure {true_arena:.4f}")
    print("items  rounds  files  graded (items)  graded (pairs)  arena-hard (battles)  width graded  width arena")
    for items, rounds in ((100, 1), (500, 1), (100, 3)):
        c = coverage(args.files, items, rounds)
        print(f"{items:>5}  {rounds:>6}  {c.files:>5}  {c.graded:>14.3f}  {c.graded_unclustered:>14.3f}  "
              f"{c.arena_hard:>20.3f}  {c.graded_width:>12.3f}  {c.arena_hard_width:>11.3f}")


if __name__ == "__main__":
    main()
