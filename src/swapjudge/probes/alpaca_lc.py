"""AlpacaEval 2's length-controlled win rate with its per-instruction difficulty term and its regularisation
toward the baseline (AlpacaEval's "length_controlled_v1"; Dubois et al. 2024, "Length-Controlled AlpacaEval").

One row per comparison of a (the model) with b (the baseline) on one instruction: a soft label p in [0, 1] (the
judge's preference for a; NaN when the row has no usable verdict), d = len(a) - len(b) and the instruction's
difficulty. The model has no intercept:

    P(a preferred) = sigmoid(b_length * tanh(d / sd(d)) + b_difficulty * difficulty + b_not_gamed * not_gamed)

with sd the sample standard deviation (ddof 1) over a's rows and not_gamed = 1 on a's rows. Regularisation
toward the baseline: the fit also gets the annotations of length-gamed versions of the baseline (prompted to be
verbose or concise) against the baseline itself, with not_gamed = 0, each row weighted lambda / (number of gamed
versions). Those rows pin b_length and b_difficulty to what they are for the baseline; only a's rows inform
b_not_gamed. The length-controlled win rate is the prediction at d = 0 averaged over a's rows:
mean_i sigmoid(b_difficulty * difficulty_i + b_not_gamed).

Fit: maximum likelihood with soft labels (the weighted soft log loss of probes/logit.py). AlpacaEval chooses an
L1 penalty by 5-fold cross-validation instead; bench/bench_alpaca_lc_cv.py measures how far apart the two land.
A term that is zero on every fitted row (all difficulties 0, or no length difference) is left out and its
coefficient is None.

Interval: instructions are the independent units; the rows of one instruction (a's, rounds included, and the
gamed baselines') are one cluster. Its variance is the influence-function (delta-method) variance of the
averaged prediction: the cluster-robust sandwich for the coefficients plus the spread of the prediction over
instructions, so it covers the win rate over instructions like these. It is formed on the logit scale (it stays
inside (0, 1)) with the small-sample factor and the t reference on clusters - 1 degrees of freedom of
probes/logit.py. Rows without a usable label count in sd(d) and in the average, as AlpacaEval counts them, but
not in the fit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from scipy import special

from swapjudge.errors import InputError
from swapjudge.probes.logit import fit_logit
from swapjudge.reading.pairs import FIRST, MISSING, SECOND, TIE, order_cancelled_score

COEFFICIENTS = ("length", "difficulty", "not_gamed_baseline")
DEFAULT_REGULARIZE = 0.2  # AlpacaEval's lambda
# record fields the rows are built from: AlpacaEval's own preference and the instruction's position
PREFERENCE = "preference"
INSTRUCTION_INDEX = "instruction_index"
# what `value` is and what `alpaca_cv.value` is, named in the JSON: only the second reproduces AlpacaEval's figures
ML_ESTIMATOR = "maximum_likelihood"
ALPACA_CV_ESTIMATOR = "alpaca_eval_l1_cv"


@dataclass(frozen=True)
class GamedRows:
    """Annotations of length-gamed versions of the baseline against the baseline: the gamed version's soft label
    (NaN: unusable), its standardised length difference (gamed minus baseline, before tanh), its instruction
    and that instruction's difficulty. `versions`: how many gamed versions the rows hold (AlpacaEval: 2).
    `instruction_difficulty`: the difficulty the file itself gives each instruction (its first row of it), which
    AlpacaEval's fit uses for a's rows too; None when the file carries none."""

    preference: np.ndarray
    std_delta_len: np.ndarray
    instruction: np.ndarray
    difficulty: np.ndarray
    versions: int
    instruction_difficulty: Mapping[str, float] | None = None


@dataclass(frozen=True)
class LcRows:
    """a's rows against b: soft label of a, len(a) - len(b), instruction key, and (optionally) its difficulty."""

    label: np.ndarray
    delta_len: np.ndarray
    instruction: np.ndarray
    difficulty: np.ndarray | None = None


@dataclass(frozen=True)
class AlpacaCv:
    """The win rate of AlpacaEval's own L1 cross-validated fit (probes/alpaca_cv.py), the C it chose and the order
    its folds were dealt in (probes/alpaca_folds.py)."""

    value: float | None
    c: float | None
    fold_order: str = "numpy_quicksort"
    reason: str | None = None  # why there is no estimate, when there is none
    # length, difficulty, not_gamed_baseline in this package's sign: AlpacaEval's weights file has -length
    coefficients: tuple[float | None, float | None, float | None] = (None, None, None)

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "C": self.c, "estimator": ALPACA_CV_ESTIMATOR, "fold_order": self.fold_order,
                "coefficients": dict(zip(COEFFICIENTS, self.coefficients, strict=True)), "reason": self.reason}


@dataclass(frozen=True)
class AlpacaLcFit:
    """The length-controlled win rate with the difficulty term and/or the regularisation toward the baseline."""

    value: float | None
    low: float | None
    high: float | None
    coefficients: tuple[float | None, float | None, float | None]  # length, difficulty, not_gamed_baseline
    coefficient_se: tuple[float | None, float | None, float | None]  # cluster-robust, clustered by instruction
    raw: float | None  # mean soft label of a over the fitted rows (AlpacaEval's win rate when every row counts)
    rows: int  # a's rows fitted (usable label)
    unlabelled: int  # a's rows without a usable label: in sd(d) and in the average only
    gamed_rows: int
    instructions: int  # clusters of the interval
    difficulty_term: bool
    regularized_lambda: float | None  # lambda when gamed rows were fitted
    confidence: float = 0.95
    reason: str | None = None  # why there is no estimate, when there is none
    cv: AlpacaCv | None = None  # AlpacaEval's own estimator on the same rows, when asked for

    def withheld(self) -> AlpacaLcFit:
        """Every figure None (the gate failed): the coefficient of not_gamed_baseline is the win rate's logit."""
        return dataclasses.replace(self, value=None, low=None, high=None, raw=None,
                                   coefficients=(None, None, None), coefficient_se=(None, None, None),
                                   cv=None if self.cv is None else AlpacaCv(None, None, self.cv.fold_order))

    def model_dict(self) -> dict[str, Any]:
        """The keys that describe the model (added under `length_controlled` of the length probe)."""
        return {"estimator": ML_ESTIMATOR, "difficulty_term": self.difficulty_term,
                "regularized_lambda": self.regularized_lambda,
                "coefficients": dict(zip(COEFFICIENTS, self.coefficients, strict=True)),
                "coefficient_se": dict(zip(COEFFICIENTS, self.coefficient_se, strict=True)),
                "rows_unlabelled": self.unlabelled, "gamed_rows": self.gamed_rows,
                "instructions": self.instructions, "independent": "instructions",
                "interval_method": "cluster_robust_delta", "reason": self.reason,
                "alpaca_cv": None if self.cv is None else self.cv.to_dict()}

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high, "raw": self.raw, "rows": self.rows,
                "confidence": self.confidence, **self.model_dict()}


@dataclass(frozen=True)
class TrainingRows:
    """The fit's rows: a's rows with a usable label first, then the gamed baseline rows; columns length,
    difficulty, not_gamed. `at_zero`: every one of a's rows at equal length (what the win rate averages)."""

    x: np.ndarray
    y: np.ndarray
    weight: np.ndarray
    cluster: np.ndarray
    model_rows: int
    at_zero: np.ndarray
    keys: np.ndarray  # every one of a's rows' instruction

    @property
    def terms(self) -> np.ndarray:
        """The columns to fit: a term that is zero on every fitted row has no coefficient."""
        return np.asarray(np.any(self.x != 0, axis=0))


def training_rows(label: np.ndarray, delta_len: np.ndarray, instruction: np.ndarray, *,
                  difficulty: np.ndarray | None = None, gamed: GamedRows | None = None,
                  regularize: float = DEFAULT_REGULARIZE) -> TrainingRows:
    """The design of the model above from a's rows and the gamed baseline rows (weighted regularize / versions).
    With a difficulty term and gamed rows that carry their own instruction difficulties, a's rows take theirs from
    the gamed rows where those list the instruction, as AlpacaEval does (its two side files agree to 1e-6, which
    the loader checks, but differ in the last digits)."""
    p = np.asarray(label, dtype=float)
    d = np.asarray(delta_len, dtype=float)
    keys = np.asarray(instruction).astype(str)
    n = p.size
    diff = np.zeros(n) if difficulty is None else np.asarray(difficulty, dtype=float)
    if difficulty is not None and gamed is not None and gamed.instruction_difficulty is not None:
        own = gamed.instruction_difficulty
        diff = np.array([own.get(k, v) for k, v in zip(keys.tolist(), diff.tolist(), strict=True)], dtype=float)
    usable = np.isfinite(p)
    sd = float(np.std(d, ddof=1)) if n > 1 else 0.0  # AlpacaEval standardises with pandas' std (ddof 1)
    model_x = np.column_stack([np.tanh(d / sd) if sd > 0 else np.zeros(n), diff, np.ones(n)])
    x, y, w, groups = model_x[usable], p[usable], np.ones(int(usable.sum())), keys[usable]
    if gamed is not None:
        ok = np.isfinite(gamed.preference)
        gamed_x = np.column_stack([np.tanh(gamed.std_delta_len[ok]), gamed.difficulty[ok], np.zeros(int(ok.sum()))])
        x, y = np.vstack([x, gamed_x]), np.concatenate([y, gamed.preference[ok]])
        w = np.concatenate([w, np.full(int(ok.sum()), regularize / max(gamed.versions, 1))])
        groups = np.concatenate([groups, np.asarray(gamed.instruction).astype(str)[ok]])
    at_zero = model_x.copy()
    at_zero[:, 0] = 0.0
    return TrainingRows(x, y, w, groups, int(usable.sum()), at_zero, keys)


def fit_alpaca_lc(label: np.ndarray, delta_len: np.ndarray, instruction: np.ndarray, *,
                  difficulty: np.ndarray | None = None, gamed: GamedRows | None = None,
                  regularize: float = DEFAULT_REGULARIZE, confidence: float = 0.95) -> AlpacaLcFit:
    """Fit the model above on a's rows (soft label, len(a) - len(b), instruction key, difficulty) and the gamed
    baseline rows, if any; the length-controlled win rate with its interval over instructions."""
    rows = training_rows(label, delta_len, instruction, difficulty=difficulty, gamed=gamed, regularize=regularize)
    n = rows.keys.size
    fitted = rows.y[:rows.model_rows]
    base = AlpacaLcFit(None, None, None, (None, None, None), (None, None, None),
                       float(fitted.mean()) if fitted.size else None, rows.model_rows, n - rows.model_rows,
                       rows.y.size - rows.model_rows, int(np.unique(np.concatenate([rows.keys, rows.cluster])).size),
                       difficulty is not None, None if gamed is None else float(regularize), confidence)
    if not rows.model_rows:
        return dataclasses.replace(base, reason="no row of a against b has a usable verdict")
    terms = rows.terms
    if np.linalg.matrix_rank(rows.x[:, terms]) < terms.sum():
        return dataclasses.replace(base, reason="the terms are collinear (e.g. the same difficulty on every "
                                                "instruction): their coefficients cannot be told apart")
    fit = fit_logit(rows.x[:, terms], rows.y, weights=rows.weight)
    if fit is None:
        return dataclasses.replace(base, reason="no finite fit: the verdicts are separated (e.g. a won or lost "
                                                "every instruction)")
    beta = np.zeros(3)
    beta[terms] = fit.coef
    return _with_interval(base, beta, rows)


def _with_interval(base: AlpacaLcFit, beta: np.ndarray, rows: TrainingRows) -> AlpacaLcFit:
    """The averaged prediction at d = 0 and its cluster-robust delta-method interval (see the module text)."""
    terms, x, y, w, groups, at_zero, keys = (rows.terms, rows.x, rows.y, rows.weight, rows.cluster, rows.at_zero,
                                             rows.keys)
    g = special.expit(at_zero @ beta)
    value = float(g.mean())
    xt = x[:, terms]
    q = special.expit(xt @ beta[terms])
    hessian = (xt * (w * q * (1 - q))[:, None]).T @ xt
    score = xt * (w * (y - q))[:, None]
    gradient = ((g * (1 - g))[:, None] * at_zero[:, terms]).mean(axis=0)
    # each fitted row moves the coefficients by H^-1 score; each of a's rows moves the average by (g - value) / n
    influence = np.concatenate([score @ np.linalg.solve(hessian, gradient), (g - value) / g.size])
    _, codes = np.unique(np.concatenate([groups, keys]), return_inverse=True)
    clusters = int(codes.max()) + 1
    coef_se: list[float | None] = [None, None, None]
    coefs: list[float | None] = [float(b) if t else None for b, t in zip(beta, terms, strict=True)]
    if clusters < 2:
        return dataclasses.replace(base, value=value, coefficients=_three(coefs), instructions=clusters,
                                   reason="one instruction only: no interval")
    n_fit, k = xt.shape
    factor = clusters / (clusters - 1) * (n_fit - 1) / max(n_fit - k, 1)  # as probes/logit.py clusters
    per_cluster = np.bincount(codes, weights=influence, minlength=clusters)
    variance = factor * float(per_cluster @ per_cluster)
    scores = np.zeros((clusters, k))
    np.add.at(scores, codes[:n_fit], score)
    bread = np.linalg.inv(hessian)
    cov = factor * bread @ scores.T @ scores @ bread
    for j, index in enumerate(np.flatnonzero(terms)):
        coef_se[index] = float(np.sqrt(max(cov[j, j], 0.0)))
    critical = float(special.stdtrit(clusters - 1, 0.5 + base.confidence / 2))
    if not 0 < value < 1:
        return dataclasses.replace(base, value=value, coefficients=_three(coefs), coefficient_se=_three(coef_se))
    half = critical * np.sqrt(variance) / (value * (1 - value))  # logit scale: the interval stays in (0, 1)
    centre = float(special.logit(value))
    return dataclasses.replace(base, value=value, low=float(special.expit(centre - half)),
                               high=float(special.expit(centre + half)), coefficients=_three(coefs),
                               coefficient_se=_three(coef_se), instructions=clusters)


def _three(values: list[float | None]) -> tuple[float | None, float | None, float | None]:
    return values[0], values[1], values[2]


def soft_label(preference: Any, verdict_names_a: bool | None, where: str) -> float:
    """The soft label of a from one call: AlpacaEval's preference (1 to 2, 2 = output_2; 1.5 or 0 = draw) read
    toward the call's winner, p(winner) = 1/2 + |preference - 3/2|, or from the verdict alone (a won 1, b won 0,
    tie 1/2). `verdict_names_a`: True/False when the verdict names a/b, None for a tie; NaN is returned by the
    caller for a null verdict."""
    if preference is None:
        return 0.5 if verdict_names_a is None else float(verdict_names_a)
    try:
        value = float(preference)
    except (TypeError, ValueError):
        raise InputError(f"{where}: `preference` must be a number, got {preference!r}") from None
    value = 1.5 if value == 0 else value
    if not 1 <= value <= 2:
        raise InputError(f"{where}: `preference` must lie between 1 and 2 (AlpacaEval's scale), got {value!r}")
    if (value == 1.5) != (verdict_names_a is None):
        raise InputError(f"{where}: `preference` {value!r} disagrees with the verdict (1.5 is a draw)")
    winner = 0.5 + abs(value - 1.5)
    return winner if verdict_names_a else 1 - winner


def rows_for_pair(pairs: pl.DataFrame, a: str, b: str, len_x: np.ndarray, len_y: np.ndarray,
                  difficulty: Mapping[str, float] | None = None, difficulty_source: str = "",
                  records_source: str = "") -> LcRows:
    """a's rows against b from a pair table (reading/pairs.py, built with keep=(preference, instruction_index)) and
    the answer lengths of x and y per pair. Both orders judged: the order-cancelled score of the pair (1, 1/2, 0;
    an incomplete pair has no label). Single-order data (no pair of a and b judged in both orders): each call's
    soft label (`soft_label`). The instruction is the records' instruction_index when they carry it (AlpacaEval
    annotations imported with `import alpaca-eval`), else the item. The sources name the files in errors."""
    x = pairs.get_column("x").to_numpy()
    y = pairs.get_column("y").to_numpy()
    mine = ((x == a) & (y == b)) | ((x == b) & (y == a))
    frame = pairs.filter(pl.Series(mine))
    a_is_x = x[mine] == a
    delta = np.where(a_is_x, len_x[mine] - len_y[mine], len_y[mine] - len_x[mine]).astype(float)
    single = bool((frame.get_column("calls") == 1).all())
    if not single:
        score_x = order_cancelled_score(frame.get_column("outcome").to_numpy())
        label = np.where(a_is_x, score_x, 1 - score_x)
    else:
        label = _single_call_labels(frame, a_is_x, records_source)
    keys = _instruction_keys(frame)
    diff = None if difficulty is None else difficulty_for(keys, difficulty, difficulty_source)
    return LcRows(label, delta, keys, diff)


def _single_call_labels(frame: pl.DataFrame, a_is_x: np.ndarray, source: str) -> np.ndarray:
    """Soft label of a from each pair's one call (the call that showed x first, or the one that showed y first)."""
    x_first = frame.get_column("n_xf").to_numpy() > 0
    code = np.where(x_first, frame.get_column("vx").to_numpy(), frame.get_column("vy").to_numpy())
    # the slot the verdict names, mapped to "x won": x sat first in the x-first call, second in the other
    x_won = np.where(x_first, code == FIRST, code == SECOND)
    names_a: list[bool | None] = [None if c == TIE else bool(xw == ax) for c, xw, ax in
                                  zip(code, x_won, a_is_x, strict=True)]
    prefs = [None] * frame.height
    if f"{PREFERENCE}_xf" in frame.columns:
        px, py = frame.get_column(f"{PREFERENCE}_xf").to_list(), frame.get_column(f"{PREFERENCE}_yf").to_list()
        prefs = [vx if xf else vy for vx, vy, xf in zip(px, py, x_first, strict=True)]
    items = frame.get_column("item").to_list()
    where = f"{source}: " if source else ""
    return np.array([np.nan if c == MISSING else soft_label(pref, na, f"{where}item {item!r}")
                     for c, pref, na, item in zip(code, prefs, names_a, items, strict=True)], dtype=float)


def _instruction_keys(frame: pl.DataFrame) -> np.ndarray:
    item = pl.col("item").cast(pl.String)
    if f"{INSTRUCTION_INDEX}_xf" not in frame.columns:
        return frame.select(item).to_series().to_numpy().astype(str)
    index = pl.coalesce(pl.col(f"{INSTRUCTION_INDEX}_xf"), pl.col(f"{INSTRUCTION_INDEX}_yf")).cast(pl.String)
    return frame.select(pl.coalesce(index.str.strip_chars(), item)).to_series().to_numpy().astype(str)


def difficulty_for(keys: np.ndarray, difficulty: Mapping[str, float], source: str) -> np.ndarray:
    """Each row's difficulty; an instruction the difficulty file lacks is an InputError naming the file."""
    missing = sorted({str(k) for k in keys if str(k) not in difficulty})
    if missing:
        raise InputError(f"no instruction_difficulty for instruction {missing[0]!r}", path=source or None,
                         more=len(missing) - 1)
    return np.array([difficulty[str(k)] for k in keys], dtype=float)
