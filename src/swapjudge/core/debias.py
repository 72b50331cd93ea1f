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
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl
from scipy.special import logit

from swapjudge.core.pairs import FIRST, MISSING, SECOND, TIE, Outcome, build_pairs, classify
from swapjudge.core.policy import TiePolicy, WinRate, win_rate
from swapjudge.core.stats import Proportion, wilson

FloatArray = npt.NDArray[np.float64]
PROBABILITY_COLUMNS = ("p_first", "p_second")
MITIGATION_NOTE = ("debiased verdicts are a mitigation computed from the judge's own probabilities; the gate "
                   "and the headline stay with the raw verdicts")


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
    """Verdict codes of calls after subtracting the slot prior's log-odds from each call's log-odds of slot 1."""
    shifted = logit(share_first) - logit(prior)
    codes = np.where(shifted > 0, FIRST, np.where(shifted < 0, SECOND, TIE)).astype(np.int8)
    return np.where(np.isnan(share_first), MISSING, codes).astype(np.int8)


def _win_rate(outcome: np.ndarray, pair: tuple[str, str] | None, policy: TiePolicy,
              confidence: float) -> WinRate | None:
    if pair is None or outcome.size == 0:
        return None
    a, b = pair
    a_is_x = a < b  # pairs are stored with x the lesser name
    a_wins = int(np.sum(outcome == (Outcome.X_WINS if a_is_x else Outcome.Y_WINS)))
    b_wins = int(np.sum(outcome == (Outcome.Y_WINS if a_is_x else Outcome.X_WINS)))
    return win_rate(a, b, a_wins, b_wins, int(outcome.size) - a_wins - b_wins, policy, confidence)


def _accuracy(x: np.ndarray, y: np.ndarray, label: np.ndarray, outcome: np.ndarray,
              confidence: float) -> Proportion | None:
    usable = (label == x) | (label == y)
    if not usable.any():
        return None
    right = np.where(label == x, outcome == Outcome.X_WINS, outcome == Outcome.Y_WINS)[usable]
    return wilson(int(right.sum()), int(usable.sum()), confidence)


def debias(calls: pl.DataFrame, *, pair: tuple[str, str] | None = None,
           policy: TiePolicy | str = TiePolicy.half_credit, confidence: float = 0.95,
           gate_passed: bool = True) -> Debiased | None:
    """Both debiased verdicts from one judge's calls (already limited to the compared pair when there is one);
    None when no pair has probabilities in both of its calls."""
    if any(c not in calls.columns for c in PROBABILITY_COLUMNS):
        return None
    calls = calls.with_columns(pl.col(c).cast(pl.Float64, strict=False) for c in PROBABILITY_COLUMNS)
    table = build_pairs(calls, keep=PROBABILITY_COLUMNS).frame
    table = table.filter(pl.all_horizontal(pl.col(f"{c}_{o}").is_not_null()
                                           for c in PROBABILITY_COLUMNS for o in ("xf", "yf")))
    if table.height == 0:
        return None
    policy = TiePolicy(policy)
    col = table.get_column
    share_xf = slot_share(col("p_first_xf").to_numpy(), col("p_second_xf").to_numpy())  # P(x | x first)
    share_yf = slot_share(col("p_first_yf").to_numpy(), col("p_second_yf").to_numpy())  # P(y | y first)
    x, y = col("x").to_numpy(), col("y").to_numpy()
    label = col("label").to_numpy()
    averaged = order_averaged(share_xf, 1.0 - share_yf)
    avg_outcome = np.where(averaged > 0.5, Outcome.X_WINS,
                           np.where(averaged < 0.5, Outcome.Y_WINS, Outcome.TIE)).astype(np.int8)
    n = int(table.height)
    avg = DebiasedVerdicts(method="order_averaged", pairs=n, consistency=wilson(n, n, confidence),
                           by_construction=True, accuracy=_accuracy(x, y, label, avg_outcome, confidence),
                           win_rate=_win_rate(avg_outcome, pair, policy, confidence))
    probes = calls.filter((pl.col("first") == pl.col("second")) & pl.col("p_first").is_not_null()
                          & pl.col("p_second").is_not_null())
    prior, cal = None, None
    if probes.height:
        probe_share = slot_share(probes.get_column("p_first").to_numpy(), probes.get_column("p_second").to_numpy())
        prior = float(np.nanmean(probe_share))
        cal_outcome = classify(calibrated_codes(share_xf, prior), calibrated_codes(share_yf, prior))
        complete = cal_outcome != Outcome.INCOMPLETE
        consistent = int(np.sum(cal_outcome[complete] <= Outcome.TIE))
        cal = DebiasedVerdicts(method="calibrated", pairs=int(complete.sum()),
                               consistency=wilson(consistent, int(complete.sum()), confidence),
                               by_construction=False,
                               accuracy=_accuracy(x[complete], y[complete], label[complete], cal_outcome[complete],
                                                  confidence),
                               win_rate=_win_rate(cal_outcome[complete], pair, policy, confidence))
    return Debiased(order_averaged=avg, calibrated=cal, slot_prior=prior, probe_calls=int(probes.height),
                    withheld=not gate_passed)
