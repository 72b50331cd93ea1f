"""Prediction-powered inference with labels drawn where the judge is unsure (active statistical inference:
Zrnic and Candès 2024), and the sampling design that draws them.

Each of the N items is drawn for a person's label independently with a known probability pi_i (a Poisson
design). The estimate is the judge's score on every item plus the 1/pi-weighted correction on the labelled ones:

    theta = (1/N) sum_i [ lam * f_i + xi_i * (y_i - lam * f_i) / pi_i ]        (xi_i = 1 when item i is labelled)

It is unbiased for the people's mean over the N items whatever pi is, as long as every pi_i > 0 and is the
probability the item really had: a good uncertainty only narrows the interval, a misleading one widens it (the
floor on pi bounds how much). `lam` is tuned as PPI++ does: the variance-minimising weight, estimated from the
items, clipped to [0, 1]. The interval is a normal one over items, the independent units.

A design whose probabilities are all equal is a uniform random sample: `corrected_mean` then gives PPI++'s
estimate of `core.ppi` exactly (the figures `calibrate` gave before designs were recorded).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from swapjudge.core.confidence import CONSISTENCY, FLIP, HALF_TIE, INCOMPLETE, SINGLE_ORDER, PairConfidence
from swapjudge.core.ppi import PPIResult, normal_estimate, ppi_mean, sample_variance
from swapjudge.core.stats import normal_quantile

FloatArray = npt.NDArray[np.float64]

UNIFORM = "uniform"
ACTIVE = "active"
DESIGNS = (UNIFORM, ACTIVE)
DEFAULT_FLOOR_SHARE = 0.25  # pi_min = this share of the uniform rate budget/N: caps a label's weight at 4x uniform


def _terms(y: FloatArray, fl: FloatArray, pl: FloatArray, fu: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per item over all N: A = xi y / pi, B = f (xi / pi - 1), and f; labelled items first."""
    a = np.concatenate([y / pl, np.zeros(fu.size)])
    b = np.concatenate([fl * (1.0 / pl - 1.0), -fu])
    return a, b, np.concatenate([fl, fu])


def ipw_lambda(y: FloatArray, f_labelled: FloatArray, pi_labelled: FloatArray, f_unlabelled: FloatArray) -> float:
    """The weight minimising the variance of A - lam B (theta's per-item term): cov(A, B) / var(B), in [0, 1]."""
    a, b, _ = _terms(y, f_labelled, pi_labelled, f_unlabelled)
    var_b = sample_variance(b)
    if y.size < 2 or var_b == 0.0:
        return 0.0
    return float(np.clip(np.cov(a, b, ddof=1)[0, 1] / var_b, 0.0, 1.0))


def ipw_ppi_mean(y: npt.ArrayLike, f_labelled: npt.ArrayLike, pi_labelled: npt.ArrayLike,
                 f_unlabelled: npt.ArrayLike, *, confidence: float = 0.95, lam: float | None = None,
                 clip: bool = True) -> PPIResult:
    """Inverse-probability-weighted PPI of the people's mean over all items (labelled and not).

    `pi_labelled`: the probability each labelled item had of being drawn, in (0, 1]; the unlabelled items'
    probabilities are not needed (their term is the judge's score alone). `lam` None: tuned; 1: the classic
    difference estimator; 0: the people's labels alone (Horvitz-Thompson). `clip` keeps intervals in [0, 1].
    """
    y_arr = np.asarray(y, dtype=np.float64).ravel()
    fl = np.asarray(f_labelled, dtype=np.float64).ravel()
    pl = np.asarray(pi_labelled, dtype=np.float64).ravel()
    fu = np.asarray(f_unlabelled, dtype=np.float64).ravel()
    if not y_arr.size == fl.size == pl.size:
        raise ValueError("y, f_labelled and pi_labelled must describe the same items")
    if y_arr.size == 0:
        raise ValueError("no labelled items")
    if not np.all((pl > 0.0) & (pl <= 1.0)):
        raise ValueError("pi_labelled must be probabilities in (0, 1]")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1")
    z = normal_quantile(confidence)
    n, big_n = y_arr.size, y_arr.size + fu.size
    weight = ipw_lambda(y_arr, fl, pl, fu) if lam is None else float(lam)
    a, b, f_all = _terms(y_arr, fl, pl, fu)
    phi = a - weight * b  # = lam f + xi (y - lam f) / pi
    corrected = normal_estimate(float(phi.mean()), sample_variance(phi) / big_n, n, z, clip)
    human = normal_estimate(float(a.mean()), sample_variance(a) / big_n, n, z, clip)
    judge = normal_estimate(float(f_all.mean()), sample_variance(f_all) / big_n, big_n, z, clip)
    gap = np.concatenate([(y_arr - fl) / pl, np.zeros(fu.size)])
    rectifier = normal_estimate(float(gap.mean()), sample_variance(gap) / big_n, n, z, clip=False)
    sd_y, sd_f = sample_variance(y_arr), sample_variance(fl)
    correlation = float(np.corrcoef(y_arr, fl)[0, 1]) if n > 1 and sd_y > 0 and sd_f > 0 else None
    return PPIResult(corrected=corrected, human_only=human, judge_only=judge, rectifier=rectifier, lam=weight,
                     n_human=n, n_unlabelled=fu.size, correlation=correlation, confidence=confidence)


def is_uniform(pi_labelled: npt.ArrayLike) -> bool:
    """Whether recorded probabilities describe a uniform design (all equal, up to float noise)."""
    p = np.asarray(pi_labelled, dtype=np.float64).ravel()
    return bool(p.size == 0 or np.allclose(p, p[0], rtol=1e-9, atol=0.0))


def corrected_mean(y: npt.ArrayLike, f_labelled: npt.ArrayLike, f_unlabelled: npt.ArrayLike,
                   pi_labelled: npt.ArrayLike | None = None, *, confidence: float = 0.95,
                   clip: bool = True) -> tuple[PPIResult, str]:
    """The corrected mean and the design it was read under: PPI++ for no or equal `pi`, IPW-PPI otherwise."""
    if pi_labelled is None or is_uniform(pi_labelled):
        return ppi_mean(y, f_labelled, f_unlabelled, confidence=confidence, clip=clip), UNIFORM
    return ipw_ppi_mean(y, f_labelled, pi_labelled, f_unlabelled, confidence=confidence, clip=clip), ACTIVE


@dataclass(frozen=True)
class SamplingDesign:
    """Inclusion probabilities of a sampling design over items, with what made them."""

    design: str
    pi: tuple[float, ...]
    budget: float
    pi_min: float

    @property
    def expected_labels(self) -> float:
        return float(sum(self.pi))

    def to_dict(self) -> dict[str, Any]:
        return {"design": self.design, "budget": self.budget, "pi_min": self.pi_min,
                "expected_labels": self.expected_labels, "items": len(self.pi)}


UNSETTLED_UNCERTAINTY = 0.25  # a split pair scores 0.5 against a person's 0 or 1: squared error 0.25


def call_error_from_flips(flip_rate: float) -> float:
    """A call's error rate e implied by a judge's flip rate r when each call errs independently: r = 2e(1 - e)."""
    return float((1.0 - math.sqrt(max(0.0, 1.0 - 2.0 * min(flip_rate, 0.5)))) / 2.0)


def pair_uncertainty(confidence: PairConfidence) -> FloatArray:
    """u per pair: the expected squared error of its pair score (order-cancelled, half credit) against a person.

    A pair never settled (a flip, a half-tie, incomplete) scores 0.5, a quarter off a person's win or loss:
    u = 0.25. A consistent pair is off by 1 when both calls erred; with each call wrong with probability e and
    the two independently, that is e^2 / (e^2 + (1 - e)^2) once they agree. e is 1 - the pair's order-averaged
    probability of its verdict where the calls carry probabilities; without them, the error rate the judge's own
    flip rate implies (`call_error_from_flips`). Calls that err together make this optimistic: the floor
    `pi_min` of the design is what keeps the estimate's interval valid then."""
    c = np.asarray(confidence.confidence, dtype=np.float64)
    both = confidence.swap_seen & (confidence.reason != INCOMPLETE)
    flips = both & np.isin(confidence.reason, (FLIP, HALF_TIE))
    flip_rate = float(flips.sum() / both.sum()) if both.any() else 0.5
    e = np.where(confidence.measure == CONSISTENCY, call_error_from_flips(flip_rate), np.clip(1.0 - c, 0.0, 0.5))
    wrong_twice = e**2 / (e**2 + (1.0 - e) ** 2)
    single = confidence.measure == SINGLE_ORDER  # one call, no agreement to learn from: its own error
    u = np.where(single, np.clip(1.0 - c, 0.0, 1.0), wrong_twice)
    return np.where(np.isnan(c), UNSETTLED_UNCERTAINTY, u)


def inclusion_probabilities(uncertainty: npt.ArrayLike, budget: float, *, design: str = ACTIVE,
                            pi_min: float | None = None) -> SamplingDesign:
    """pi proportional to sqrt(u), clipped to [pi_min, 1] and scaled so that the pi add up to `budget`.

    `uncertainty`: u >= 0 per item (larger where the judge is less sure). `design` uniform ignores u
    (pi = budget / N). `pi_min` None: a quarter of the uniform rate, which caps any label's weight at four
    times a uniform one's, so an uncertainty unrelated to the judge's errors costs width, never validity.
    """
    u = np.asarray(uncertainty, dtype=np.float64).ravel()
    n = u.size
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {', '.join(DESIGNS)}, got {design!r}")
    if n == 0:
        raise ValueError("no items to draw from")
    if not np.all(np.isfinite(u)) or np.any(u < 0):
        raise ValueError("uncertainty must be finite and >= 0")
    if not 0 < budget <= n:
        raise ValueError(f"budget must be between 0 and the number of items ({n}), got {budget}")
    rate = budget / n
    floor = DEFAULT_FLOOR_SHARE * rate if pi_min is None else float(pi_min)
    if not 0.0 < floor <= rate:
        raise ValueError(f"pi_min must be in (0, budget / items = {rate:.4g}], got {floor}")
    root = np.sqrt(u)
    if design == UNIFORM or not np.any(root > 0) or np.allclose(root, root[0]):
        return SamplingDesign(UNIFORM if design == UNIFORM else ACTIVE, tuple([rate] * n), float(budget), floor)

    root = np.maximum(root, 1e-9 * float(root.max()))  # a u of 0 still reaches the budget when scaled far enough

    def total(scale: float) -> float:
        return float(np.clip(scale * root, floor, 1.0).sum())

    low, high = 0.0, 1.0
    while total(high) < budget:  # the scale at which the clipped pi reach the budget, by bisection
        high *= 2.0
    for _ in range(60):  # 2^-60 of the scale: far below a float's use here
        mid = 0.5 * (low + high)
        low, high = (mid, high) if total(mid) < budget else (low, mid)
    pi = np.clip(high * root, floor, 1.0)
    return SamplingDesign(ACTIVE, tuple(float(p) for p in pi), float(budget), floor)


def draw(design: SamplingDesign, rng: np.random.Generator) -> npt.NDArray[np.bool_]:
    """One Poisson draw of the design: item i labelled with probability pi_i, independently."""
    return rng.random(len(design.pi)) < np.asarray(design.pi)


@dataclass(frozen=True)
class LabelBudget:
    """The labels a target interval width needs, under a uniform and an active design, predicted from a pilot.

    `uniform` / `active`: the expected number of labels (None where even labelling every item would not reach
    the width); `*_width`: the predicted width at that budget. The prediction models a label's squared
    residual (person - lambda x judge) as linear in the uncertainty u, fitted on the pilot's labels."""

    width: float
    confidence: float
    items: int
    pilot_labels: int
    lam: float
    uniform: int | None
    uniform_width: float | None
    active: int | None
    active_width: float | None
    residual_flat: float  # fitted squared residual at u = 0 ...
    residual_slope: float  # ... and its increase per unit of u

    def to_dict(self) -> dict[str, Any]:
        ratio = (self.active / self.uniform if self.active is not None and self.uniform else None)
        return {"width": self.width, "confidence": self.confidence, "items": self.items,
                "pilot_labels": self.pilot_labels, "lambda": self.lam,
                "uniform": {"labels": self.uniform, "width": self.uniform_width},
                "active": {"labels": self.active, "width": self.active_width},
                "active_over_uniform": ratio,
                "residual_model": {"flat": self.residual_flat, "slope": self.residual_slope}}


def _smallest(width_at: Any, target: float, n_max: int) -> tuple[int | None, float | None]:
    """The least budget in [2, n_max] whose predicted width is at most `target` (widths fall as budgets grow)."""
    if width_at(n_max) > target:
        return None, None
    low, high = 2, n_max
    if width_at(low) <= target:
        return low, float(width_at(low))
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if width_at(mid) > target else (low, mid)
    return high, float(width_at(high))


def label_budget(f_all: npt.ArrayLike, u_all: npt.ArrayLike, labelled: npt.ArrayLike, y: npt.ArrayLike,
                 pi_labelled: npt.ArrayLike | None, *, width: float, confidence: float = 0.95,
                 pi_min_share: float = DEFAULT_FLOOR_SHARE) -> LabelBudget:
    """Labels needed for a corrected interval of total `width`, uniform and active, from a pilot.

    `f_all`, `u_all`: the judge's score and uncertainty on every item; `labelled`: the indices of the pilot's
    labelled items, `y` their people's scores and `pi_labelled` the probabilities they were drawn with (None:
    a uniform pilot). Predicted variances: uniform, PPI++'s var(y - lam f) / n + lam^2 var(f) / (N - n) with lam
tuned for n; active, the
    1/pi-weighted estimator's (1/N^2) sum (1/pi_i - 1) m(u_i) + var(y) / N, with pi from
    `inclusion_probabilities` at each budget and m(u) = a + b u the fitted squared residual."""
    f = np.asarray(f_all, dtype=np.float64).ravel()
    u = np.asarray(u_all, dtype=np.float64).ravel()
    idx = np.asarray(labelled, dtype=np.int64).ravel()
    y_arr = np.asarray(y, dtype=np.float64).ravel()
    n_items = f.size
    if u.size != n_items or idx.size != y_arr.size:
        raise ValueError("f_all and u_all, labelled and y must have the same lengths")
    if idx.size < 3:
        raise ValueError("a pilot needs at least 3 labelled items")
    if not 0.0 < width < 1.0:
        raise ValueError(f"width must be between 0 and 1, got {width}")
    w = np.ones(idx.size) if pi_labelled is None else 1.0 / np.asarray(pi_labelled, dtype=np.float64).ravel()
    fl = f[idx]
    lam = tuned_weighted_lambda(y_arr, fl, w)
    design_matrix = np.column_stack([np.ones(idx.size), u[idx]]) * np.sqrt(w)[:, None]

    def residual_model(weight: float) -> tuple[float, float]:
        """m(u) = a + b u for (y - weight f)^2, by least squares weighted 1/pi (the population's mix of u)."""
        coef, *_ = np.linalg.lstsq(design_matrix, (y_arr - weight * fl) ** 2 * np.sqrt(w), rcond=None)
        return float(coef[0]), float(coef[1])

    # the active estimator tunes its own lambda: its predicted width is the least over a grid of them
    models = [(g, *residual_model(g)) for g in np.linspace(0.0, 1.0, 21)]
    flat, slope = residual_model(lam)
    z = normal_quantile(confidence)
    var_f = sample_variance(f)
    var_y = float(np.average((y_arr - np.average(y_arr, weights=w)) ** 2, weights=w))

    cov_yf = float(np.average((y_arr - np.average(y_arr, weights=w)) * (fl - np.average(fl, weights=w)),
                              weights=w))

    def uniform_width(n: int) -> float:
        unl = n_items - n
        # PPI++ at n labels, its lambda tuned for n: cov / ((1 + n / (N - n)) var f)
        weight = float(np.clip(cov_yf / (var_f * (1 + n / unl)), 0.0, 1.0)) if var_f > 0 else 0.0
        residual = max(var_y - 2 * weight * cov_yf + weight**2 * var_f, 0.0)
        return 2 * z * math.sqrt(residual / n + weight**2 * var_f / unl)

    def active_width(n: int) -> float:
        pi = np.asarray(inclusion_probabilities(u, n, pi_min=pi_min_share * n / n_items).pi)
        sampling = min(float(np.sum((1.0 / pi - 1.0) * np.maximum(a + b * u, 1e-6))) for _, a, b in models)
        return 2 * z * math.sqrt(sampling / n_items**2 + var_y / n_items)

    n_uniform, w_uniform = _smallest(uniform_width, width, n_items - 1)
    n_active, w_active = _smallest(active_width, width, n_items)
    return LabelBudget(width=width, confidence=confidence, items=n_items, pilot_labels=int(idx.size), lam=lam,
                       uniform=n_uniform, uniform_width=w_uniform, active=n_active, active_width=w_active,
                       residual_flat=flat, residual_slope=slope)


def tuned_weighted_lambda(y: FloatArray, f: FloatArray, w: FloatArray) -> float:
    """cov(y, f) / var(f) with weights w (1/pi), clipped to [0, 1]: the pilot's PPI++-style weight."""
    fm, ym = np.average(f, weights=w), np.average(y, weights=w)
    var = float(np.average((f - fm) ** 2, weights=w))
    if var == 0.0:
        return 0.0
    return float(np.clip(np.average((f - fm) * (y - ym), weights=w) / var, 0.0, 1.0))
