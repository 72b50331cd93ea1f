"""AlpacaEval's own estimator of its length-controlled model, the one behind its published figures: an L1 penalty
chosen by cross-validation (scikit-learn, which swapjudge does not require: `pip install scikit-learn`).

As AlpacaEval states it: LogisticRegressionCV without intercept, penalty l1, solver liblinear, the default grid
of 10 values of C over logspace(-4, 4), 5 folds over the rows duplicated into a label-1 copy weighted w * p and a
label-0 copy weighted w * (1 - p) (a row's two copies in one fold, the gamed baseline rows first as AlpacaEval
orders them), scored by the weighted soft log loss, random_state 123, refitted on every row at the chosen C.

The folds are AlpacaEval's GroupKFold written out (probes/alpaca_folds.py) and handed to scikit-learn as explicit
splits, so the installed scikit-learn and numpy do not change them; the default order is the one that reproduces
AlpacaEval's published leaderboards. A penalised fit has no interval here; the maximum-likelihood fit
(probes/alpaca_lc.py) gives it.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from swapjudge.errors import SwapjudgeError
from swapjudge.probes.alpaca_folds import DEFAULT_FOLD_ORDER, FoldOrder, duplicated_row_splits
from swapjudge.probes.alpaca_lc import AlpacaCv, TrainingRows

FOLDS = 5
SEED = 123


def _soft_log_loss(y: np.ndarray, q: np.ndarray, *, soft: np.ndarray, row_weight: np.ndarray) -> float:
    """Weighted soft log loss over duplicated rows (each copy carries its row's soft label and weight)."""
    q = np.clip(q, 1e-15, 1 - 1e-15)
    return float(-np.mean(row_weight * (soft * np.log(q) + (1 - soft) * np.log(1 - q))))


def fit_alpaca_cv(rows: TrainingRows, fold_order: FoldOrder = DEFAULT_FOLD_ORDER) -> AlpacaCv:
    """AlpacaEval's L1 cross-validated fit on the training rows of `training_rows`, its folds dealt in
    `fold_order` (probes/alpaca_folds.py); the mean prediction at equal length over a's rows."""
    try:
        import sklearn
        from sklearn.linear_model import LogisticRegressionCV
        from sklearn.metrics import make_scorer
    except ImportError:
        raise SwapjudgeError("AlpacaEval's cross-validated fit needs scikit-learn: pip install scikit-learn") from None
    if not rows.model_rows:
        return AlpacaCv(None, None, fold_order, "no row of a against b has a usable verdict")
    order = np.r_[rows.model_rows:rows.y.size, 0:rows.model_rows]  # AlpacaEval stacks the gamed rows first
    terms = rows.terms
    x, p, w = rows.x[order][:, terms], rows.y[order], rows.weight[order]
    n = p.size
    if n < FOLDS:
        return AlpacaCv(None, None, fold_order, f"{n} fitted rows: {FOLDS}-fold cross-validation needs {FOLDS}")
    major, minor = (int(v) for v in sklearn.__version__.split(".")[:2])
    # scikit-learn 1.8 spells the L1 penalty as l1_ratios=(1,) and deprecates `penalty`
    penalty: dict[str, Any] = {"l1_ratios": (1.0,)} if (major, minor) >= (1, 8) else {"penalty": "l1"}
    with sklearn.config_context(enable_metadata_routing=True), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # attribute layouts announced for scikit-learn 1.10
        scorer = make_scorer(_soft_log_loss, response_method="predict_proba", greater_is_better=False)
        model = LogisticRegressionCV(Cs=10, cv=duplicated_row_splits(n, FOLDS, fold_order),
                                     scoring=scorer.set_score_request(soft=True, row_weight=True),
                                     solver="liblinear", fit_intercept=False, random_state=SEED, **penalty)
        model.set_fit_request(sample_weight=True)
        model.fit(np.vstack([x, x]), np.r_[np.ones(n), np.zeros(n)], sample_weight=np.r_[w * p, w * (1 - p)],
                  soft=np.r_[p, p], row_weight=np.r_[w, w])
        value = float(model.predict_proba(rows.at_zero[:, terms])[:, 1].mean())
    fitted = iter(np.ravel(model.coef_).tolist())
    coefficients = tuple(next(fitted) if t else None for t in terms.tolist())
    return AlpacaCv(value, float(np.ravel(model.C_)[0]), fold_order,
                    coefficients=(coefficients[0], coefficients[1], coefficients[2]))
