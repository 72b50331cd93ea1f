"""Benchmark of `rank --order-effect --control length` at arena scale: the point fit and the item bootstrap.

Synthetic single calls: 130 systems, 50,000 items, 34 calls per item in random order (1,700,000 calls), a
first-slot effect of 0.4 log-odds and a length preference of 0.5 per standard deviation of the normalised length
difference. Run: .venv/bin/python bench/bench_rank_adjusted.py [--rounds 1000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.special import expit

from swapjudge.ranking.order_effect import Calls, fit_adjusted
from swapjudge.ranking.style import normalised_difference


def synthetic(n_systems: int = 130, n_items: int = 50_000, calls_per_item: int = 34, seed: int = 7) -> Calls:
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, n_systems)
    n = n_items * calls_per_item
    first = rng.integers(0, n_systems, n)
    second = (first + rng.integers(1, n_systems, n)) % n_systems
    verbosity = rng.uniform(200, 2000, n_systems)
    len_first = verbosity[first] * rng.lognormal(0, 0.3, n)
    len_second = verbosity[second] * rng.lognormal(0, 0.3, n)
    z = normalised_difference(len_first, len_second)
    p = expit(strength[first] - strength[second] + 0.4 + 0.5 * z)
    score = (rng.random(n) < p).astype(np.float64)
    return Calls(tuple(f"m{i:03d}" for i in range(n_systems)), np.repeat(np.arange(n_items), calls_per_item),
                 first, second, score, z[:, None], ("length",))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000)
    args = parser.parse_args()
    data = synthetic()
    print(f"{len(data):,} calls, {len(data.systems)} systems")
    for refit in ("auto",):
        # wall and CPU seconds both: on a shared machine the wall clock also counts other people's work
        started, cpu = time.perf_counter(), time.process_time()
        point = fit_adjusted(data, rounds=0)
        point_s, point_cpu = time.perf_counter() - started, time.process_time() - cpu
        started, cpu = time.perf_counter(), time.process_time()
        boot = fit_adjusted(data, rounds=args.rounds, refit=refit)
        boot_s, boot_cpu = time.perf_counter() - started, time.process_time() - cpu
        h, [length] = boot.order_effect, boot.controls
        assert h is not None
        print(f"point fit: {point_s:.2f} s wall, {point_cpu:.2f} s CPU ({point.ranking.convergence.iterations} "
              f"Newton iterations); fit + {args.rounds} bootstrap rounds ({boot.bootstrap_refit} refits): "
              f"{boot_s:.1f} s wall, {boot_cpu:.1f} s CPU")
        print(f"first-slot effect {h.value:+.3f} ({h.low:+.3f} to {h.high:+.3f}), truth +0.400; "
              f"length {length.value:+.3f} ({length.low:+.3f} to {length.high:+.3f}), truth +0.500")


if __name__ == "__main__":
    main()
