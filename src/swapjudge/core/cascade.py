"""The escalation cascade's statistics (Trust or Escalate, Jung, Brahman and Choi, ICLR 2025): each judge, cheap
to strong, gets a confidence threshold chosen on labelled calibration pairs by fixed-sequence testing, so that
its agreement with the labels on the pairs it settles is at least 1 - alpha with probability at least 1 - delta;
the pairs below its threshold go to the next judge.

Fixed-sequence testing, per judge: the candidate thresholds are the distinct confidences of the calibration pairs
that reach the judge, strictest first (an order fixed before any label is read). At each candidate, the exact
one-sided Clopper-Pearson upper bound at level delta on the disagreement among the pairs it would settle is
compared with alpha; the procedure stops at the first candidate whose bound exceeds alpha, and the threshold is
the last one that passed (none: the judge settles nothing and passes everything on). A candidate settling fewer
than `min_settled(alpha, delta)` pairs could not pass even with no disagreement, so it is not tested (a label-free
choice of the sequence, which keeps the test valid).

What the bound treats as independent: each calibration pair, when no two of them share an item; when they do,
the effective sample (pairs and disagreements divided by the design effect of clustering by item), an
approximation stated in the result. Pure: arrays in, frozen results out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.stats import beta

from swapjudge.core.confidence import VERDICT_TIE, VERDICT_X, VERDICT_Y
from swapjudge.core.stats import MeanInterval, proportion_interval

FloatArray = npt.NDArray[np.float64]

# a pair's label relative to its two identities (as reading.reduce codes them)
LABEL_NONE, LABEL_X, LABEL_Y, LABEL_TIE = 0, 1, 2, 3
UNSETTLED = -1  # the tier index of a pair no judge settled
CURVE_POINTS = 101


def min_settled(alpha: float, delta: float) -> int:
    """The fewest settled pairs whose bound can be <= alpha: with no disagreement the bound is 1 - delta**(1/n)."""
    return max(1, math.ceil(math.log(delta) / math.log1p(-alpha) - 1e-12))


def clopper_pearson_upper(k: float, n: float, delta: float) -> float:
    """The exact one-sided upper confidence bound at level delta on a binomial rate from k of n: P(rate > bound)
    <= delta (the Beta(k + 1, n - k) quantile at 1 - delta; 1 when k == n). Non-integer k and n (an effective
    sample) use the same Beta quantile."""
    if n <= 0:
        return 1.0
    if k >= n:
        return 1.0
    return float(beta.ppf(1.0 - delta, k + 1.0, n - k))


def agreement_flags(verdict: npt.ArrayLike, label: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """A settled verdict agrees with a label naming the same identity; a settled tie with a tie label."""
    verdict, label = np.asarray(verdict), np.asarray(label)
    return np.asarray(((verdict == VERDICT_X) & (label == LABEL_X)) | ((verdict == VERDICT_Y) & (label == LABEL_Y))
                      | ((verdict == VERDICT_TIE) & (label == LABEL_TIE)), dtype=bool)


@dataclass(frozen=True)
class TierCalibration:
    """One judge's fixed-sequence test on the calibration pairs that reached it."""

    judge: str
    threshold: float | None  # None: no candidate passed, the judge settles nothing
    reached: int  # labelled calibration pairs that reached this judge
    settled: int  # of those, settled at the threshold
    disagreements: int
    bound: float | None  # the upper bound on disagreement at the threshold
    tested: int  # candidates tested (the last one failed unless every candidate passed)
    independent: str  # "pairs" or "items (effective sample)"
    # the coverage-risk curve on these pairs: (threshold, settled, disagreements) at each distinct confidence,
    # strictest first, at most CURVE_POINTS of them (evenly spaced when there are more)
    curve: tuple[tuple[float, int, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "reached": self.reached, "settled": self.settled,
                "disagreements": self.disagreements, "bound": self.bound, "tested": self.tested,
                "independent": self.independent,
                "curve": [{"threshold": lam, "settled": n, "coverage": n / self.reached if self.reached else None,
                           "risk": k / n if n else None} for lam, n, k in self.curve]}


def prefix_design_effects(flags: npt.ArrayLike, clusters: npt.ArrayLike, ends: npt.ArrayLike) -> FloatArray:
    """`core.stats.cluster_design(flags[:end], clusters[:end]).design_effect` for each end, in one pass: the
    sums it needs (per cluster units n_g and flags a_g; sums of a_g^2, a_g n_g, n_g^2) kept as units are added,
    so a calibration's every candidate costs O(1) instead of a pass over the pairs. 0/1 flags."""
    flags = np.asarray(flags, dtype=np.int64)
    _, codes = np.unique(np.asarray(clusters).astype(str), return_inverse=True)
    codes = codes.reshape(-1)
    ends = np.asarray(ends, dtype=np.int64)
    units = np.zeros(int(codes.max()) + 1 if codes.size else 0, dtype=np.int64)
    wrong = np.zeros_like(units)
    out = np.ones(ends.size)
    g = n = k = sq_a = cross = sq_n = 0
    at = 0
    for i, end in enumerate(ends.tolist()):
        while at < end:  # add unit `at` to its cluster
            c, w = int(codes[at]), int(flags[at])
            nc, ac = int(units[c]), int(wrong[c])
            g += nc == 0
            sq_n += 2 * nc + 1
            cross += (ac + w) * (nc + 1) - ac * nc
            sq_a += (ac + w) ** 2 - ac * ac
            units[c], wrong[c] = nc + 1, ac + w
            n, k, at = n + 1, k + w, at + 1
        if g == n:
            continue  # clusters of one: 1
        if g == 1:
            out[i] = float(n)  # every unit on one item: one observation's worth
            continue
        if k in (0, n):
            continue  # no spread: 1
        between = n * n * sq_a - 2 * n * k * cross + k * k * sq_n  # sum over clusters of (n a_g - n_g k)^2
        ratio = (g * (n - 1) * between) / ((g - 1) * n * n * (n * k - k * k))
        out[i] = max(1.0, ratio)
    return out


def fixed_sequence(confidence: npt.ArrayLike, agree: npt.ArrayLike, *, alpha: float, delta: float,
                   clusters: npt.ArrayLike | None = None, judge: str = "") -> TierCalibration:
    """The threshold of one judge: `confidence` of each calibration pair reaching it (NaN: never settled),
    `agree` whether its verdict agrees with its label, `clusters` each pair's item (None: all independent)."""
    confidence = np.asarray(confidence, dtype=np.float64)
    agree = np.asarray(agree, dtype=bool)
    groups = None if clusters is None else np.asarray(clusters)
    shared = groups is not None and np.unique(groups).size < groups.size
    independent = "items (effective sample)" if shared else "pairs"
    ok = ~np.isnan(confidence)
    need = min_settled(alpha, delta)
    order = np.argsort(-confidence[ok], kind="stable")
    conf_sorted = confidence[ok][order]
    wrong_sorted = ~agree[ok][order]
    # each distinct confidence, strictest first, with the pairs and disagreements it would settle
    last = np.flatnonzero(np.r_[conf_sorted[1:] != conf_sorted[:-1], True]) if conf_sorted.size else np.array([], int)
    settled_n = last + 1
    settled_k = np.cumsum(wrong_sorted)[last] if conf_sorted.size else np.array([], int)
    shown = np.arange(last.size)
    if last.size > CURVE_POINTS:
        shown = np.unique(np.linspace(0, last.size - 1, CURVE_POINTS).round().astype(np.int64))
    curve = tuple((float(conf_sorted[last][i]), int(settled_n[i]), int(settled_k[i])) for i in shown)
    keep = settled_n >= need  # a candidate below `need` cannot pass with any labels: not part of the sequence
    lams, ns, ks = conf_sorted[last][keep], settled_n[keep], settled_k[keep]
    if shared:
        assert groups is not None
        deffs = prefix_design_effects(wrong_sorted, groups[ok][order], ns)
        n_eff, k_eff = ns / deffs, ks / deffs  # the effective sample: what clustering by item leaves
    else:
        n_eff, k_eff = ns.astype(float), ks.astype(float)
    # clopper_pearson_upper at every candidate at once
    bound_arr = np.where(ks >= ns, 1.0, beta.ppf(1.0 - delta, k_eff + 1.0, np.maximum(n_eff - k_eff, 1e-12)))
    failed = np.flatnonzero(bound_arr > alpha)
    passed = int(failed[0]) if failed.size else int(bound_arr.size)
    tested = min(passed + 1, int(bound_arr.size))
    if passed == 0:
        return TierCalibration(judge, None, int(confidence.size), 0, 0, None, tested, independent, curve)
    i = passed - 1
    return TierCalibration(judge, float(lams[i]), int(confidence.size), int(ns[i]), int(ks[i]), float(bound_arr[i]),
                       tested, independent, curve)


def route(confidences: list[npt.NDArray[np.float64]], thresholds: list[float | None]) -> npt.NDArray[np.int64]:
    """Which tier settles each pair: the first judge whose confidence reaches its threshold (UNSETTLED: none)."""
    n = confidences[0].shape[0] if confidences else 0
    tier = np.full(n, UNSETTLED, dtype=np.int64)
    for index, (conf, lam) in enumerate(zip(confidences, thresholds, strict=True)):
        if lam is None:
            continue
        with np.errstate(invalid="ignore"):
            takes = (tier == UNSETTLED) & ~np.isnan(conf) & (conf >= lam)
        tier[takes] = index
    return tier


def calibrate_cascade(confidences: list[npt.NDArray[np.float64]], verdicts: list[npt.NDArray[np.int8]],
                      label: npt.ArrayLike, *, judges: list[str], alpha: float, delta: float,
                      clusters: npt.ArrayLike | None = None) -> list[TierCalibration]:
    """Each judge's threshold, in cascade order, on the calibration pairs the judges before it left unsettled.
    The arrays are aligned on the labelled calibration pairs (NaN confidence where a judge cannot settle a pair
    or has no record of it)."""
    label = np.asarray(label)
    groups = None if clusters is None else np.asarray(clusters)
    reaching = np.ones(label.shape[0], dtype=bool)
    out: list[TierCalibration] = []
    for judge, conf, verdict in zip(judges, confidences, verdicts, strict=True):
        agree = agreement_flags(verdict, label)
        cal = fixed_sequence(conf[reaching], agree[reaching], alpha=alpha, delta=delta, judge=judge,
                             clusters=None if groups is None else groups[reaching])
        out.append(cal)
        if cal.threshold is not None:
            with np.errstate(invalid="ignore"):
                reaching &= ~(~np.isnan(conf) & (conf >= cal.threshold))
    return out


def realized_agreement(agree: npt.ArrayLike, clusters: npt.ArrayLike | None, confidence: float = 0.95
                       ) -> MeanInterval:
    """The share of settled test pairs that agree with their labels, with a Wilson interval that treats each
    item as independent (pairs sharing an item clustered)."""
    return proportion_interval(np.asarray(agree, dtype=float), confidence,
                               None if clusters is None else np.asarray(clusters))


def guarantee_text(alpha: float, delta: float, tiers: int) -> str:
    """What the calibration guarantees, in words: per judge at 1 - delta; the cascade by a union bound."""
    each = (f"on the pairs each judge settles, agreement with the labels >= {1 - alpha:.3g} with probability "
            f">= {1 - delta:.3g}")
    if tiers <= 1:
        return each + " (for new pairs drawn like the calibration pairs)"
    joint = max(0.0, 1 - tiers * delta)
    return (each + f"; on all settled pairs together >= {1 - alpha:.3g} with probability >= {joint:.3g} "
            f"({tiers} judges, a union bound), for new pairs drawn like the calibration pairs")


@dataclass(frozen=True)
class CascadeTier:
    """One judge of the cascade: its calibration and what it settled where the thresholds were applied."""

    judge: str
    measure: str  # the confidence measure of its pairs (core.confidence.MEASURES)
    calibration: TierCalibration | None  # None: thresholds read from a file
    threshold: float | None
    reached: int  # pairs (of the applied set) that reached this judge
    settled: int
    agreement: MeanInterval | None  # on its settled labelled test pairs; None without a test
    cost_usd: float | None  # its calls on the pairs that reached it, where the records carry cost
    no_swap_seen: int  # pairs it judged in one order only
    configuration: Mapping[str, Any] | None = None  # its configuration hash and what it was computed from

    def to_dict(self) -> dict[str, Any]:
        agreement = None if self.agreement is None or self.agreement.n == 0 else self.agreement.to_dict()
        return {"judge": self.judge, "threshold": self.threshold, "settled": self.settled,
                "agreement": agreement, "reached": self.reached, "measure": self.measure,
                "no_swap_seen": self.no_swap_seen,
                "configuration": None if self.configuration is None else dict(self.configuration),
                "calibration": None if self.calibration is None else self.calibration.to_dict(),
                "cost_usd": self.cost_usd,
                "cost_per_settled_usd": (self.cost_usd / self.settled
                                         if self.cost_usd is not None and self.settled else None)}


@dataclass(frozen=True)
class Escalation:
    """The cascade's result: its tiers, coverage and agreement where its thresholds were applied.

    `applied_to`: "test" (the items left out of calibration), "all" (every pair: no held-out test, so no
    realized agreement), or "records" (thresholds read from a file). `realized`: agreement of every settled
    labelled test pair with its label, its interval clustered by item."""

    tiers: tuple[CascadeTier, ...]
    alpha: float
    delta: float
    applied_to: str
    pairs: int  # pairs the thresholds were applied to
    settled: int
    test_pairs: int  # labelled pairs among them (outside the calibration items)
    realized: MeanInterval | None
    unsettled_by_reason: dict[str, int]
    calibration_pairs: int
    calibration_items: int
    split: float | None
    seed: int | None
    labels_hash: str | None
    strongest_alone_usd: float | None  # the last judge's calls on every applied pair
    fitted_items: tuple[str, ...] = ()  # the items the thresholds were fitted on

    @property
    def coverage(self) -> float | None:
        return self.settled / self.pairs if self.pairs else None

    @property
    def unsettled(self) -> int:
        return self.pairs - self.settled

    @property
    def guarantee(self) -> str:
        return guarantee_text(self.alpha, self.delta, len(self.tiers))

    @property
    def cascade_usd(self) -> float | None:
        costs = [t.cost_usd for t in self.tiers if t.cost_usd is not None]
        return sum(costs) if costs else None

    def to_dict(self) -> dict[str, Any]:
        realized = self.realized if self.realized is not None and self.realized.n else None
        return {
            "tiers": [t.to_dict() for t in self.tiers],
            "coverage": self.coverage,
            "agreement": {
                "target": 1 - self.alpha, "confidence": 1 - self.delta,
                "cascade_confidence": max(0.0, 1 - len(self.tiers) * self.delta),
                "realized": None if realized is None else realized.value,
                "low": None if realized is None else realized.low,
                "high": None if realized is None else realized.high,
                "settled_test_pairs": 0 if realized is None else realized.n,
                "test_pairs": self.test_pairs,
                "independent": None if realized is None else realized.independence.units,
                "clusters": None if realized is None else realized.independence.clusters,
                "guarantee": self.guarantee,
            },
            "unsettled": self.unsettled,
            "unsettled_by_reason": dict(self.unsettled_by_reason),
            "pairs": self.pairs, "settled": self.settled, "applied_to": self.applied_to,
            "alpha": self.alpha, "delta": self.delta,
            "calibration": {"pairs": self.calibration_pairs, "items": self.calibration_items, "split": self.split,
                            "seed": self.seed, "labels_hash": self.labels_hash},
            "cost": {"cascade_usd": self.cascade_usd, "strongest_alone_usd": self.strongest_alone_usd},
        }
