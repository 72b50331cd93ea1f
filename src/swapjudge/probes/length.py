"""Length/verbosity probe: does the judge prefer the longer answer?

Swapping cannot remove this effect: the length travels with the answer, not with the slot, so both orders see
the same longer answer and a judge that likes length is consistently, not inconsistently, wrong. The swap
measures position bias only; this probe measures what the answer carries with it.

Per pair the order-cancelled outcome is 1 for a consistent win of x, 0 for a consistent win of y and 1/2 for a
split (consistent tie, flip or half-tie: the judge did not prefer either answer once order is cancelled);
incomplete pairs are left out. Splits enter as 1/2 (the half-credit reading) because dropping them
inflates the effect; `splits="exclude"` fits on consistent wins only.

- slope: logistic regression of the outcome on the length difference d = len(x) - len(y), without intercept,
  so the model is the same whichever answer is called x: P(longer wins) = sigmoid(slope * |d|). Reported per
  `per` units (default 100), with a robust interval and a Wald p-value (see probes/logit.py). When some item
  holds more than one pair (many systems on the same questions, or several rounds), the robust error is
  clustered by item: the pairs of one item share an answer and a difficulty, so they are not independent.
- prefer_longer: among pairs whose lengths differ by more than `threshold`, the share of consistent wins that
  went to the longer answer (Wilson interval, exact binomial test against 1/2), and the half-credit share
  over all such complete pairs (splits worth 1/2; the half-credit interval of core/stats.py).
- matched: the pairs whose lengths differ by at most `tolerance`: swap-consistency and, when two systems are
  compared, the win rate (under the tie policy) on that slice, where length cannot explain the result.
- length_controlled (optional, two systems a and b): AlpacaEval-2-style length-controlled win rate. Fit
  P(a beats b) = sigmoid(theta + phi * tanh(d_ab / sd(d_ab))) with d_ab = len(a) - len(b) over complete pairs
  (splits 1/2); the length-controlled win rate is sigmoid(theta), the predicted preference at equal length,
  with the interval sigmoid(theta +- z * se). Unlike AlpacaEval 2 there is no per-instruction difficulty term;
  with `alpaca` rows (probes/alpaca_lc.py) the fit is AlpacaEval 2's own, with the difficulty term and the
  regularisation toward the baseline, on the rows given (which may be single calls of single-order data).

A length effect is confounded with quality when the better system also writes longer answers; the matched
slice and labels (agreement) are the checks that separate the two.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from swapjudge.core import policy
from swapjudge.core.choices import LengthUnit as LengthUnit  # re-exported: its home before
from swapjudge.core.choices import SplitHandling as SplitHandling
from swapjudge.core.policy import DEFAULT_MIN_CONSISTENCY, Gate, TiePolicy, WinRate, win_rate_over_pairs, withheld_copy
from swapjudge.core.stats import (
    Independence,
    MeanInterval,
    Proportion,
    clustered_binomial_p,
    holm,
    mean_interval,
    proportion_interval,
)
from swapjudge.core.swap import Consistency, consistency, consistency_of_pairs, count_outcomes
from swapjudge.probes.alpaca_lc import (
    DEFAULT_REGULARIZE,
    AlpacaLcFit,
    GamedRows,
    LcRows,
    fit_alpaca_lc,
    training_rows,
)
from swapjudge.probes.logit import fit_logit
from swapjudge.reading.pairs import Outcome, order_cancelled_score

SWAP_CANNOT_REMOVE = ("Swapping cannot remove a length preference: the length travels with the answer, not the "
                      "slot, so both orders see the same longer answer. A consistent verdict can still be a verdict "
                      "for length.")


def text_length(text: str, unit: LengthUnit | str = LengthUnit.chars) -> int:
    return len(text.split()) if LengthUnit(unit) is LengthUnit.tokens else len(text)


@dataclass(frozen=True)
class LengthSlope:
    """Change in log-odds that x wins per `per` units of length difference (x minus y)."""

    per: int
    slope: float | None
    low: float | None
    high: float | None
    p_value: float | None
    se_model: float | None
    pairs: int
    reason: str | None = None  # why there is no slope, when there is none
    clusters: int | None = None  # items the robust error was clustered on; None: pairs treated as independent

    @property
    def odds_ratio(self) -> float | None:
        return None if self.slope is None else float(np.exp(self.slope))

    def to_dict(self) -> dict[str, Any]:
        return {"per": self.per, "slope": self.slope, "low": self.low, "high": self.high, "p_value": self.p_value,
                "odds_ratio": self.odds_ratio, "se_model": self.se_model, "pairs": self.pairs, "reason": self.reason,
                "se_method": "cluster_robust" if self.clusters is not None else "robust",
                "independent": "items" if self.clusters is not None else "pairs", "clusters": self.clusters}


@dataclass(frozen=True)
class LengthControlled:
    a: str
    b: str
    value: float | None
    low: float | None
    high: float | None
    raw: float | None  # the plain half-credit win rate of a on the same pairs, for comparison
    pairs: int
    withheld: bool = False  # the gate failed: a win rate under another name, so every figure here is None
    alpaca: AlpacaLcFit | None = None  # AlpacaEval's fit (difficulty term, regularisation), when asked for

    def to_dict(self) -> dict[str, Any]:
        out = {"a": self.a, "b": self.b, "value": self.value, "low": self.low, "high": self.high,
               "raw_half_credit": self.raw, "pairs": self.pairs, "withheld": self.withheld}
        return {**out, **(self.alpaca.model_dict() if self.alpaca is not None else {"difficulty_term": False})}


@dataclass(frozen=True)
class LengthProbe:
    judge: str | None
    unit: LengthUnit
    splits: SplitHandling
    threshold: int
    tolerance: int
    pairs: int  # complete pairs with both answer lengths known (from texts or length fields)
    missing_texts: int  # pairs left out because a text was not found
    mean_abs_difference: float | None
    slope: LengthSlope
    prefer_longer: Proportion  # consistent wins of the longer answer among consistent wins, |d| > threshold
    prefer_longer_p_value: float | None
    prefer_longer_splits: int  # splits among the pairs with |d| > threshold
    prefer_longer_half_credit: tuple[float | None, float | None, float | None]
    matched_pairs: int
    matched_consistency: Consistency | None
    matched_win_rate: WinRate | None
    length_controlled: LengthControlled | None
    note: str = SWAP_CANNOT_REMOVE
    gate: Gate | None = None  # the self-consistency gate over the compared pair's pairs: it withholds win rates
    # Holm-adjusted p-values when several judges are probed in one command (each kind of test its own family)
    slope_p_holm: float | None = None
    prefer_longer_p_holm: float | None = None
    prefer_longer_independence: Independence | None = None  # what prefer_longer's interval and test treat as one

    def to_dict(self) -> dict[str, Any]:
        hc = self.prefer_longer_half_credit
        return {
            "judge": self.judge, "unit": self.unit.value, "splits": self.splits.value,
            "threshold": self.threshold, "tolerance": self.tolerance,
            "pairs": self.pairs, "missing_texts": self.missing_texts,
            "mean_abs_difference": self.mean_abs_difference,
            "slope": {**self.slope.to_dict(), "p_holm": self.slope_p_holm},
            "prefer_longer": {**self.prefer_longer.to_dict(), "p_value": self.prefer_longer_p_value,
                              "p_holm": self.prefer_longer_p_holm,
                              "splits": self.prefer_longer_splits,
                              **(self.prefer_longer_independence or Independence("pairs", self.prefer_longer.n,
                                                                                 1.0)).to_dict(),
                              "half_credit": {"value": hc[0], "low": hc[1], "high": hc[2]}},
            "matched": {"pairs": self.matched_pairs,
                        "consistency": self.matched_consistency.to_dict() if self.matched_consistency else None,
                        "win_rate": self.matched_win_rate.to_dict() if self.matched_win_rate else None},
            "length_controlled": self.length_controlled.to_dict() if self.length_controlled else None,
            "note": self.note,
            "gate": self.gate.to_dict() if self.gate else None,
        }


def length_with_holm(probes: Sequence[LengthProbe]) -> list[LengthProbe]:
    """Several judges probed at once: the slope tests and the prefer-longer tests each get Holm-adjusted p."""
    if len(probes) < 2:
        return list(probes)
    slopes = holm([p.slope.p_value for p in probes])
    longer = holm([p.prefer_longer_p_value for p in probes])
    return [dataclasses.replace(p, slope_p_holm=s, prefer_longer_p_holm=lo)
            for p, s, lo in zip(probes, slopes, longer, strict=True)]


def length_slope(score: np.ndarray, diff: np.ndarray, *, per: int = 100, confidence: float = 0.95,
                 items: np.ndarray | None = None) -> LengthSlope:
    """Logistic slope of the order-cancelled score on the length difference, without intercept; with `items`
    (each pair's item) the robust error is clustered by item when some item holds more than one pair, since the
    pairs of one item share its answers and its difficulty."""
    keep = ~np.isnan(score)
    if not keep.any():  # e.g. single-order data: no pair has both verdicts
        return LengthSlope(per, None, None, None, None, None, 0, "no complete pair (both orders with verdicts)")
    if not np.any(diff[keep] != 0):
        return LengthSlope(per, None, None, None, None, None, int(keep.sum()), "no pair differs in length")
    groups = None
    if items is not None:
        kept = np.asarray(items)[keep]
        if np.unique(kept.astype(str) if kept.dtype == object else kept).size < kept.size:
            groups = kept
    fit = fit_logit((diff[keep] / per)[:, None], score[keep], groups)
    if fit is None:
        return LengthSlope(per, None, None, None, None, None, int(keep.sum()),
                           "no finite slope: the outcome is separated by length (e.g. the longer answer won every "
                           "pair), or every pair is on one item; see prefer_longer")
    low, high = fit.interval(0, confidence)
    return LengthSlope(per, fit.coef[0], low, high, fit.p_value(0), fit.se_model[0], int(keep.sum()),
                       clusters=fit.clusters)


@dataclass(frozen=True)
class LengthOptions:
    """How the length probe measures and what it reports (the flags of `swapjudge probe length`)."""

    unit: LengthUnit | str = LengthUnit.chars
    splits: SplitHandling | str = SplitHandling.half  # splits in the slope: worth 1/2, or left out
    threshold: int = 100  # P(prefer longer) over pairs whose lengths differ by more than this
    tolerance: int = 20  # the length-matched slice: pairs whose lengths differ by at most this
    per: int = 100  # the slope per this many units
    length_controlled: bool = False
    tie_policy: TiePolicy | str = TiePolicy.half_credit  # of the matched win rate
    confidence: float = 0.95
    min_consistency: float = DEFAULT_MIN_CONSISTENCY
    regularize: float | None = None  # AlpacaEval's weight of the gamed baseline rows per instruction (None: 0.2)
    alpaca_cv: bool = False  # also AlpacaEval's own L1 cross-validated estimate (needs scikit-learn)


def length_probe(outcome: np.ndarray, len_x: np.ndarray, len_y: np.ndarray,
                 options: LengthOptions = LengthOptions(), *, judge: str | None = None,
                 x: np.ndarray | None = None, y: np.ndarray | None = None, pair: tuple[str, str] | None = None,
                 items: np.ndarray | None = None, missing_texts: int = 0, gate: Gate | None = None,
                 alpaca: LcRows | None = None, gamed: GamedRows | None = None) -> LengthProbe:
    """The length probe over pairs (one entry per pair: outcome code, lengths of x and y; x/y the identities,
    needed for the matched win rate and the length-controlled win rate of `pair` = (a, b)). The win rates (matched
    and length-controlled) pass the self-consistency gate: `gate` when given (a report passes the analysis'
    own), else one at `options.min_consistency` over the compared pair's complete pairs (a minimum of 0 passes
    even when consistency cannot be measured, as in `rank`); when it fails they are withheld. With `alpaca` (a's
    rows against b, probes/alpaca_lc.py `rows_for_pair`) and `length_controlled`, the length-controlled win rate
    is AlpacaEval's fit on those rows with their difficulties and the `gamed` baseline rows weighted `regularize`
    (and, with `alpaca_cv`, AlpacaEval's own L1 cross-validated estimate beside it; needs scikit-learn)."""
    o = options
    confidence, threshold, tolerance, tie_policy = o.confidence, o.threshold, o.tolerance, o.tie_policy
    splits = SplitHandling(o.splits)
    complete = outcome != Outcome.INCOMPLETE
    outcome, len_x, len_y = outcome[complete], len_x[complete].astype(float), len_y[complete].astype(float)
    if x is not None and y is not None:
        x, y = x[complete], y[complete]
    if items is not None:
        items = np.asarray(items)[complete]
    diff = len_x - len_y
    score = order_cancelled_score(outcome)
    decisive = (outcome == Outcome.X_WINS) | (outcome == Outcome.Y_WINS)
    fit_score = score if splits is SplitHandling.half else np.where(decisive, score, np.nan)
    slope = length_slope(fit_score, diff, per=o.per, confidence=confidence, items=items)

    apart = np.abs(diff) > threshold
    longer_won = (apart & (((outcome == Outcome.X_WINS) & (diff > 0)) | ((outcome == Outcome.Y_WINS) & (diff < 0))))
    counted = apart & decisive
    n_decisive = int(counted.sum())
    k_longer = int(longer_won.sum())
    # pairs of one item share its answers: the interval and the test are over items when items repeat
    longer = proportion_interval(longer_won[counted], confidence, None if items is None else items[counted])
    # half credit from the longer answer's side: its score is score when x is longer, 1 - score otherwise
    longer_score = np.where(diff > 0, score, 1 - score)[apart]

    matched = np.abs(diff) <= tolerance
    m_counts = count_outcomes(outcome[matched])
    m_cons = consistency(m_counts.consistent, m_counts.complete, confidence, flags=(outcome <= Outcome.TIE)[matched],
                         items=None if items is None else items[matched]) if m_counts.complete else None
    m_rate = None
    lc = None
    if pair is not None and x is not None and y is not None:
        a, b = pair
        in_pair = ((x == a) & (y == b)) | ((x == b) & (y == a))
        a_is_x = x == a
        a_won = np.where(a_is_x, outcome == Outcome.X_WINS, outcome == Outcome.Y_WINS)
        b_won = np.where(a_is_x, outcome == Outcome.Y_WINS, outcome == Outcome.X_WINS)
        slice_ = matched & in_pair
        if gate is None:
            pair_items = None if items is None else np.asarray(items)[in_pair]
            pair_cons = (consistency_of_pairs(outcome[in_pair], pair_items, confidence) if pair_items is not None
                         else _counts_consistency(outcome[in_pair], confidence))
            gate = policy.gate(pair_cons.rate, o.min_consistency, pair_cons.low, pair_cons.high)
            if o.min_consistency <= 0 and not gate.passed:
                gate = Gate(o.min_consistency, True, None)  # no minimum: nothing to fail
        if slice_.any():
            result = np.where(a_won, 1.0, np.where(b_won, 0.0, 0.5))[slice_]
            m_rate = win_rate_over_pairs(a, b, result, items=None if items is None else items[slice_],
                                         policy=tie_policy, confidence=confidence)
            m_rate = m_rate if gate.passed else withheld_copy(m_rate)
        if o.length_controlled and alpaca is not None:
            weight = DEFAULT_REGULARIZE if o.regularize is None else o.regularize
            lc = _alpaca_controlled(a, b, alpaca, gamed, weight, confidence, o.alpaca_cv)
        elif o.length_controlled:
            lc = _length_controlled(a, b, score[in_pair], np.where(a_is_x, diff, -diff)[in_pair],
                                    a_is_x[in_pair], confidence, None if items is None else items[in_pair])
        if lc is not None and not gate.passed:
            lc = LengthControlled(a, b, None, None, None, None, lc.pairs, withheld=True,
                                  alpaca=None if lc.alpaca is None else lc.alpaca.withheld())
    return LengthProbe(
        judge=judge, unit=LengthUnit(o.unit), splits=splits, threshold=threshold, tolerance=tolerance,
        pairs=int(outcome.size), missing_texts=missing_texts,
        mean_abs_difference=float(np.abs(diff).mean()) if diff.size else None,
        slope=slope,
        prefer_longer=Proportion(k_longer, n_decisive, longer.value, longer.low, longer.high),
        prefer_longer_p_value=clustered_binomial_p(k_longer, n_decisive, longer.independence),
        prefer_longer_splits=int(apart.sum()) - n_decisive,
        prefer_longer_half_credit=_triple(mean_interval(longer_score, confidence,
                                                        None if items is None else items[apart])),
        matched_pairs=int(matched.sum()), matched_consistency=m_cons, matched_win_rate=m_rate,
        length_controlled=lc, gate=gate, prefer_longer_independence=longer.independence,
    )


def _triple(m: MeanInterval) -> tuple[float | None, float | None, float | None]:
    return m.value, m.low, m.high


def _length_controlled(a: str, b: str, score_x: np.ndarray, diff_ab: np.ndarray, a_is_x: np.ndarray,
                       confidence: float, items: np.ndarray | None = None) -> LengthControlled:
    score_a = np.where(a_is_x, score_x, 1 - score_x)
    raw = float(score_a.mean()) if score_a.size else None
    sd = float(diff_ab.std()) if diff_ab.size else 0.0
    length_term = np.tanh(diff_ab / sd) if sd > 0 else np.zeros_like(diff_ab)
    design = np.column_stack([np.ones_like(diff_ab), length_term])
    if sd == 0:
        design = design[:, :1]  # no length variation: the model is the plain win rate
    # several rounds repeat an item: its pairs are one cluster for the robust error
    repeats = items is not None and np.unique(np.asarray(items).astype(str)).size < np.asarray(items).size
    fit = fit_logit(design, score_a, items if repeats else None) if score_a.size else None
    if fit is None:
        return LengthControlled(a, b, None, None, None, raw, int(score_a.size))
    low, high = fit.interval(0, confidence)
    return LengthControlled(a, b, float(special.expit(fit.coef[0])), float(special.expit(low)),
                            float(special.expit(high)), raw, int(score_a.size))


def _alpaca_controlled(a: str, b: str, rows: LcRows, gamed: GamedRows | None, regularize: float,
                       confidence: float, with_cv: bool = False) -> LengthControlled:
    fit = fit_alpaca_lc(rows.label, rows.delta_len, rows.instruction, difficulty=rows.difficulty, gamed=gamed,
                        regularize=regularize, confidence=confidence)
    if with_cv:
        from swapjudge.probes.alpaca_cv import fit_alpaca_cv  # scikit-learn, only when asked for

        fit = dataclasses.replace(fit, cv=fit_alpaca_cv(training_rows(
            rows.label, rows.delta_len, rows.instruction, difficulty=rows.difficulty, gamed=gamed,
            regularize=regularize)))
    return LengthControlled(a, b, fit.value, fit.low, fit.high, fit.raw, fit.rows, alpaca=fit)


def lengths_for_pairs(items: np.ndarray, x: np.ndarray, y: np.ndarray, texts: Mapping[tuple[str, str], str],
                      unit: LengthUnit | str = LengthUnit.chars) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lengths of x and y per pair from texts keyed by (item, system); the third array marks pairs whose two
    texts were both found."""
    lx = np.zeros(items.size)
    ly = np.zeros(items.size)
    found = np.zeros(items.size, dtype=bool)
    for i, (item, sx, sy) in enumerate(zip(items, x, y, strict=True)):
        tx, ty = texts.get((str(item), str(sx))), texts.get((str(item), str(sy)))
        if tx is not None and ty is not None:
            lx[i], ly[i], found[i] = text_length(tx, unit), text_length(ty, unit), True
    return lx, ly, found


def _counts_consistency(outcome: np.ndarray, confidence: float) -> Consistency:
    """Swap-consistency of pairs known only by their outcomes (no items: each pair independent)."""
    counts = count_outcomes(outcome)
    return consistency(counts.consistent, counts.complete, confidence)
