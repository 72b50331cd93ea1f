"""Arena-scale ranking benchmark: point fits against evalica and scikit-learn, item bootstrap, peak memory.

Synthetic data: 130 systems, 50,000 items, 17 pairs per item judged in both orders (1,700,000 comparisons),
outcomes drawn from a Rao-Kupper model (theta = 1.6, about 18% ties).
Run: .venv/bin/python bench/bench_rank.py
Our figures (fits, bootstraps, peak memory) are measured first, so the baselines' memory does not count.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from swapjudge.ranking.bradley_terry import (
    Battle,
    Comparisons,
    Model,
    comparison_cells,
    fit,
    fit_ranking,
    item_matrix,
    solve_strengths,
)


def synthetic(n_systems: int = 130, n_items: int = 50_000, pairs_per_item: int = 17, theta: float = 1.6,
              seed: int = 7) -> tuple[Comparisons, np.ndarray]:
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, n_systems)
    strength -= strength.mean()
    n_pairs = n_items * pairs_per_item
    x = rng.integers(0, n_systems, n_pairs)
    y = (x + rng.integers(1, n_systems, n_pairs)) % n_systems
    item = np.repeat(np.arange(n_items), pairs_per_item)
    # both orders of every pair, each call drawn independently
    left, right, item = np.concatenate([x, y]), np.concatenate([y, x]), np.concatenate([item, item])
    d = strength[left] - strength[right]
    p_left = 1.0 / (1.0 + theta * np.exp(-d))
    p_right = 1.0 / (1.0 + theta * np.exp(d))
    u = rng.random(len(d))
    outcome = np.where(u < p_left, Battle.LEFT, np.where(u < p_left + p_right, Battle.RIGHT, Battle.TIE))
    systems = tuple(f"system-{i:03d}" for i in range(n_systems))
    return Comparisons(systems=systems, item=item, left=left, right=right, outcome=outcome), strength


def best_of(repeats: int, func: object) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    start = time.perf_counter()
    data, truth = synthetic()
    ties = float(np.mean(data.outcome == Battle.TIE))
    n_items = len(np.unique(data.item))
    print(f"data: {len(data.systems)} systems, {len(data):,} comparisons, {n_items:,} items, "
          f"{ties:.1%} ties (generated in {time.perf_counter() - start:.1f} s)")
    sys.stdout.flush()

    start = time.perf_counter()
    cells = comparison_cells(data)
    aggregate_s = time.perf_counter() - start
    start = time.perf_counter()
    by_cell = item_matrix(data, cells)
    matrix_s = time.perf_counter() - start
    print(f"aggregate to pair counts: {aggregate_s:.3f} s ({len(cells.lo):,} pairs of systems); "
          f"cell x item matrix for the bootstrap: {matrix_s:.2f} s ({by_cell.nnz:,} nonzeros)")

    ours: dict[str, float] = {}
    for model in Model:
        with threadpool_limits(limits=1, user_api="blas"):  # as fit() and fit_ranking() do
            solve_s = best_of(args.repeats, lambda m=model: solve_strengths(m, cells.lo, cells.hi, cells.n_systems,
                                                                   cells.counts, 1e-2))
        total_s = best_of(args.repeats, lambda m=model: fit(data, m))
        result = fit(data, model)
        ours[model.value] = total_s
        # the data are Rao-Kupper: only that model's scores are on the scale of the true strengths
        err = (f", max |score - truth| {np.abs(result.scores - truth).max():.3f}"
               if model is Model.rao_kupper else "")
        tie = "" if result.tie_parameter is None else f", tie parameter {result.tie_parameter:.4f}"
        print(f"point fit {model.value:11s}: {total_s:6.3f} s from the comparison arrays "
              f"(Newton on counts alone {solve_s * 1000:.1f} ms, {result.iterations} iterations, "
              f"converged={result.converged}{tie}{err})")

    start = time.perf_counter()
    ranking = fit_ranking(data, Model.rao_kupper, rounds=args.rounds, seed=1)
    boot_s = time.perf_counter() - start
    conv = ranking.convergence
    print(f"fit_ranking(rao-kupper, {args.rounds} bootstrap rounds), everything included: {boot_s:.1f} s "
          f"(target < 30 s); refits not converged {conv.bootstrap_not_converged}, "
          f"max iterations {conv.bootstrap_max_iterations}")
    start = time.perf_counter()
    fit_ranking(data, Model.rao_kupper, rounds=args.rounds, seed=1, interval="bca")
    print(f"fit_ranking(rao-kupper, {args.rounds} rounds, BCa: + 200 grouped-jackknife refits): "
          f"{time.perf_counter() - start:.1f} s")
    for model in (Model.davidson, Model.bt_half):
        start = time.perf_counter()
        fit_ranking(data, model, rounds=args.rounds, seed=1)
        print(f"fit_ranking({model.value}, {args.rounds} rounds): {time.perf_counter() - start:.1f} s")
    print(f"peak memory (ru_maxrss) after our fits and bootstraps: {peak_mb():,.0f} MB (target < 4096 MB)")
    print(f"load average now: {os.getloadavg()[0]:.1f}")
    sys.stdout.flush()

    import evalica
    import pandas as pd
    from scipy import sparse
    from sklearn.linear_model import LogisticRegression

    index = pd.Index(range(len(data.systems)))
    xs, ys = data.left.tolist(), data.right.tolist()
    to_winner = {Battle.LEFT: evalica.Winner.X, Battle.RIGHT: evalica.Winner.Y,
                 Battle.TIE: evalica.Winner.Draw}
    winners = [to_winner[Battle(o)] for o in data.outcome.tolist()]

    bt_s = best_of(args.repeats, lambda: evalica.bradley_terry(xs, ys, winners, index=index))
    nm_s = best_of(args.repeats, lambda: evalica.newman(xs, ys, winners, index=index))
    # evalica takes Python collections and indexes them itself; that indexing is part of its call
    print(f"evalica bradley_terry ({evalica.SOLVER} solver, inputs prepared): {bt_s:.3f} s; "
          f"ours bt-half {ours['bt-half']:.3f} s -> evalica/ours = {bt_s / ours['bt-half']:.1f}x")
    print(f"evalica newman        ({evalica.SOLVER} solver, inputs prepared): {nm_s:.3f} s; "
          f"ours davidson {ours['davidson']:.3f} s -> evalica/ours = {nm_s / ours['davidson']:.1f}x; "
          f"vs ours rao-kupper {nm_s / ours['rao-kupper']:.1f}x")

    # arena-hard-auto's approach: logistic regression on +1/-1 columns, no intercept, a tie split into a
    # half-weight win for each side. The design is sparse CSR (a dense one would need 3.5 GB).
    n, k = len(data), len(data.systems)
    rows = np.repeat(np.arange(2 * n), 2)
    cols = np.stack([np.concatenate([data.left, data.left]), np.concatenate([data.right, data.right])],
                    axis=1)
    vals = np.tile([1.0, -1.0], 2 * n)
    design = sparse.csr_matrix((vals, (rows, cols.ravel())), shape=(2 * n, k))
    label = np.concatenate([np.ones(n), np.zeros(n)])
    tie = data.outcome == Battle.TIE
    weight = np.concatenate([np.where(tie, 0.5, (data.outcome == Battle.LEFT).astype(float)),
                             np.where(tie, 0.5, (data.outcome == Battle.RIGHT).astype(float))])
    keep = weight > 0
    design, label, weight = design[keep], label[keep], weight[keep]

    def sklearn_fit() -> None:
        LogisticRegression(fit_intercept=False, C=1e6, tol=1e-6, max_iter=1000).fit(design, label,
                                                                                      sample_weight=weight)

    lr_s = best_of(1, sklearn_fit)
    print(f"scikit-learn LogisticRegression BT (lbfgs, sparse design prepared): {lr_s:.3f} s "
          f"-> sklearn/ours bt-half = {lr_s / ours['bt-half']:.1f}x")


if __name__ == "__main__":
    main()
