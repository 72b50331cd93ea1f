"""Debiased verdicts from both orders, for judges that record their verdict probabilities (`p_first`,
`p_second` on each call): a mitigation shown next to the raw audit, never instead of it.

- `order_averaged`: each pair is decided by (P(x | x first) + P(x | x second)) / 2, each call's probabilities
  renormalised over the two slots. A constant slot prior enters both terms with opposite signs, so it cancels;
  the pair has one verdict, so its swap-consistency is 1 by construction, not a measurement.
- `calibrated` (contextual calibration, Zhao et al. 2021): each call's log-odds of slot 1 minus the log-odds the
  identical-answer probe measured (the judge's prior for slot 1 when the two answers are the same). The
  calibrated calls are then read as calls are: their swap-consistency is measured, not assumed.

Pure: arrays in, frozen results out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from swapjudge.core.policy import TiePolicy, WinRate, win_rate_of_counts
from swapjudge.core.stats import Proportion, wilson
from swapjudge.reading.pairs import FIRST, MISSING, SECOND, TIE, Outcome, build_pairs, classify
from swapjudge.reading.reduce import (
    LABEL_NONE,
    LABEL_STATES,
    LABEL_TIE,
    LABEL_X,
    LABEL_Y,
    NULL,
    TIE_LABEL,
    DebiasCounts,
    debias_table,
)

FloatArray = npt.NDArray[np.float64]
PROBABILITY_COLUMNS = ("p_first", "p_second")
MITIGATION_NOTE = ("debiased verdicts are a mitigation computed from the judge's own probabilities; the gate "
                   "and the headline stay with the raw verdicts")

if TYPE_CHECKING:  # the records-level `debias` loads polars when called; the counts need none
    import polars as pl


@dataclass(frozen=True)
class DebiasedVerdicts:
    """One debiasing method's verdicts: their accuracy against labels, swap-consistency and implied win rate."""

    method: str
    pairs: int
    consistency: Proportion
    by_construction: bool  # True: consistency is 1 because the method gives one verdict per pair
    accuracy: Proportion | None
    win_rate: WinRate | None

    def to_dict(self, *, withheld: bool = False) -> dict[str, Any]:
        acc = self.accuracy
        return {
            "method": self.method, "pairs": self.pairs,
            "consistency": {"rate": self.consistency.rate, "low": self.consistency.low,
                            "high": self.consistency.high, "by_construction": self.by_construction},
            "accuracy": None if acc is None else {"rate": acc.rate, "low": acc.low, "high": acc.high, "right": acc.k,
                                                  "pairs": acc.n},
            "win_rate": None if self.win_rate is None or withheld else self.win_rate.to_dict(),
        }


@dataclass(frozen=True)
class Debiased:
    """Both methods for one judge; `calibrated` is None without identical-answer probe calls with probabilities.
    `withheld`: the raw judge failed the gate, so the debiased win rates are not reported either."""

    order_averaged: DebiasedVerdicts
    calibrated: DebiasedVerdicts | None
    slot_prior: float | None  # the probe's mean P(slot 1), renormalised over the two slots
    probe_calls: int
    withheld: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "order_averaged": self.order_averaged.to_dict(withheld=self.withheld),
            "calibrated": None if self.calibrated is None else self.calibrated.to_dict(withheld=self.withheld),
            "slot_prior": self.slot_prior, "probe_calls": self.probe_calls, "withheld": self.withheld,
            "note": MITIGATION_NOTE,
        }


def slot_share(p_first: FloatArray, p_second: FloatArray) -> FloatArray:
    """P(slot 1) renormalised over the two slots (a tie's mass, if any, left out); nan where unusable."""
    total = p_first + p_second
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(total > 0, p_first / total, np.nan)
    return np.clip(share, 1e-12, 1.0 - 1e-12)


def order_averaged(q_x_first: FloatArray, q_x_second: FloatArray) -> FloatArray:
    """P(x) averaged over the two orders: q_x_first = P(x | x in slot 1), q_x_second = P(x | x in slot 2)."""
    return 0.5 * (q_x_first + q_x_second)


def calibrated_codes(share_first: FloatArray, prior: float) -> npt.NDArray[np.int8]:
    """Verdict codes of calls after subtracting the slot prior's log-odds from each call's log-odds of slot 1.
    The log-odds are monotone, so the sign of the difference is that of share - prior, compared exactly."""
    with np.errstate(invalid="ignore"):
        codes = np.where(share_first > prior, FIRST, np.where(share_first < prior, SECOND, TIE)).astype(np.int8)
    return np.where(np.isnan(share_first), MISSING, codes).astype(np.int8)


def _win_rate(counts: np.ndarray, pair: tuple[str, str] | None, policy: TiePolicy,
              confidence: float) -> WinRate | None:
    """`counts`: pairs by outcome X_WINS, Y_WINS, other (the complete pairs of one method)."""
    if pair is None or counts.sum() == 0:
        return None
    a, b = pair
    a_is_x = a < b  # pairs are stored with x the lesser name
    x_wins, y_wins, other = (int(v) for v in counts)
    a_wins, b_wins = (x_wins, y_wins) if a_is_x else (y_wins, x_wins)
    return win_rate_of_counts(a, b, a_wins, b_wins, other, policy, confidence)


def _accuracy(by_label: np.ndarray, confidence: float) -> Proportion | None:
    """`by_label`: pairs by (outcome X_WINS, Y_WINS, other) x label (none, x, y, tie)."""
    usable = int(by_label[:, LABEL_X].sum() + by_label[:, LABEL_Y].sum())
    if not usable:
        return None
    return wilson(int(by_label[0, LABEL_X] + by_label[1, LABEL_Y]), usable, confidence)


def debias_of_counts(found: DebiasCounts, *, pair: tuple[str, str] | None = None,
                     policy: TiePolicy | str = TiePolicy.half_credit, confidence: float = 0.95,
                     gate_passed: bool = True) -> Debiased:
    """Both debiased verdicts from their counts (`reading.reduce.debias_table`)."""
    policy = TiePolicy(policy)
    table = found.counts
    n = int(table.sum())
    averaged = table.sum(axis=(1, 2))  # class x label
    avg = DebiasedVerdicts(method="order_averaged", pairs=n, consistency=wilson(n, n, confidence),
                           by_construction=True, accuracy=_accuracy(averaged, confidence),
                           win_rate=_win_rate(averaged.sum(axis=1), pair, policy, confidence))
    cal = None
    if found.prior is not None:
        by_outcome = np.zeros((len(Outcome), LABEL_STATES), dtype=np.int64)
        states = np.arange(4)
        codes = np.where(states == NULL, MISSING, states)
        outcome = classify(np.repeat(codes, 4), np.tile(codes, 4)).reshape(4, 4)
        for cx in range(4):
            for cy in range(4):
                by_outcome[outcome[cx, cy]] += table[:, cx, cy, :].sum(axis=0)
        complete = by_outcome[:Outcome.INCOMPLETE]
        pairs = int(complete.sum())
        consistent = int(complete[:Outcome.TIE + 1].sum())
        grouped = np.stack([complete[Outcome.X_WINS], complete[Outcome.Y_WINS], complete[Outcome.TIE:].sum(axis=0)])
        cal = DebiasedVerdicts(method="calibrated", pairs=pairs, consistency=wilson(consistent, pairs, confidence),
                               by_construction=False, accuracy=_accuracy(grouped, confidence),
                               win_rate=_win_rate(grouped.sum(axis=1), pair, policy, confidence))
    return Debiased(order_averaged=avg, calibrated=cal, slot_prior=found.prior, probe_calls=found.probe_calls,
                    withheld=not gate_passed)


def debias(calls: pl.DataFrame, *, pair: tuple[str, str] | None = None,
           policy: TiePolicy | str = TiePolicy.half_credit, confidence: float = 0.95,
           gate_passed: bool = True) -> Debiased | None:
    """Both debiased verdicts from one judge's calls (already limited to the compared pair when there is one);
    None when no pair has probabilities in both of its calls."""
    import polars as pl

    if any(c not in calls.columns for c in PROBABILITY_COLUMNS):
        return None
    calls = calls.with_columns(pl.col(c).cast(pl.Float64, strict=False) for c in PROBABILITY_COLUMNS)
    table = build_pairs(calls, keep=PROBABILITY_COLUMNS).frame
    table = table.filter(pl.all_horizontal(pl.col(f"{c}_{o}").is_not_null()
                                           for c in PROBABILITY_COLUMNS for o in ("xf", "yf")))
    if table.height == 0:
        return None
    col = table.get_column
    share_xf = slot_share(col("p_first_xf").to_numpy(), col("p_second_xf").to_numpy())  # P(x | x first)
    share_yf = slot_share(col("p_first_yf").to_numpy(), col("p_second_yf").to_numpy())  # P(y | y first)
    x, y = col("x").to_numpy(), col("y").to_numpy()
    label = np.asarray(col("label").to_list(), dtype=object)
    relation = np.select([label == x, label == y, label == TIE_LABEL], [LABEL_X, LABEL_Y, LABEL_TIE], LABEL_NONE)
    probes = calls.filter((pl.col("first") == pl.col("second")) & pl.col("p_first").is_not_null()
                          & pl.col("p_second").is_not_null())
    prior = None
    if probes.height:
        probe_share = slot_share(probes.get_column("p_first").to_numpy(), probes.get_column("p_second").to_numpy())
        prior = float(np.nanmean(probe_share))
    found = DebiasCounts(debias_table(share_xf, share_yf, relation, prior), prior, int(probes.height))
    return debias_of_counts(found, pair=pair, policy=policy, confidence=confidence, gate_passed=gate_passed)
