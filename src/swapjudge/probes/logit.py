"""A small logistic regression for fractional outcomes (0, 1/2, 1): maximum likelihood with scipy.optimize and
an interval from the robust (sandwich) covariance.

Why not statsmodels: one model with one or two coefficients does not justify a heavy dependency. Why the
sandwich: a split pair scored 1/2 is not a Bernoulli draw, so the model-based variance (the inverse observed
Fisher information, also returned) is misspecified for it; the sandwich estimate is valid either way
(the quasi-likelihood "fractional logit" of Papke and Wooldridge, 1996). Pure: arrays in, a result out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from swapjudge.core.stats import normal_quantile

# |coefficient| on standardised regressors beyond which the fit is treated as separated (no finite maximum)
SEPARATION_LIMIT = 30.0


@dataclass(frozen=True)
class LogitFit:
    """Coefficients, their robust standard errors and model-based (inverse Fisher information) errors."""

    coef: tuple[float, ...]
    se: tuple[float, ...]
    se_model: tuple[float, ...]
    n: int
    converged: bool

    def interval(self, index: int, confidence: float = 0.95) -> tuple[float, float]:
        z = normal_quantile(confidence)
        return self.coef[index] - z * self.se[index], self.coef[index] + z * self.se[index]

    def p_value(self, index: int) -> float:
        """Two-sided Wald test of coefficient `index` against zero (robust standard error)."""
        if self.se[index] == 0:
            return 1.0
        return float(2 * special.ndtr(-abs(self.coef[index] / self.se[index])))


def fit_logit(design: np.ndarray, outcome: np.ndarray) -> LogitFit | None:
    """Fit P(outcome) = sigmoid(design @ coef) for outcomes in [0, 1]; None when there is nothing to fit or the
    data are separated (e.g. the longer answer won every pair: no finite slope)."""
    x = np.asarray(design, dtype=float)
    y = np.asarray(outcome, dtype=float)
    if x.ndim != 2 or y.size == 0 or y.size != x.shape[0]:
        return None
    # standardise columns that vary so the optimiser sees a well-scaled problem; undo afterwards
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = x / scale

    def negloglik(beta: np.ndarray) -> float:
        eta = z @ beta
        # -sum(y*log p + (1-y)*log(1-p)) written stably
        return float(np.sum(np.logaddexp(0.0, eta) - y * eta))

    def gradient(beta: np.ndarray) -> np.ndarray:
        return np.asarray(z.T @ (special.expit(z @ beta) - y))

    start = np.zeros(z.shape[1])
    from scipy import optimize  # only when a model is fitted: its import is slow

    res = optimize.minimize(negloglik, start, jac=gradient, method="BFGS", options={"gtol": 1e-10})
    beta = res.x
    if not np.all(np.isfinite(beta)) or np.any(np.abs(beta) > SEPARATION_LIMIT):
        return None
    p = special.expit(z @ beta)
    fisher = (z * (p * (1 - p))[:, None]).T @ z
    try:
        bread = np.linalg.inv(fisher)
    except np.linalg.LinAlgError:
        return None
    meat = (z * ((y - p) ** 2)[:, None]).T @ z
    robust = bread @ meat @ bread
    coef = beta / scale
    se = np.sqrt(np.clip(np.diag(robust), 0, None)) / scale
    se_model = np.sqrt(np.clip(np.diag(bread), 0, None)) / scale
    converged = bool(res.success) or float(np.max(np.abs(gradient(beta)))) < 1e-6
    return LogitFit(tuple(float(c) for c in coef), tuple(float(s) for s in se),
                    tuple(float(s) for s in se_model), int(y.size), converged)
