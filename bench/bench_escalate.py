"""Cost per settled pair of the escalation cascade against the strongest judge alone, on simulated judges with
known truth (swapjudge escalate, docs/escalate.md).

Each study: N pairs (one per item) with a known better answer; a cheap judge ($0.001 a call, noisy, reading the
slot instead of the answers on a fifth of the pairs) and a strong one ($0.02 a call, less noisy, on a twentieth),
both orders each, with verdict probabilities. Half the items calibrate (--split 0.5), the other half are the
test. The cascade pays the cheap judge on every test pair and the strong judge on the pairs the cheap one left
unsettled; the strongest judge alone pays the strong judge on every test pair. Both are fitted at the same alpha
and delta, so their settled pairs carry the same guarantee; the figure is dollars per settled test pair.

Run: .venv/bin/python bench/bench_escalate.py [--pairs 2000] [--studies 5] [--alpha 0.1] [--delta 0.1]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from swapjudge.workflows.escalate import escalate

JUDGES = (("cheap", 1.0, 2.0, 0.2, 0.001), ("strong", 0.3, 3.0, 0.05, 0.02))  # name, noise, scale, slot-read, $


def records(rng: np.random.Generator, n: int) -> list[dict[str, object]]:
    quality = rng.normal(0, 1, n)
    rows: list[dict[str, object]] = []
    for judge, noise, scale, blind, price in JUDGES:
        seen = quality + rng.normal(0, noise, n)
        read_slot = rng.random(n) < blind
        for i in range(n):
            for first, second, sign in (("a", "b", 1), ("b", "a", -1)):
                p = 1 / (1 + math.exp(-(sign * scale * seen[i] + rng.normal(0, 0.3))))
                if read_slot[i]:
                    p = float(rng.uniform(0.8, 0.99))
                rows.append({"judge": judge, "item": f"q{i}", "first": first, "second": second,
                             "verdict": "first" if p >= 0.5 else "second", "p_first": p, "p_second": 1 - p,
                             "label": "a" if quality[i] > 0 else "b", "cost_usd": price})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--studies", type=int, default=5)
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--delta", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    rows_out = []
    started = time.perf_counter()
    for study in range(args.studies):
        rows = records(rng, args.pairs)
        cascade = escalate(rows, judges=["cheap", "strong"], alpha=args.alpha, delta=args.delta, split=0.5,
                           seed=study)
        alone = escalate(rows, judges=["strong"], alpha=args.alpha, delta=args.delta, split=0.5, seed=study)
        c_usd, a_usd = cascade.cascade_usd or 0.0, alone.cascade_usd or 0.0
        rows_out.append((cascade.coverage or 0.0, c_usd / max(cascade.settled, 1),
                         cascade.realized.value if cascade.realized else float("nan"),
                         alone.coverage or 0.0, a_usd / max(alone.settled, 1),
                         alone.realized.value if alone.realized else float("nan"),
                         cascade.tiers[0].settled / max(cascade.pairs, 1)))
    elapsed = time.perf_counter() - started
    table = np.array(rows_out)
    mean = table.mean(axis=0)
    print(f"{args.studies} studies of {args.pairs} pairs, alpha {args.alpha}, delta {args.delta} "
          f"({elapsed:.1f} s)")
    print(f"cascade (cheap -> strong): coverage {mean[0]:.3f} (the cheap judge settles {mean[6]:.3f}), "
          f"${mean[1]:.5f} per settled pair, realized agreement {mean[2]:.3f}")
    print(f"strongest judge alone:     coverage {mean[3]:.3f}, ${mean[4]:.5f} per settled pair, "
          f"realized agreement {mean[5]:.3f}")
    print(f"cost per settled pair, cascade / strongest alone: {mean[1] / mean[4]:.3f}")


if __name__ == "__main__":
    main()
