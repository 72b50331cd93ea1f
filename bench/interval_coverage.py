"""Exact coverage of the half-credit win-rate interval, by enumeration over three-outcome multinomials.

Each of n pairs is a consistent win (probability w), a split worth 1/2 (s) or a consistent loss (1 - w - s); the
true half-credit rate is w + s/2. For every (n, true rate, split share) cell the coverage is the total
multinomial probability of the outcomes whose interval contains the true rate: no simulation noise.
Run: .venv/bin/python bench/interval_coverage.py  (prints the table in docs/intervals.md)
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
from scipy import special

from swapjudge.core.policy import win_rate_of_counts

SIZES = (10, 30, 100)
RATES = tuple(round(0.05 * k, 2) for k in range(1, 20))  # 0.05 .. 0.95
SPLIT_SHARES = (0.0, 0.1, 0.2, 0.3, 0.4)


@dataclass(frozen=True)
class Cell:
    n: int
    rate: float
    split_share: float
    coverage: float


def _outcomes(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every (wins, splits, losses) with its interval from the library's half-credit win rate."""
    wins, splits = (a.ravel() for a in np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij"))
    keep = wins + splits <= n
    wins, splits = wins[keep], splits[keep]
    losses = n - wins - splits
    bounds = np.array([(r.low, r.high) for r in (win_rate_of_counts("a", "b", int(w), int(lo), int(s)).half_credit
                                                 for w, s, lo in zip(wins, splits, losses, strict=True))])
    return wins, splits, losses, bounds[:, 0], bounds[:, 1]


def coverage_table(sizes: tuple[int, ...] = SIZES, rates: tuple[float, ...] = RATES,
                   split_shares: tuple[float, ...] = SPLIT_SHARES, confidence: float = 0.95) -> list[Cell]:
    """Exact coverage in every feasible cell (a split share above twice the distance to 0 or 1 is impossible)."""
    if confidence != 0.95:
        raise ValueError("the table is computed at the default 95% level")
    cells = []
    for n in sizes:
        wins, splits, losses, low, high = _outcomes(n)
        log_coef = special.gammaln(n + 1) - special.gammaln(wins + 1) - special.gammaln(splits + 1) \
            - special.gammaln(losses + 1)
        for rate in rates:
            for share in split_shares:
                pw, pl = rate - share / 2, 1 - rate - share / 2
                if pw < -1e-12 or pl < -1e-12:
                    continue
                probs = np.exp(log_coef + special.xlogy(wins, max(pw, 0.0)) + special.xlogy(splits, share)
                               + special.xlogy(losses, max(pl, 0.0)))
                covered = (low <= rate + 1e-12) & (high >= rate - 1e-12)
                cells.append(Cell(n, rate, share, float(probs[covered].sum())))
    return cells


def markdown(cells: list[Cell]) -> str:
    """Minimum and mean coverage per n and split share, then per n, then over all cells."""
    lines = ["| n | split share | cells | min coverage | mean coverage |", "|---|---|---|---|---|"]
    for n in sorted({c.n for c in cells}):
        for share in sorted({c.split_share for c in cells}):
            cov = [c.coverage for c in cells if c.n == n and c.split_share == share]
            if cov:
                lines.append(f"| {n} | {share:.0%} | {len(cov)} | {min(cov):.3f} | {np.mean(cov):.3f} |")
        cov = [c.coverage for c in cells if c.n == n]
        lines.append(f"| {n} | all | {len(cov)} | {min(cov):.3f} | {np.mean(cov):.3f} |")
    cov = [c.coverage for c in cells]
    lines.append(f"| all | all | {len(cov)} | {min(cov):.3f} | {np.mean(cov):.3f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fine", action="store_true", help="true rates 0.05..0.95 in steps of 0.01")
    args = parser.parse_args()
    rates = tuple(round(0.01 * k, 2) for k in range(5, 96)) if args.fine else RATES
    print(markdown(coverage_table(rates=rates)))


if __name__ == "__main__":
    main()
