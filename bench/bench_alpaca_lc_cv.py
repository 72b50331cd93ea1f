"""How far swapjudge's maximum-likelihood fit of AlpacaEval's length-controlled model lands from AlpacaEval's own
estimator (an L1 penalty chosen by 5-fold cross-validation, probes/alpaca_cv.py), and how far that estimator moves
when its folds are dealt in scikit-learn 1.9's stable order instead of the order of AlpacaEval's published runs
(probes/alpaca_folds.py), on simulated data of AlpacaEval's shape.

Each study: 805 instructions with drawn difficulties, one soft label per instruction (a logprob-weighted judge:
Beta-distributed around the model's probability, piled up near 0 and 1), the length difference of model and
baseline, and two length-gamed baselines (verbose, concise) against the baseline, weighted lambda / 2 = 0.1.
The true coefficients are drawn per study: a model far below the baseline to one above it, with and without a
length preference. Needs scikit-learn (a dev dependency).

Run: .venv/bin/python bench/bench_alpaca_lc_cv.py [--studies 40] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.special import expit

from swapjudge.probes.alpaca_cv import fit_alpaca_cv
from swapjudge.probes.alpaca_lc import GamedRows, fit_alpaca_lc, training_rows

N_INSTRUCTIONS = 805
LAMBDA = 0.2


def _beta(mean: np.ndarray, concentration: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Beta parameters with this mean: a judge whose soft labels pile up near 0 and 1."""
    return mean * concentration, (1 - mean) * concentration


def study(rng: np.random.Generator, b_length: float, b_difficulty: float, b_model: float
          ) -> tuple[float, float, float, float, float]:
    """(ML win rate, L1-CV win rate and its C with the published folds, the same with the stable folds) on one
    simulated study."""
    n = N_INSTRUCTIONS
    difficulty = rng.normal(0.0, 1.0, n)
    delta = rng.normal(400.0, 700.0, n)  # len(model) - len(baseline), characters
    p = rng.beta(*_beta(expit(b_length * np.tanh(delta / delta.std(ddof=1)) + b_difficulty * difficulty
                              + b_model)))
    gamed_std = np.concatenate([rng.normal(1.5, 0.7, n), rng.normal(-1.5, 0.7, n)])  # verbose, concise
    gamed_diff = np.concatenate([difficulty, difficulty])
    gamed_p = rng.beta(*_beta(expit(b_length * np.tanh(gamed_std) + b_difficulty * gamed_diff)))
    keys = np.arange(n)
    gamed = GamedRows(gamed_p, gamed_std, np.concatenate([keys, keys]), gamed_diff, 2)
    ours = fit_alpaca_lc(p, delta, keys, difficulty=difficulty, gamed=gamed, regularize=LAMBDA)
    rows = training_rows(p, delta, keys, difficulty=difficulty, gamed=gamed, regularize=LAMBDA)
    theirs, stable = fit_alpaca_cv(rows), fit_alpaca_cv(rows, "stable")
    assert ours.value is not None and theirs.value is not None and theirs.c is not None
    assert stable.value is not None and stable.c is not None
    return ours.value, theirs.value, theirs.c, stable.value, stable.c


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    gaps = []
    chosen = []
    fold_gaps = []
    other_c = 0
    toward_half = 0  # studies where the penalised figure lies nearer 1/2 than the unpenalised one
    start = time.process_time()
    for i in range(args.studies):
        b_model, b_length, b_difficulty = rng.uniform(-3.5, 1.5), rng.uniform(0.0, 1.5), rng.uniform(-1.0, 1.0)
        ours, theirs, c, stable, stable_c = study(rng, b_length, b_difficulty, b_model)
        gaps.append(100 * (ours - theirs))
        chosen.append(c)
        fold_gaps.append(100 * (stable - theirs))
        other_c += int(stable_c != c)
        toward_half += int(abs(theirs - 0.5) < abs(ours - 0.5))
        print(f"study {i:3d}: ML {100 * ours:6.2f}  L1-CV {100 * theirs:6.2f}  gap {gaps[-1]:+.3f} points  "
              f"(C {c:.3g}); stable folds {100 * stable:6.2f} (C {stable_c:.3g})")
    gap = np.abs(np.array(gaps))
    values, counts = np.unique(chosen, return_counts=True)
    print(f"{args.studies} studies: |ML - L1-CV| mean {gap.mean():.3f}, median {np.median(gap):.3f}, "
          f"max {gap.max():.3f} points, {int((gap <= 0.1).sum())} of {gap.size} within 0.1 point; chosen C: "
          + ", ".join(f"{c:.3g} x{k}" for c, k in zip(values, counts, strict=True))
          + f"; {time.process_time() - start:.1f} s CPU")
    print(f"L1-CV nearer 50% than ML in {toward_half} of {args.studies} studies")
    moved = np.abs(np.array(fold_gaps))
    print(f"stable folds instead of the published ones: another C in {other_c} of {args.studies} studies; "
          f"|L1-CV(stable) - L1-CV(published)| mean {moved.mean():.4f}, max {moved.max():.3f} points, "
          f"{int((moved > 0.01).sum())} studies moved by more than 0.01 point")


if __name__ == "__main__":
    main()
