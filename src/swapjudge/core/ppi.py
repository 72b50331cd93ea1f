"""Prediction-powered inference for a mean (PPI++: Angelopoulos, Duchi and Zrnic 2023), on per-item scores.

Many items carry a judge's score, a few also a person's. The estimate is the people's mean corrected by how the
judge's mean on everything differs from its mean on the labelled items:

    theta = mean_labelled(y - lam * f) + lam * mean_unlabelled(f)

It is unbiased for the people's mean whatever the judge does (a biased judge only moves `lam`); `lam` is tuned to
minimise the variance (PPI++), clipped to [0, 1] so the interval is never wider than the people's alone by more
than estimating `lam` costs. Items are the independent units: one score per item on each side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from swapjudge.core.stats import normal_quantile

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Estimate:
    """A mean with a normal interval over items; None throughout when there is nothing to estimate."""

    value: float | None
    low: float | None
    high: float | None
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n}


@dataclass(frozen=True)
class PPIResult:
    """The human-corrected mean next to the people's and the judge's own.

    `rectifier` is mean(person - judge) on the labelled items: the judge's bias there, with its interval.
    `lam` 0 means the judge carried no usable information and `corrected` is the people's mean.
    """

    corrected: Estimate
    human_only: Estimate
    judge_only: Estimate
    rectifier: Estimate
    lam: float
    n_human: int
    n_unlabelled: int
    correlation: float | None
    confidence: float

    @property
    def width_ratio(self) -> float | None:
        """Width of the corrected interval over the people-only one (below 1: the judge helped)."""
        c, h = self.corrected, self.human_only
        if None in (c.low, c.high, h.low, h.high) or h.high == h.low:
            return None
        return (c.high - c.low) / (h.high - h.low)  # type: ignore[operator]

    def to_dict(self) -> dict[str, Any]:
        return {
            "corrected": self.corrected.to_dict(), "human_only": self.human_only.to_dict(),
            "judge_only": self.judge_only.to_dict(), "rectifier": self.rectifier.to_dict(),
            "lambda": self.lam, "n_human": self.n_human, "n_unlabelled": self.n_unlabelled,
            "correlation": self.correlation, "width_ratio": self.width_ratio, "confidence": self.confidence,
        }


def normal_estimate(mean: float, variance: float, n: int, z: float, clip: bool) -> Estimate:
    """`mean` with the normal interval of half-width z * sqrt(variance), kept in [0, 1] when `clip` (a rate)."""
    half = z * math.sqrt(max(variance, 0.0))
    low, high = mean - half, mean + half
    if clip:  # a rate: the interval cannot leave [0, 1]
        low, high = max(0.0, low), min(1.0, high)
    return Estimate(mean, low, high, n)


def sample_variance(x: FloatArray) -> float:
    """The unbiased sample variance (0 for fewer than two values)."""
    return float(x.var(ddof=1)) if x.size > 1 else 0.0


def tuned_lambda(y: FloatArray, f_labelled: FloatArray, f_unlabelled: FloatArray) -> float:
    """PPI++'s variance-minimising weight for a mean, cov(y, f) / ((1 + n/N) var(f)), clipped to [0, 1]."""
    n, big_n = y.size, f_unlabelled.size
    f_all = np.concatenate([f_labelled, f_unlabelled])
    var_f = sample_variance(f_all)
    if n < 2 or big_n == 0 or var_f == 0.0:
        return 0.0
    cov = float(np.cov(y, f_labelled, ddof=1)[0, 1])
    return float(np.clip(cov / ((1.0 + n / big_n) * var_f), 0.0, 1.0))


def ppi_mean(y: npt.ArrayLike, f_labelled: npt.ArrayLike, f_unlabelled: npt.ArrayLike, *,
             confidence: float = 0.95, lam: float | None = None, clip: bool = True) -> PPIResult:
    """PPI++ estimate of the mean of `y` (people) from `f` (judge) on the same labelled items and on the rest.

    `f_unlabelled` holds the items without a person's score (disjoint from the labelled ones, so the two means
    are independent). `lam` None: tuned; 1: classic PPI; 0: the people alone. `clip` keeps intervals in [0, 1].
    """
    y_arr = np.asarray(y, dtype=np.float64).ravel()
    fl = np.asarray(f_labelled, dtype=np.float64).ravel()
    fu = np.asarray(f_unlabelled, dtype=np.float64).ravel()
    if y_arr.size != fl.size:
        raise ValueError("y and f_labelled must score the same items")
    if y_arr.size == 0:
        raise ValueError("no labelled items")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1")
    z = normal_quantile(confidence)
    n, big_n = y_arr.size, fu.size
    weight = tuned_lambda(y_arr, fl, fu) if lam is None else float(lam)
    residual = y_arr - weight * fl
    value = float(residual.mean()) + (weight * float(fu.mean()) if big_n else 0.0)
    variance = sample_variance(residual) / n + (weight**2 * sample_variance(fu) / big_n if big_n else 0.0)
    corrected = normal_estimate(value, variance, n, z, clip)
    human = normal_estimate(float(y_arr.mean()), sample_variance(y_arr) / n, n, z, clip)
    f_all = np.concatenate([fl, fu])
    judge = normal_estimate(float(f_all.mean()), sample_variance(f_all) / f_all.size, f_all.size, z, clip)
    gap = y_arr - fl
    rectifier = normal_estimate(float(gap.mean()), sample_variance(gap) / n, n, z, clip=False)
    sd_y, sd_f = sample_variance(y_arr), sample_variance(fl)
    correlation = (float(np.corrcoef(y_arr, fl)[0, 1]) if n > 1 and sd_y > 0 and sd_f > 0 else None)
    return PPIResult(corrected=corrected, human_only=human, judge_only=judge, rectifier=rectifier, lam=weight,
                     n_human=n, n_unlabelled=big_n, correlation=correlation, confidence=confidence)
