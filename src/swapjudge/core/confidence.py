"""How sure a judge is of one pair, read from both orders: the confidence a cascade thresholds to decide whether
the judge settles the pair or passes it on (and a pair's uncertainty wherever one is wanted).

The rules, per pair (judge, round, item, {x, y}):

- a flip (both calls named the same slot) or a half-tie (one call a tie, the other a winner) is never settled,
  whatever probabilities the judge gave: the swap showed that the verdict moves with the order;
- an incomplete pair (a call without a usable verdict) is never settled either;
- a consistent pair (both calls name the same identity, or both say tie) whose two calls carry `p_first` and
  `p_second` has as confidence the order-averaged probability of its verdict (measure
  `order_averaged_probability`): for a win of x, (P(x | x first) + P(x | x second)) / 2, each call's
  probabilities renormalised over the two slots as `core.debias` reads them (a constant slot prior cancels);
  for a consistent tie, the mean over the two calls of the tie's mass, 1 - p_first - p_second;
- a consistent pair without probabilities in both calls has the consistency itself as confidence: 1.0, settled
  at every threshold (measure `consistency`); it is settled or not, with nothing finer to threshold;
- a pair judged in one order only (its swapped call absent, not failed) whose call carries probabilities has as
  confidence the probability of that call's verdict (measure `single_order_probability`; `swap_seen` is False:
  no swap was seen, so a flip could not be caught); without probabilities it is never settled.

A never-settled pair has confidence NaN, so no threshold settles it. Pure: arrays in, a frozen result out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from swapjudge.core.debias import PROBABILITY_COLUMNS, slot_share
from swapjudge.reading.pairs import FIRST, MISSING, SECOND, TIE, Outcome, PairTable, build_pairs, classify

FloatArray = npt.NDArray[np.float64]

# the settled verdict of a pair, in identity terms (the pair table's outcome codes for a consistent pair)
VERDICT_X, VERDICT_Y, VERDICT_TIE, NO_VERDICT = int(Outcome.X_WINS), int(Outcome.Y_WINS), int(Outcome.TIE), -1

# how each pair's confidence was measured (index into MEASURES)
ORDER_AVERAGED, CONSISTENCY, SINGLE_ORDER, NEVER = 0, 1, 2, 3
MEASURES = ("order_averaged_probability", "consistency", "single_order_probability", "never_settled")

# why a pair can never be settled (index into REASONS; SETTLEABLE for the others)
SETTLEABLE, FLIP, HALF_TIE, INCOMPLETE, NO_PROBABILITY = 0, 1, 2, 3, 4
REASONS = ("settleable", "flip", "half_tie", "incomplete", "single_order_without_probability")


@dataclass(frozen=True, eq=False)
class PairConfidence:
    """One row per pair, in the order of the pair table it was computed from.

    `verdict`: VERDICT_X / VERDICT_Y / VERDICT_TIE for a pair the judge could settle, NO_VERDICT otherwise;
    `confidence`: in [0, 1], NaN where the pair is never settled; `measure`: codes into MEASURES; `reason`:
    codes into REASONS; `swap_seen`: False for a pair judged in one order only."""

    verdict: npt.NDArray[np.int8]
    confidence: FloatArray
    measure: npt.NDArray[np.int8]
    reason: npt.NDArray[np.int8]
    swap_seen: npt.NDArray[np.bool_]

    def __len__(self) -> int:
        return int(self.confidence.shape[0])

    @property
    def settleable(self) -> npt.NDArray[np.bool_]:
        """The pairs some threshold can settle (not a flip, a half-tie, incomplete, or unprobabilised single)."""
        return ~np.isnan(self.confidence)

    def settled(self, threshold: float) -> npt.NDArray[np.bool_]:
        """The pairs settled at `threshold`: settleable and confidence >= threshold."""
        with np.errstate(invalid="ignore"):
            return self.settleable & (self.confidence >= threshold)

    @property
    def measure_name(self) -> str:
        """The confidence measure the settleable pairs were scored with: one of MEASURES, several joined by
        ' + ' when the pairs differ (for example some calls without probabilities), `never_settled` when no pair
        can be settled."""
        used = sorted({int(m) for m in self.measure[self.settleable]})
        return " + ".join(MEASURES[m] for m in used) if used else MEASURES[NEVER]

    def to_dict(self) -> dict[str, Any]:
        by_reason = np.bincount(self.reason.astype(np.int64), minlength=len(REASONS))
        by_measure = np.bincount(self.measure.astype(np.int64), minlength=len(MEASURES))
        return {
            "measure": self.measure_name,
            "pairs": len(self),
            "settleable": int(self.settleable.sum()),
            "no_swap_seen": int((~self.swap_seen).sum()),
            "never_settled": {REASONS[r]: int(by_reason[r]) for r in range(1, len(REASONS))},
            "by_measure": {MEASURES[m]: int(by_measure[m]) for m in range(len(MEASURES))},
        }


def _tie_mass(p_first: FloatArray, p_second: FloatArray) -> FloatArray:
    """A call's probability of a tie: what p_first and p_second leave, in [0, 1]."""
    return np.clip(1.0 - p_first - p_second, 0.0, 1.0)


def _share_or_zero(p_first: FloatArray, p_second: FloatArray) -> FloatArray:
    """P(slot 1) over the two slots; 0.5 where the call put no mass on either slot (it then favours neither)."""
    share = slot_share(p_first, p_second)
    return np.where(np.isnan(share), 0.5, share)


def confidence_of_verdicts(vx: npt.ArrayLike, vy: npt.ArrayLike, *, calls_xf: npt.ArrayLike | None = None,
                           calls_yf: npt.ArrayLike | None = None,
                           p_first_xf: npt.ArrayLike | None = None, p_second_xf: npt.ArrayLike | None = None,
                           p_first_yf: npt.ArrayLike | None = None,
                           p_second_yf: npt.ArrayLike | None = None) -> PairConfidence:
    """Each pair's confidence from its positional verdicts and probabilities.

    `vx` / `vy`: the verdict codes (reading.codes FIRST / SECOND / TIE / MISSING) of the call that showed x first
    and of the call that showed y first; `calls_xf` / `calls_yf`: how many calls each order has (0 marks an order
    never judged, as opposed to a call without a verdict; default 1 each); `p_*_xf` / `p_*_yf`: the calls'
    `p_first` / `p_second`, NaN where absent (default: none)."""
    vx = np.asarray(vx, dtype=np.int8)
    vy = np.asarray(vy, dtype=np.int8)
    n = vx.shape[0]

    def floats(values: npt.ArrayLike | None) -> FloatArray:
        return np.full(n, np.nan) if values is None else np.asarray(values, dtype=np.float64).reshape(n)

    def counts(values: npt.ArrayLike | None) -> npt.NDArray[np.int64]:
        return np.ones(n, dtype=np.int64) if values is None else np.asarray(values, dtype=np.int64).reshape(n)

    pfx, psx, pfy, psy = floats(p_first_xf), floats(p_second_xf), floats(p_first_yf), floats(p_second_yf)
    nxf, nyf = counts(calls_xf), counts(calls_yf)
    has_px = ~np.isnan(pfx) & ~np.isnan(psx)
    has_py = ~np.isnan(pfy) & ~np.isnan(psy)

    outcome = classify(vx, vy)
    single = (nxf == 0) ^ (nyf == 0)  # one order judged, the other never asked (not a failed call)
    verdict = np.full(n, NO_VERDICT, dtype=np.int8)
    confidence = np.full(n, np.nan)
    measure = np.full(n, NEVER, dtype=np.int8)
    reason = np.full(n, INCOMPLETE, dtype=np.int8)

    # both orders: only a consistent pair can be settled
    flip = (outcome == Outcome.FLIP_FIRST) | (outcome == Outcome.FLIP_SECOND)
    half = (outcome == Outcome.HALF_TIE_FIRST) | (outcome == Outcome.HALF_TIE_SECOND)
    reason[flip], reason[half] = FLIP, HALF_TIE
    consistent = ~single & (outcome <= Outcome.TIE)
    verdict[consistent] = outcome[consistent]
    reason[consistent] = SETTLEABLE
    with_p = consistent & has_px & has_py
    p_x = 0.5 * (_share_or_zero(pfx, psx) + (1.0 - _share_or_zero(pfy, psy)))  # order-averaged P(x beats y)
    p_tie = 0.5 * (_tie_mass(pfx, psx) + _tie_mass(pfy, psy))
    by_verdict = np.where(outcome == Outcome.X_WINS, p_x, np.where(outcome == Outcome.Y_WINS, 1.0 - p_x, p_tie))
    confidence[with_p] = by_verdict[with_p]
    measure[with_p] = ORDER_AVERAGED
    without_p = consistent & ~with_p
    confidence[without_p] = 1.0  # settled by its consistency alone
    measure[without_p] = CONSISTENCY

    # one order only: the probability of the one verdict, when the call carries it
    code = np.where(nxf > 0, vx, vy)
    first_is_x = nxf > 0
    pf, ps = np.where(first_is_x, pfx, pfy), np.where(first_is_x, psx, psy)
    has_p = np.where(first_is_x, has_px, has_py)
    share = _share_or_zero(pf, ps)
    one = single & (code != MISSING)
    reason[one & ~has_p] = NO_PROBABILITY
    scored = one & has_p
    slot_prob = np.where(code == FIRST, share, np.where(code == SECOND, 1.0 - share, _tie_mass(pf, ps)))
    named_x = ((code == FIRST) & first_is_x) | ((code == SECOND) & ~first_is_x)
    one_verdict = np.where(code == TIE, VERDICT_TIE, np.where(named_x, VERDICT_X, VERDICT_Y)).astype(np.int8)
    verdict[scored] = one_verdict[scored]
    confidence[scored] = slot_prob[scored]
    measure[scored] = SINGLE_ORDER
    reason[scored] = SETTLEABLE

    return PairConfidence(verdict=verdict, confidence=np.clip(confidence, 0.0, 1.0), measure=measure,
                          reason=reason, swap_seen=~single)


def pair_confidence(pairs: PairTable) -> PairConfidence:
    """Each pair's confidence, in the order of `pairs.frame` (built with
    `build_pairs(frame, keep=PROBABILITY_COLUMNS)` for the probabilities to count; without those columns every
    consistent pair is scored by its consistency)."""
    frame = pairs.frame

    def column(name: str) -> FloatArray | None:
        if name not in frame.columns:
            return None
        return frame.get_column(name).cast(pl.Float64, strict=False).fill_null(np.nan).to_numpy()

    return confidence_of_verdicts(
        pairs.vx, pairs.vy, calls_xf=frame.get_column("n_xf").to_numpy(), calls_yf=frame.get_column("n_yf").to_numpy(),
        p_first_xf=column("p_first_xf"), p_second_xf=column("p_second_xf"),
        p_first_yf=column("p_first_yf"), p_second_yf=column("p_second_yf"))


def records_confidence(frame: pl.DataFrame) -> tuple[PairTable, PairConfidence]:
    """The pair table of validated records (`reading.records.read_records(...).frame`, loaded with
    `allow_unpaired=True` where pairs may be judged in one order) and each of its pairs' confidence."""
    if all(c in frame.columns for c in PROBABILITY_COLUMNS):
        frame = frame.with_columns(pl.col(c).cast(pl.Float64, strict=False) for c in PROBABILITY_COLUMNS)
    pairs = build_pairs(frame, keep=PROBABILITY_COLUMNS)
    return pairs, pair_confidence(pairs)
