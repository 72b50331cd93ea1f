"""Agreement with human or gold labels: is the judge right, in each order and once order is controlled?"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from swapjudge.core.accuracy import Accuracy, label_accuracy
from swapjudge.core.swap import Consistency, consistency_of_pairs
from swapjudge.reading.pairs import FIRST, MISSING, SECOND, TIE, Outcome, PairTable, build_pairs, classify
from swapjudge.reading.records import select_judges
from swapjudge.reading.reduce import PairCounts

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


def _kappa_interval(a: np.ndarray, b: np.ndarray, confidence: float, cluster: np.ndarray | None = None,
                    seed: int = 0) -> tuple[float | None, float | None]:
    """Percentile bootstrap that resamples clusters (items: all their subjects together), or each subject alone
    when no cluster is given; None when there are fewer than two clusters."""
    n = a.size
    unit = np.arange(n) if cluster is None else np.unique(np.asarray(cluster, dtype=object).astype(str),
                                                          return_inverse=True)[1].reshape(-1)
    groups = int(unit.max()) + 1 if n else 0
    if groups < 2:
        return None, None
    categories = sorted(set(a.tolist()) | set(b.tolist()), key=str)
    index = {c: i for i, c in enumerate(categories)}
    k = len(categories)
    cell = np.fromiter((index[u] * k + index[v] for u, v in zip(a, b, strict=True)), dtype=np.int64, count=n)
    # each cluster's own k x k table of counts; a resample's table is the weighted sum of its drawn clusters'
    per_cluster = np.bincount(unit * k * k + cell, minlength=groups * k * k).reshape(groups, k * k)
    return _interval_of_tables(per_cluster, k, confidence, seed)


def _interval_of_tables(per_cluster: np.ndarray, k: int, confidence: float,
                        seed: int = 0) -> tuple[float | None, float | None]:
    """The percentile bootstrap of kappa from each cluster's k x k table of counts (clusters in item order)."""
    groups = per_cluster.shape[0]
    rng = np.random.default_rng(seed)
    kappas = np.empty(BOOTSTRAP)
    batch = max(1, min(BOOTSTRAP, 2_000_000 // groups))  # bounds the draws held at once
    for start in range(0, BOOTSTRAP, batch):
        size = min(batch, BOOTSTRAP - start)
        draws = rng.integers(0, groups, size=(size, groups))
        weights = np.bincount((draws + groups * np.arange(size)[:, None]).ravel(), minlength=size * groups)
        counts = (weights.reshape(size, groups) @ per_cluster).astype(np.float64).reshape(size, k, k)
        with np.errstate(divide="ignore", invalid="ignore"):
            tables = counts / counts.sum(axis=(1, 2))[:, None, None]
            observed = np.trace(tables, axis1=1, axis2=2)
            expected = np.einsum("bi,bi->b", tables.sum(axis=2), tables.sum(axis=1))
            kappas[start:start + size] = (observed - expected) / (1 - expected)
    kappas = kappas[np.isfinite(kappas)]
    if kappas.size == 0:
        return None, None
    tail = (1 - confidence) / 2
    return float(np.quantile(kappas, tail)), float(np.quantile(kappas, 1 - tail))


@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa over `n` subjects (pairs, or calls), with a bootstrap interval whose resampled unit is
    `interval_unit` (the item: pairs and calls of one item are not independent)."""

    value: float | None
    low: float | None
    high: float | None
    n: int
    subject: str = "pair"
    interval_unit: str = "pair"

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high, f"{self.subject}s": self.n,
                "interval_unit": self.interval_unit}


def kappa(a: np.ndarray, b: np.ndarray, confidence: float = 0.95, *, cluster: np.ndarray | None = None,
          subject: str = "pair") -> Kappa:
    """Cohen's kappa of `a` against `b`, its interval resampling `cluster`s (each subject when None)."""
    value = cohen_kappa(a, b)
    low, high = _kappa_interval(a, b, confidence, cluster) if value is not None else (None, None)
    return Kappa(value, low, high, int(a.size), subject, subject if cluster is None else "item")


POSITIONS = np.array(["first", "second", "tie"], dtype=object)  # the categories of every kappa
_MIRROR = np.array([SECOND, FIRST, TIE])  # a verdict of the y-first call read in the x-first call's frame


def _positional(code: np.ndarray) -> np.ndarray:
    """first / second / tie for each verdict code, None where the verdict is missing."""
    out = np.full(code.shape, None, dtype=object)
    present = code != MISSING
    out[present] = POSITIONS[code[present]]
    return out


def label_positions(x: np.ndarray, y: np.ndarray, label: np.ndarray) -> np.ndarray:
    """Each pair's label in its x-first call's frame: first (x is better), second (y is), tie; None otherwise."""
    out = np.full(label.shape, None, dtype=object)
    out[label == x] = "first"
    out[label == y] = "second"
    out[label == SPLIT] = "tie"
    return out


def frame_verdicts(vx: np.ndarray, vy: np.ndarray, outcome: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                                   np.ndarray]:
    """Each pair's verdicts in its own positional frame, that of the x-first call (x = first, y = second): the
    x-first call, the y-first call mirrored into that frame, and the order-cancelled verdict (a consistent
    winner, else tie); None where missing. Kappa's chance agreement then runs over categories every pair can
    take, not over system names most pairs cannot."""
    mirrored = np.where(vy == MISSING, MISSING, _MIRROR[np.clip(vy, 0, 2)])
    cancelled = np.full(outcome.shape, "tie", dtype=object)
    cancelled[outcome == Outcome.X_WINS] = "first"
    cancelled[outcome == Outcome.Y_WINS] = "second"
    cancelled[outcome == Outcome.INCOMPLETE] = None
    return _positional(vx), _positional(mirrored), cancelled


@dataclass(frozen=True)
class JudgeAgreement:
    """One judge's agreement with labels next to its swap-consistency: a judge can be perfectly consistent and
    consistently wrong, so the two are read together.

    Every kappa uses positional categories (first / second / tie) in each pair's own frame, as published
    agreement studies do. kappa_labels_x_first / _y_first: each call of a complete labelled pair against the
    label, both in that call's frame; kappa_labels_cancelled: the order-cancelled verdict (a split counts as
    tie) against the label in the x-first frame; kappa_labels_per_call: every labelled call with a verdict,
    complete pair or not (single-order data too), against the label in its own frame. kappa_orders: the two
    orders' verdicts over complete pairs, the y-first one mirrored into the x-first frame, i.e. swap agreement
    beyond chance. A label counts when it names one of the pair's two answers or "tie".
    """

    judge: str | None
    consistency: Consistency
    accuracy: Accuracy | None
    labelled_pairs: int
    kappa_labels_x_first: Kappa | None
    kappa_labels_y_first: Kappa | None
    kappa_labels_cancelled: Kappa | None
    kappa_orders: Kappa
    kappa_labels_per_call: Kappa | None = None
    labels_present: int = 0  # pairs carrying a label that names one of their answers or tie, complete or not

    def to_dict(self) -> dict[str, Any]:
        def k(value: Kappa | None) -> dict[str, Any] | None:
            return value.to_dict() if value else None

        return {
            "judge": self.judge,
            "consistency": self.consistency.to_dict(),
            "accuracy": self.accuracy.to_dict() if self.accuracy else None,
            "labelled_pairs": self.labelled_pairs,
            "labelled_pairs_any_order": self.labels_present,
            "kappa": {"labels": {"x_first": k(self.kappa_labels_x_first), "y_first": k(self.kappa_labels_y_first),
                                 "order_cancelled": k(self.kappa_labels_cancelled),
                                 "per_call": k(self.kappa_labels_per_call)},
                      "orders": self.kappa_orders.to_dict(),
                      "categories": POSITIONS.tolist()},
        }


def judge_agreement(pairs: PairTable, *, judge: str | None = None, confidence: float = 0.95) -> JudgeAgreement:
    """Agreement figures of one judge's pairs (labels in the pairs' `label` column, None where absent)."""
    f = pairs.frame
    x, y = f.get_column("x").to_numpy(), f.get_column("y").to_numpy()
    label = np.asarray(f.get_column("label").to_list(), dtype=object)
    vx, vy, outcome = pairs.vx, pairs.vy, pairs.outcome
    cons = consistency_of_pairs(outcome, f.get_column("item").cast(pl.String).to_numpy(), confidence)
    acc = label_accuracy(x, y, label, vx, vy, outcome <= Outcome.TIE, confidence,
                         item=f.get_column("item").cast(pl.String).to_numpy())
    fx, fy, cancelled = frame_verdicts(vx, vy, outcome)
    gold = label_positions(x, y, label)  # in the x-first frame; the y-first call's frame mirrors it
    complete = outcome != Outcome.INCOMPLETE
    has_label = gold != None  # noqa: E711 (elementwise over an object array)
    labelled = complete & has_label

    item = f.get_column("item").cast(pl.String).to_numpy()

    def against_labels(verdicts: np.ndarray) -> Kappa | None:
        if not labelled.any():
            return None
        return kappa(verdicts[labelled], gold[labelled], confidence, cluster=item[labelled])

    # every labelled call with a verdict, each in its own call's frame: the y-first call's frame is the mirror
    calls_x, calls_y = has_label & (vx != MISSING), has_label & (vy != MISSING)
    per_call_verdicts = np.concatenate([_positional(vx)[calls_x], _positional(vy)[calls_y]])
    mirror = {"first": "second", "second": "first", "tie": "tie"}
    per_call_gold = np.concatenate([gold[calls_x], np.array([mirror[g] for g in gold[calls_y]], dtype=object)])
    per_call_item = np.concatenate([item[calls_x], item[calls_y]])
    return JudgeAgreement(
        judge=judge, consistency=cons, accuracy=acc, labelled_pairs=int(labelled.sum()),
        kappa_labels_x_first=against_labels(fx),
        kappa_labels_y_first=against_labels(fy),
        kappa_labels_cancelled=against_labels(cancelled),
        kappa_orders=kappa(fx[complete], fy[complete], confidence, cluster=item[complete]),
        kappa_labels_per_call=(kappa(per_call_verdicts, per_call_gold, confidence, cluster=per_call_item,
                                     subject="call") if per_call_verdicts.size else None),
        labels_present=int(has_label.sum()),
    )


def agreement_of_records(frame: pl.DataFrame, *, judge: str | None = None,
                         confidence: float = 0.95) -> list[JudgeAgreement]:
    """Agreement per judge of validated records (only `judge` when given)."""
    judges = select_judges(frame, judge)
    all_pairs = build_pairs(frame)
    return [judge_agreement(PairTable(all_pairs.frame.filter(pl.col("judge") == name)), judge=name or None,
                            confidence=confidence) for name in judges]


# ---- from counts (records larger than memory, `reading.streaming`) --------------------------------------------


def kappa_of_counts(a: np.ndarray, b: np.ndarray, count: np.ndarray, cluster: np.ndarray, confidence: float = 0.95,
                    *, subject: str = "pair") -> Kappa:
    """`kappa` of subjects given as counts: rows of positional codes `a`, `b` (FIRST, SECOND, TIE) standing for
    `count` subjects each, in `cluster`s numbered in the order of their items' names (as `kappa` sorts them)."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    count = np.asarray(count, dtype=np.int64)
    n = int(count.sum())
    # the categories present, in the order of their names (first, second, tie: the codes' own order)
    codes = np.unique(np.concatenate([a, b]))
    k = codes.size
    ia, ib = np.searchsorted(codes, a), np.searchsorted(codes, b)
    value = None
    if n:
        table = np.bincount(ia * k + ib, weights=count, minlength=k * k).reshape(k, k) / n
        observed = float(np.trace(table))
        expected = float(table.sum(axis=1) @ table.sum(axis=0))
        value = None if expected == 1 else (observed - expected) / (1 - expected)
    low = high = None
    if value is not None:
        unit = np.unique(np.asarray(cluster, dtype=np.int64), return_inverse=True)[1].reshape(-1)
        groups = int(unit.max()) + 1
        if groups >= 2:
            per_cluster = np.bincount(unit * k * k + ia * k + ib, weights=count,
                                      minlength=groups * k * k).astype(np.int64).reshape(groups, k * k)
            low, high = _interval_of_tables(per_cluster, k, confidence)
    return Kappa(value, low, high, n, subject, "item")


_CODE_MIRROR = np.array([SECOND, FIRST, TIE], dtype=np.int64)


def agreement_of_counts(verdicts: dict[str, np.ndarray], counts: PairCounts, *, judge: str | None = None,
                        confidence: float = 0.95) -> JudgeAgreement:
    """`judge_agreement` of one judge's pairs reduced to counts: `verdicts` its pairs counted by item, verdict
    state of each order and label (`StreamingSource.pair_verdicts`), `counts` its `PairCounts` (consistency and
    accuracy come from them as `analyze` computes them from counts)."""
    from swapjudge.core.counted import COMPLETE, CONSISTENT, accuracy_of_types, kind_tally, outcomes_of
    from swapjudge.core.swap import consistency_of_tally
    from swapjudge.reading.reduce import LABEL_TIE, LABEL_X, LABEL_Y, positional

    types = counts.type_counts
    outcomes = outcomes_of(types)
    cons = consistency_of_tally(outcomes.consistent, outcomes.complete,
                                kind_tally(counts.kinds, COMPLETE, 2 * (CONSISTENT & COMPLETE).astype(np.int64)),
                                confidence)
    item, n = verdicts["item"], verdicts["n"]
    vx, vy = positional(verdicts["vx"]), positional(verdicts["vy"])
    outcome = classify(vx, vy)
    label = verdicts["label"]
    gold = np.select([label == LABEL_X, label == LABEL_Y, label == LABEL_TIE], [FIRST, SECOND, TIE], MISSING)
    mirrored = np.where(vy == MISSING, MISSING, _CODE_MIRROR[np.clip(vy, 0, 2)])
    cancelled = np.where(outcome == Outcome.X_WINS, FIRST, np.where(outcome == Outcome.Y_WINS, SECOND, TIE))
    complete = outcome != Outcome.INCOMPLETE
    has_label = gold != MISSING
    labelled = complete & has_label

    def against_labels(codes: np.ndarray) -> Kappa | None:
        if not labelled.any():
            return None
        return kappa_of_counts(codes[labelled], gold[labelled], n[labelled], item[labelled], confidence)

    calls_x, calls_y = has_label & (vx != MISSING), has_label & (vy != MISSING)
    per_call = None
    if calls_x.any() or calls_y.any():
        per_call = kappa_of_counts(np.concatenate([vx[calls_x], vy[calls_y]]),
                                   np.concatenate([gold[calls_x], _CODE_MIRROR[gold[calls_y]]]),
                                   np.concatenate([n[calls_x], n[calls_y]]),
                                   np.concatenate([item[calls_x], item[calls_y]]), confidence, subject="call")
    return JudgeAgreement(
        judge=judge, consistency=cons, accuracy=accuracy_of_types(types, counts.kinds, confidence),
        labelled_pairs=int(n[labelled].sum()),
        kappa_labels_x_first=against_labels(vx), kappa_labels_y_first=against_labels(mirrored),
        kappa_labels_cancelled=against_labels(cancelled),
        kappa_orders=kappa_of_counts(vx[complete], mirrored[complete], n[complete], item[complete], confidence),
        kappa_labels_per_call=per_call, labels_present=int(n[has_label].sum()),
    )
