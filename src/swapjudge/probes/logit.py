"""A small logistic regression for fractional outcomes (0, 1/2, 1, or any soft label in [0, 1]), optionally
with row weights: maximum likelihood with scipy.optimize and an interval from the robust (sandwich) covariance.

Why not statsmodels: one model with one or two coefficients does not justify a heavy dependency. Why the
sandwich: a split pair scored 1/2 is not a Bernoulli draw, so the model-based variance (the inverse observed
Fisher information, also returned) is misspecified for it; the sandwich estimate is valid either way
(the quasi-likelihood "fractional logit" of Papke and Wooldridge, 1996). With `groups` (each row's item) the
sandwich is cluster-robust: rows judged on the same item share one score contribution, with the small-sample
factor G/(G-1) * (N-1)/(N-K) that statsmodels' cov_type="cluster" uses. With `weights` each row's log-likelihood
counts w times (the weighted soft log loss; statsmodels' GLM `var_weights`). Pure: arrays in, a result out.
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
    clusters: int | None = None  # items the robust errors were clustered on; None: rows independent

    def _critical(self, confidence: float) -> float:
        """z, or with clustered errors Student's t on G - 1 degrees of freedom (Cameron and Miller 2015): with
        80 items the normal reference rejects a true null noticeably more often than its level."""
        if self.clusters is None:
            return normal_quantile(confidence)
        return float(special.stdtrit(self.clusters - 1, 0.5 + confidence / 2))

    def interval(self, index: int, confidence: float = 0.95) -> tuple[float, float]:
        c = self._critical(confidence)
        return self.coef[index] - c * self.se[index], self.coef[index] + c * self.se[index]

    def p_value(self, index: int) -> float:
        """Two-sided Wald test of coefficient `index` against zero (robust standard error; t on G - 1 degrees of
        freedom when clustered)."""
        if self.se[index] == 0:
            return 1.0
        t = abs(self.coef[index] / self.se[index])
        if self.clusters is None:
            return float(2 * special.ndtr(-t))
        return float(2 * special.stdtr(self.clusters - 1, -t))


def fit_logit(design: np.ndarray, outcome: np.ndarray, groups: np.ndarray | None = None,
              weights: np.ndarray | None = None) -> LogitFit | None:
    """Fit P(outcome) = sigmoid(design @ coef) for outcomes in [0, 1]; None when there is nothing to fit or the
    data are separated (e.g. the longer answer won every pair: no finite slope). `groups`: each row's cluster;
    `weights`: each row's weight (default 1)."""
    x = np.asarray(design, dtype=float)
    y = np.asarray(outcome, dtype=float)
    if x.ndim != 2 or y.size == 0 or y.size != x.shape[0]:
        return None
    w = np.ones(y.size) if weights is None else np.asarray(weights, dtype=float)
    # standardise columns that vary so the optimiser sees a well-scaled problem; undo afterwards
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = x / scale

    def negloglik(beta: np.ndarray) -> float:
        eta = z @ beta
        # -sum(y*log p + (1-y)*log(1-p)) written stably
        return float(np.sum(w * (np.logaddexp(0.0, eta) - y * eta)))

    def gradient(beta: np.ndarray) -> np.ndarray:
        return np.asarray(z.T @ (w * (special.expit(z @ beta) - y)))

    start = np.zeros(z.shape[1])
    from scipy import optimize  # only when a model is fitted: its import is slow

    res = optimize.minimize(negloglik, start, jac=gradient, method="BFGS", options={"gtol": 1e-10})
    beta = res.x
    if not np.all(np.isfinite(beta)) or np.any(np.abs(beta) > SEPARATION_LIMIT):
        return None
    p = special.expit(z @ beta)
    fisher = (z * (w * p * (1 - p))[:, None]).T @ z
    try:
        bread = np.linalg.inv(fisher)
    except np.linalg.LinAlgError:
        return None
    clusters = None
    score = z * (w * (y - p))[:, None]
    if groups is not None:
        keys = np.asarray(groups)
        _, codes = np.unique(keys.astype(str) if keys.dtype == object else keys, return_inverse=True)
        clusters = int(codes.max()) + 1
        if clusters < 2:
            return None  # one item: no cluster-robust error can be estimated
        summed = np.zeros((clusters, z.shape[1]))
        np.add.at(summed, codes, score)
        n, k = z.shape
        meat = summed.T @ summed * (clusters / (clusters - 1) * (n - 1) / max(n - k, 1))
    else:
        meat = score.T @ score
    robust = bread @ meat @ bread
    coef = beta / scale
    se = np.sqrt(np.clip(np.diag(robust), 0, None)) / scale
    se_model = np.sqrt(np.clip(np.diag(bread), 0, None)) / scale
    converged = bool(res.success) or float(np.max(np.abs(gradient(beta)))) < 1e-6
    return LogitFit(tuple(float(c) for c in coef), tuple(float(s) for s in se),
                    tuple(float(s) for s in se_model), int(y.size), converged, clusters)
