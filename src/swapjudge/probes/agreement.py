"""Agreement with human or gold labels: is the judge right, in each order and once order is controlled?"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from swapjudge.core.accuracy import Accuracy, label_accuracy
from swapjudge.core.pairs import FIRST, SECOND, TIE, Outcome, PairTable, build_pairs
from swapjudge.core.records import select_judges
from swapjudge.core.swap import Consistency, consistency_of_pairs

# ---- Cohen's kappa ----------------------------------------------------------------------------------------

SPLIT = "tie"  # an order-cancelled split (flip, half-tie, consistent tie) reads as "no preference", like a tie
BOOTSTRAP = 2000


def cohen_kappa(a: Sequence[Any] | np.ndarray, b: Sequence[Any] | np.ndarray) -> float | None:
    """Cohen's kappa of two raters' labels on the same subjects (unweighted); None when undefined (no subjects,
    or both raters use a single category, so chance agreement is 1)."""
    a, b = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    if a.shape != b.shape:
        raise ValueError("the two raters must label the same subjects")
    if a.size == 0:
        return None
    categories = sorted(set(a.tolist()) | set(b.tolist()), key=str)
    index = {c: i for i, c in enumerate(categories)}
    ia = np.fromiter((index[v] for v in a), dtype=np.int64, count=a.size)
    ib = np.fromiter((index[v] for v in b), dtype=np.int64, count=b.size)
    k = len(categories)
    table = np.bincount(ia * k + ib, minlength=k * k).reshape(k, k) / a.size
    observed = float(np.trace(table))
    expected = float(table.sum(axis=1) @ table.sum(axis=0))
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)


def _kappa_interval(a: np.ndarray, b: np.ndarray, confidence: float, seed: int = 0) -> tuple[float | None,
                                                                                             float | None]:
    """Percentile bootstrap over subjects (pairs)."""
    n = a.size
    if n < 2:
        return None, None
    categories = sorted(set(a.tolist()) | set(b.tolist()), key=str)
    index = {c: i for i, c in enumerate(categories)}
    k = len(categories)
    cell = np.fromiter((index[u] * k + index[v] for u, v in zip(a, b, strict=True)), dtype=np.int64, count=n)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(BOOTSTRAP, n))
    # one bincount for all resamples: offset each resample's cells into its own block
    flat = (np.arange(BOOTSTRAP)[:, None] * k * k + cell[draws]).ravel()
    tables = np.bincount(flat, minlength=BOOTSTRAP * k * k).reshape(BOOTSTRAP, k, k) / n
    observed = np.trace(tables, axis1=1, axis2=2)
    expected = np.einsum("bi,bi->b", tables.sum(axis=2), tables.sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        kappas = (observed - expected) / (1 - expected)
    kappas = kappas[np.isfinite(kappas)]
    if kappas.size == 0:
        return None, None
    tail = (1 - confidence) / 2
    return float(np.quantile(kappas, tail)), float(np.quantile(kappas, 1 - tail))


@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa with a bootstrap interval over the `n` pairs it was computed on."""

    value: float | None
    low: float | None
    high: float | None
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high, "pairs": self.n}


def kappa(a: np.ndarray, b: np.ndarray, confidence: float = 0.95) -> Kappa:
    value = cohen_kappa(a, b)
    low, high = _kappa_interval(a, b, confidence) if value is not None else (None, None)
    return Kappa(value, low, high, int(a.size))


def identity_verdicts(x: np.ndarray, y: np.ndarray, vx: np.ndarray, vy: np.ndarray,
                      outcome: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each pair's verdicts as identities: in the x-first call, in the y-first call, and order-cancelled
    (a consistent winner, else "tie"); None where the verdict is missing."""
    def name(code: np.ndarray, first_is: np.ndarray, second_is: np.ndarray) -> np.ndarray:
        out = np.full(code.shape, None, dtype=object)
        out[code == FIRST] = first_is[code == FIRST]
        out[code == SECOND] = second_is[code == SECOND]
        out[code == TIE] = SPLIT
        return out

    x, y = np.asarray(x, dtype=object), np.asarray(y, dtype=object)
    cancelled = np.full(outcome.shape, SPLIT, dtype=object)
    cancelled[outcome == Outcome.X_WINS] = x[outcome == Outcome.X_WINS]
    cancelled[outcome == Outcome.Y_WINS] = y[outcome == Outcome.Y_WINS]
    cancelled[outcome == Outcome.INCOMPLETE] = None
    return name(vx, x, y), name(vy, y, x), cancelled


@dataclass(frozen=True)
class JudgeAgreement:
    """One judge's agreement with labels next to its swap-consistency: a judge can be perfectly consistent and
    consistently wrong, so the two are read together.

    kappa_labels_*: Cohen's kappa of the judge's verdicts (as identities, tie for a tie) against the labels on
    pairs whose label names one of the two answers or "tie": for the x-first calls, the y-first calls, and the
    order-cancelled verdict (a split counts as tie). kappa_orders: kappa between the verdicts of the two orders
    over complete pairs, i.e. swap agreement beyond chance. Categories are the pair's identities and tie.
    """

    judge: str | None
    consistency: Consistency
    accuracy: Accuracy | None
    labelled_pairs: int
    kappa_labels_x_first: Kappa | None
    kappa_labels_y_first: Kappa | None
    kappa_labels_cancelled: Kappa | None
    kappa_orders: Kappa

    def to_dict(self) -> dict[str, Any]:
        def k(value: Kappa | None) -> dict[str, Any] | None:
            return value.to_dict() if value else None

        return {
            "judge": self.judge,
            "consistency": self.consistency.to_dict(),
            "accuracy": self.accuracy.to_dict() if self.accuracy else None,
            "labelled_pairs": self.labelled_pairs,
            "kappa": {"labels": {"x_first": k(self.kappa_labels_x_first), "y_first": k(self.kappa_labels_y_first),
                                 "order_cancelled": k(self.kappa_labels_cancelled)},
                      "orders": self.kappa_orders.to_dict()},
        }


def judge_agreement(pairs: PairTable, *, judge: str | None = None, confidence: float = 0.95) -> JudgeAgreement:
    """Agreement figures of one judge's pairs (labels in the pairs' `label` column, None where absent)."""
    f = pairs.frame
    x, y = f.get_column("x").to_numpy(), f.get_column("y").to_numpy()
    label = np.asarray(f.get_column("label").to_list(), dtype=object)
    vx, vy, outcome = pairs.vx, pairs.vy, pairs.outcome
    cons = consistency_of_pairs(outcome, f.get_column("item").cast(pl.String).to_numpy(), confidence)
    acc = label_accuracy(x, y, label, vx, vy, outcome <= Outcome.TIE, confidence)
    ix, iy, cancelled = identity_verdicts(x, y, vx, vy, outcome)
    complete = outcome != Outcome.INCOMPLETE
    labelled = complete & np.array([lab is not None and lab in (a, b, SPLIT)
                                    for lab, a, b in zip(label, x, y, strict=True)], dtype=bool)

    def against_labels(verdicts: np.ndarray) -> Kappa | None:
        return kappa(verdicts[labelled], label[labelled], confidence) if labelled.any() else None

    return JudgeAgreement(
        judge=judge, consistency=cons, accuracy=acc, labelled_pairs=int(labelled.sum()),
        kappa_labels_x_first=against_labels(ix), kappa_labels_y_first=against_labels(iy),
        kappa_labels_cancelled=against_labels(cancelled),
        kappa_orders=kappa(ix[complete], iy[complete], confidence),
    )


def agreement(frame: pl.DataFrame, *, judge: str | None = None, confidence: float = 0.95) -> list[JudgeAgreement]:
    """Agreement per judge of validated records (only `judge` when given)."""
    judges = select_judges(frame, judge)
    all_pairs = build_pairs(frame)
    return [judge_agreement(PairTable(all_pairs.frame.filter(pl.col("judge") == name)), judge=name or None,
                            confidence=confidence) for name in judges]
