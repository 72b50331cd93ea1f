"""AlpacaEval's own estimator of its length-controlled model, for comparison with its published figures: an L1
penalty chosen by cross-validation (scikit-learn, which swapjudge does not require: `pip install scikit-learn`).

As AlpacaEval states it: LogisticRegressionCV without intercept, penalty l1, solver liblinear, the default grid
of 10 values of C over logspace(-4, 4), 5-fold GroupKFold over the rows duplicated into a label-1 copy weighted
w * p and a label-0 copy weighted w * (1 - p) (a row's two copies in one group, the gamed baseline rows first as
AlpacaEval orders them), scored by the weighted soft log loss, random_state 123, refitted on every row at the
chosen C. A penalised fit has no interval here; the maximum-likelihood fit (probes/alpaca_lc.py) gives it.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from swapjudge.errors import SwapjudgeError
from swapjudge.probes.alpaca_lc import AlpacaCv, TrainingRows

FOLDS = 5
SEED = 123


def _soft_log_loss(y: np.ndarray, q: np.ndarray, *, soft: np.ndarray, row_weight: np.ndarray) -> float:
    """Weighted soft log loss over duplicated rows (each copy carries its row's soft label and weight)."""
    q = np.clip(q, 1e-15, 1 - 1e-15)
    return float(-np.mean(row_weight * (soft * np.log(q) + (1 - soft) * np.log(1 - q))))


def fit_alpaca_cv(rows: TrainingRows) -> AlpacaCv:
    """AlpacaEval's L1 cross-validated fit on the training rows of `training_rows`; the mean prediction at equal
    length over a's rows."""
    try:
        import sklearn
        from sklearn.linear_model import LogisticRegressionCV
        from sklearn.metrics import make_scorer
        from sklearn.model_selection import GroupKFold
    except ImportError:
        raise SwapjudgeError("AlpacaEval's cross-validated fit needs scikit-learn: pip install scikit-learn") from None
    if not rows.model_rows:
        return AlpacaCv(None, None)
    order = np.r_[rows.model_rows:rows.y.size, 0:rows.model_rows]  # AlpacaEval stacks the gamed rows first
    terms = rows.terms
    x, p, w = rows.x[order][:, terms], rows.y[order], rows.weight[order]
    n = p.size
    groups = np.tile(np.arange(n), 2)
    major, minor = (int(v) for v in sklearn.__version__.split(".")[:2])
    # scikit-learn 1.8 spells the L1 penalty as l1_ratios=(1,) and deprecates `penalty`
    penalty: dict[str, Any] = {"l1_ratios": (1.0,)} if (major, minor) >= (1, 8) else {"penalty": "l1"}
    with sklearn.config_context(enable_metadata_routing=True), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # attribute layouts announced for scikit-learn 1.10
        scorer = make_scorer(_soft_log_loss, response_method="predict_proba", greater_is_better=False)
        model = LogisticRegressionCV(Cs=10, cv=GroupKFold(n_splits=FOLDS), scoring=scorer.set_score_request(
            soft=True, row_weight=True), solver="liblinear", fit_intercept=False, random_state=SEED, **penalty)
        model.set_fit_request(sample_weight=True)
        model.fit(np.vstack([x, x]), np.r_[np.ones(n), np.zeros(n)], sample_weight=np.r_[w * p, w * (1 - p)],
                  groups=groups, soft=np.r_[p, p], row_weight=np.r_[w, w])
        value = float(model.predict_proba(rows.at_zero[:, terms])[:, 1].mean())
    return AlpacaCv(value, float(np.ravel(model.C_)[0]))
