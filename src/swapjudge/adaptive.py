"""Adaptive swapping. Offline: on a run where every pair has both orders and the judge's verdict probabilities,
what would "make the swapped call only when the first verdict's confidence is below t" have saved, how many
flips would it have missed (flips in pairs left unswapped, which an adaptive run never sees), and what
swap-consistency would it have reported (measured on the swapped pairs only, as an adaptive run does)?
And the analysis of an adaptive run, from its store or from its exported records (`adaptive_view`).

Light on purpose (no runner, no HTTP): the analysis of exported records imports it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from swapjudge.policy import decision, win_rate
from swapjudge.stats import Proportion, wilson

if TYPE_CHECKING:
    from swapjudge.analysis import JudgeAnalysis

THRESHOLDS: tuple[float, ...] = (0.6, 0.7, 0.8, 0.9, 0.95)


def verdict_confidence(verdict: str | None, probabilities: Mapping[str, float] | None) -> float | None:
    """The probability of the verdict given, normalised over the verdict options; None when unknown."""
    if verdict is None or not probabilities or verdict not in probabilities:
        return None
    total = sum(v for v in probabilities.values() if v > 0)
    return None if total <= 0 else probabilities[verdict] / total


@dataclass(frozen=True)
class ThresholdOutcome:
    """At one threshold: swapped calls saved, flips missed, and the consistency the run would have reported."""

    threshold: float
    pairs: int
    calls_saved: int
    flips: int
    flips_missed: int
    consistency_true: float | None
    consistency_reported: float | None  # what an adaptive run reports: over the swapped pairs only (None: none)

    @property
    def swapped(self) -> int:
        return self.pairs - self.calls_saved

    @property
    def saved_share(self) -> float | None:
        """Calls saved as a share of the 2 x pairs calls of always swapping."""
        return None if self.pairs == 0 else self.calls_saved / (2 * self.pairs)

    @property
    def missed_share(self) -> float | None:
        return None if self.flips == 0 else self.flips_missed / self.flips

    def to_dict(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "pairs": self.pairs, "calls_saved": self.calls_saved,
                "saved_share": self.saved_share, "flips": self.flips, "flips_missed": self.flips_missed,
                "missed_share": self.missed_share, "swapped_pairs": self.swapped,
                "consistency_true": self.consistency_true,
                "consistency_reported": self.consistency_reported}


@dataclass(frozen=True)
class AdaptiveAnalysis:
    pairs: int  # complete two-order pairs
    without_confidence: int  # of those, pairs whose first call carries no usable probability (always swapped)
    consistency: Proportion
    thresholds: tuple[ThresholdOutcome, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"pairs": self.pairs, "without_confidence": self.without_confidence,
                "consistency": self.consistency.to_dict(), "thresholds": [t.to_dict() for t in self.thresholds]}


def _named(call: Mapping[str, Any]) -> str:
    verdict = call["verdict"]
    return "tie" if verdict == "tie" else str(call["first"] if verdict == "first" else call["second"])


def adaptive_offline(calls: Iterable[Mapping[str, Any]], thresholds: Sequence[float] = THRESHOLDS,
                     confidence: float = 0.95) -> AdaptiveAnalysis:
    """`calls`: stored calls (round, item, first, second, order_index, verdict, probabilities, source). Pairs
    with both orders really called and both verdicts usable are counted; inferred or errored calls are not."""
    by_pair: dict[tuple[Any, ...], dict[int, Mapping[str, Any]]] = {}
    for c in calls:
        if c.get("source") == "inferred" or c.get("error") or c["first"] == c["second"]:
            continue
        key = (c["round"], str(c["item"]), frozenset((c["first"], c["second"])))
        by_pair.setdefault(key, {})[int(c["order_index"])] = c
    rows: list[tuple[float | None, bool]] = []  # (first call's confidence, consistent)
    for orders in by_pair.values():
        if set(orders) != {0, 1} or orders[0]["verdict"] is None or orders[1]["verdict"] is None:
            continue
        head = orders[0]
        rows.append((verdict_confidence(head["verdict"], head.get("probabilities")),
                     _named(head) == _named(orders[1])))
    n = len(rows)
    consistent = sum(ok for _, ok in rows)
    flips = n - consistent
    out = []
    for t in thresholds:
        skipped = [(conf, ok) for conf, ok in rows if conf is not None and conf >= t]
        missed = sum(not ok for _, ok in skipped)
        swapped = n - len(skipped)
        swapped_ok = consistent - sum(ok for _, ok in skipped)
        out.append(ThresholdOutcome(
            threshold=t, pairs=n, calls_saved=len(skipped), flips=flips, flips_missed=missed,
            consistency_true=None if n == 0 else consistent / n,
            consistency_reported=None if swapped == 0 else swapped_ok / swapped))
    return AdaptiveAnalysis(n, sum(conf is None for conf, _ in rows), wilson(consistent, n, confidence), tuple(out))


def adaptive_view(analysis: JudgeAnalysis, unswapped: Iterable[Mapping[str, Any]], threshold: float,
                  settings: Mapping[str, Any]) -> JudgeAnalysis:
    """An adaptive run's analysis, said plainly: swap-consistency (and the gate, and label accuracy) come from the
    swapped pairs alone, a selected subset; the win rate counts every pair, an unswapped one by its one verdict.

    `analysis`: the plain analysis of the run's calls (an unswapped pair counts there as incomplete);
    `unswapped`: the one call (first, second, verdict) of each pair whose swap was skipped; `settings`: the
    analysis' `tie_policy` and `confidence`. Pure: `runner.analyze_run` (the store) and `analysis.analyze`
    (exported records carrying `registered_adaptive_swap`) both end here, so they say the same."""
    chosen = set(analysis.pair) if analysis.pair else None
    heads = [c for c in unswapped if c["verdict"] is not None
             and (chosen is None or {c["first"], c["second"]} == chosen)]
    if not heads:
        return analysis
    unswapped_n = len(heads)
    o = analysis.outcomes
    other_incomplete = o.incomplete - unswapped_n
    generic = f"{o.incomplete} pair(s) without two usable verdicts"
    notes = [n for n in analysis.notes if not n.startswith(generic)]
    if other_incomplete > 0:
        notes.append(f"{other_incomplete} pair(s) without two usable verdicts (failed or unparsable calls) are "
                     "shown and left out of every rate")
    cons = analysis.consistency
    measured = "not measured" if cons is None or cons.rate is None else f"{cons.rate:.1%}"
    head = (f"adaptive swapping (threshold {threshold:g}): {o.complete} pair(s) swapped, {unswapped_n} judged in "
            f"one order only (first verdict's confidence >= {threshold:g}; no swap measurement, nothing assumed). ")
    if o.complete == 0:
        notes.append(head + "No pair was swapped, so swap-consistency is not measured and the gate fails; "
                            "confident verdicts can still be position-driven")
    else:
        notes.append(head + f"Swap-consistency ({measured}), the gate and label accuracy use the {o.complete} swapped "
                            "pair(s) alone: a selected subset (the least confident first verdicts, plus any served "
                            "from the cache), which says nothing certain about the unswapped pairs; confident "
                            "verdicts can still be position-driven")
    rate = analysis.win_rate
    result = dataclasses.replace(analysis, notes=tuple(notes))
    if analysis.pair is None:
        return result
    a, b = analysis.pair
    aw, bw, splits = (0, 0, 0) if rate is None else (rate.a_wins, rate.b_wins, rate.splits)
    for h in heads:
        named = "tie" if h["verdict"] == "tie" else h["first"] if h["verdict"] == "first" else h["second"]
        aw, bw, splits = aw + (named == a), bw + (named == b), splits + (named == "tie")
    policy = rate.policy if rate is not None else settings.get("tie_policy") or "half_credit"
    mixed = win_rate(a, b, aw, bw, splits, policy, float(settings.get("confidence", 0.95)))
    notes.append(
        f"win rate over all {mixed.pairs} pair(s): each swapped pair by its two-order outcome under the tie policy, "
        f"each of the {unswapped_n} unswapped pair(s) by its one verdict in its coin-flipped order (a position-driven "
        "verdict there counts as a win for whichever system sat in slot 1, not as a flip)")
    return dataclasses.replace(result, win_rate=mixed, notes=tuple(notes),
                               decision=decision(mixed.margin, cons.flip_rate_high if cons else None))
