"""Judge cards side by side: per subset, the difference in swap-consistency and in order-controlled accuracy
(right in both orders) between two cards, Holm-corrected over every difference shown, and tiers.

Two cards are compared on a subset only when they judged the same kind of pairs (the same `pair_set`: the same
source set). When both carry their pairs' outcomes and share pairs, the difference is paired on the shared pairs
(Newcombe's hybrid score interval for paired proportions, `drift.history.paired_difference`, clustered by item when
items repeat; McNemar's exact test). When one card has only counts (a published figure over the whole set), the
two cards are two samples of the same set of pairs, compared as independent samples (Newcombe's square-and-add
of the two Wilson intervals; Fisher's exact test): the pairs they share make that interval wider than a paired one
would be when the judges tend to get the same pairs right. Cards of different pair sets are never differenced.

Tiers: per subset and measure, the cards sorted by their point estimate; the best card not yet placed opens a tier,
and every later card whose interval overlaps the opener's joins it. Judges in one tier are not ranked.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from swapjudge.core.stats import holm, wilson
from swapjudge.drift.history import paired_difference
from swapjudge.probes.judge_card import subset_names
from swapjudge.probes.variants import mcnemar

MEASURES = ("consistency", "accuracy")
CONSISTENT_OUTCOMES = frozenset({"x_wins", "y_wins", "tie"})


@dataclass(frozen=True)
class SubsetFigures:
    """What a comparison reads from one card's subset: counts, the card's own intervals, and per pair (keyed by
    item, x, y) whether it was consistent and right in both orders (None: no label), complete pairs only."""

    card: str
    subset: str
    pair_set: str
    counts: Mapping[str, tuple[int, int]]  # measure -> (k, n)
    intervals: Mapping[str, tuple[float | None, float | None, float | None]]  # measure -> (rate, low, high)
    pairs: Mapping[tuple[str, str, str], tuple[bool, bool | None]] | None


def _right(row: Sequence[Any]) -> bool | None:
    label, outcome = row[3], row[6]
    if label is None:
        return None
    if label == "tie":
        return bool(outcome == "tie")
    if label == row[1]:
        return bool(outcome == "x_wins")
    if label == row[2]:
        return bool(outcome == "y_wins")
    return None


def subset_figures(card: str, subset: Mapping[str, Any]) -> SubsetFigures:
    cons = subset.get("consistency") or {}
    counts: dict[str, tuple[int, int]] = {}
    intervals: dict[str, tuple[float | None, float | None, float | None]] = {}
    if cons.get("pairs"):
        counts["consistency"] = (int(cons["consistent"]), int(cons["pairs"]))
        intervals["consistency"] = (cons.get("rate"), cons.get("low"), cons.get("high"))
    acc = subset.get("accuracy")
    if acc and acc.get("pairs") and acc.get("both") is not None:
        n = int(acc["pairs"])
        counts["accuracy"] = (round(float(acc["both"]) * n), n)
        both = (acc.get("intervals") or {}).get("both") or {}
        intervals["accuracy"] = (acc["both"], both.get("low"), both.get("high"))
    rows = subset.get("per_pair")
    pairs = None
    if rows:
        pairs = {(str(r[0]), str(r[1]), str(r[2])): (r[6] in CONSISTENT_OUTCOMES, _right(r)) for r in rows
                 if r[6] != "incomplete"}
    return SubsetFigures(card, str(subset["name"]), str(subset.get("pair_set") or subset["name"]), counts,
                         intervals, pairs)


def card_label(card: Mapping[str, Any]) -> str:
    """How a card is named in a comparison: its judge, and its source when it has one."""
    source = card.get("source") or ""
    return f"{card.get('judge')}" + (f" ({source})" if source else "")


def newcombe_independent(ka: int, na: int, kb: int, nb: int,
                         confidence: float = 0.95) -> tuple[float, float, float]:
    """(pa - pb, low, high): Newcombe's (1998) method 10 for two independent proportions, the square-and-add of
    the two Wilson intervals."""
    wa, wb = wilson(ka, na, confidence), wilson(kb, nb, confidence)
    assert wa.rate is not None and wa.low is not None and wa.high is not None
    assert wb.rate is not None and wb.low is not None and wb.high is not None
    diff = wa.rate - wb.rate
    low = diff - math.sqrt((wa.rate - wa.low) ** 2 + (wb.high - wb.rate) ** 2)
    high = diff + math.sqrt((wa.high - wa.rate) ** 2 + (wb.rate - wb.low) ** 2)
    return diff, max(-1.0, low), min(1.0, high)


@dataclass(frozen=True)
class CardDifference:
    """Card a minus card b on one subset and measure, over `units` (shared pairs when paired)."""

    subset: str
    measure: str
    a: str
    b: str
    paired: bool
    units_a: int
    units_b: int
    rate_a: float | None
    rate_b: float | None
    difference: float | None
    low: float | None
    high: float | None
    p_value: float | None
    confidence: float
    method: str
    independent: str
    p_holm: float | None = None

    @property
    def differs(self) -> bool:
        """The Holm-adjusted test rejects at 1 - confidence: only then do the two cards differ, as far as these
        data say."""
        return self.p_holm is not None and self.p_holm <= 1 - self.confidence

    def to_dict(self) -> dict[str, Any]:
        return {"subset": self.subset, "measure": self.measure, "a": self.a, "b": self.b, "paired": self.paired,
                "units_a": self.units_a, "units_b": self.units_b, "rate_a": self.rate_a, "rate_b": self.rate_b,
                "difference": self.difference, "low": self.low, "high": self.high, "p_value": self.p_value,
                "p_holm": self.p_holm, "differs": self.differs, "confidence": self.confidence,
                "method": self.method, "independent": self.independent}


def difference(a: SubsetFigures, b: SubsetFigures, measure: str, confidence: float = 0.95) -> CardDifference | None:
    """a minus b on one measure, paired on shared pairs when both cards carry them; None when the two cards did not
    judge the same pair set or one lacks the measure."""
    if a.pair_set != b.pair_set or measure not in a.counts or measure not in b.counts:
        return None
    index = 0 if measure == "consistency" else 1
    if a.pairs is not None and b.pairs is not None:
        shared = [k for k in a.pairs if k in b.pairs and a.pairs[k][index] is not None
                  and b.pairs[k][index] is not None]
        if shared:
            fa = np.array([bool(a.pairs[k][index]) for k in shared])
            fb = np.array([bool(b.pairs[k][index]) for k in shared])
            items = np.array([k[0] for k in shared], dtype=object)
            d = paired_difference(measure, fb, fa, confidence, items)  # its difference is the second minus the first
            return CardDifference(a.subset, measure, a.card, b.card, True, len(shared), len(shared), d.rate_b,
                                  d.rate_a, d.difference, d.low, d.high, mcnemar(fa, fb).p_value, confidence,
                                  d.method, "items" if d.independent == "items" else "shared pairs")
    (ka, na), (kb, nb) = a.counts[measure], b.counts[measure]
    if not na or not nb:
        return None
    from scipy.stats import fisher_exact

    diff, low, high = newcombe_independent(ka, na, kb, nb, confidence)
    p = float(fisher_exact([[ka, na - ka], [kb, nb - kb]]).pvalue)
    return CardDifference(a.subset, measure, a.card, b.card, False, na, nb, ka / na, kb / nb, diff, low, high,
                          p, confidence, "newcombe10_independent", "the two cards' pairs, as independent samples")


@dataclass(frozen=True)
class Tier:
    subset: str
    measure: str
    tiers: tuple[tuple[str, ...], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"subset": self.subset, "measure": self.measure, "tiers": [list(t) for t in self.tiers],
                "method": "sorted by estimate; a tier is its best card and every later card whose interval "
                          "overlaps that card's; judges in one tier are not ranked"}


def tiers(entries: Sequence[tuple[str, float, float, float]]) -> tuple[tuple[str, ...], ...]:
    """Tiers of (name, rate, low, high): the best card not yet placed opens a tier; later cards whose interval
    overlaps the opener's join it."""
    left = sorted(entries, key=lambda e: (-e[1], e[0]))
    out: list[tuple[str, ...]] = []
    while left:
        opener = left[0]
        members = [e for e in left if e is opener or e[3] >= opener[2]]
        out.append(tuple(e[0] for e in members))
        left = [e for e in left if e not in members]
    return tuple(out)


@dataclass(frozen=True)
class CardComparison:
    """Cards side by side: which cards share which subsets' pairs, the differences (Holm over all of them),
    and the tiers per subset and measure."""

    cards: tuple[Mapping[str, Any], ...]
    shared: Mapping[str, tuple[str, ...]]  # card label -> subsets compared with the first card
    differences: tuple[CardDifference, ...]
    tier_list: tuple[Tier, ...]

    def to_dict(self) -> dict[str, Any]:
        refs = []
        for card in self.cards[1:]:
            label = card_label(card)
            shared = list(self.shared.get(label, ()))
            refs.append({"judge": card.get("judge"), "source": card.get("source"), "label": label,
                         "shared_subsets": shared,
                         "note": None if shared else "shares no pairs with this card: shown on its own data, "
                                                     "not compared",
                         "subsets": [{k: s.get(k) for k in ("name", "pair_set", "pairs", "consistency",
                                                            "flip_direction", "accuracy")}
                                     for s in card.get("subsets") or []]})
        return {"references": refs, "differences": [d.to_dict() for d in self.differences],
                "tiers": [t.to_dict() for t in self.tier_list]}


def compare_cards(cards: Sequence[Mapping[str, Any]], *, all_pairs: bool = False,
                  confidence: float = 0.95) -> CardComparison:
    """The first card against each of the others (`all_pairs`: every two cards), per subset and measure."""
    labels = [card_label(c) for c in cards]
    figs = [{str(s["name"]): subset_figures(label, s) for s in c.get("subsets") or []}
            for label, c in zip(labels, cards, strict=True)]
    pairs = [(i, j) for i in range(len(cards)) for j in range(i + 1, len(cards)) if all_pairs or i == 0]
    found: list[CardDifference] = []
    shared: dict[str, list[str]] = {}
    for i, j in pairs:
        for name in figs[i]:
            if name not in figs[j]:
                continue
            for measure in MEASURES:
                d = difference(figs[i][name], figs[j][name], measure, confidence)
                if d is not None:
                    found.append(d)
                    if i == 0 and name not in shared.setdefault(labels[j], []):
                        shared[labels[j]].append(name)
    adjusted = holm([d.p_value for d in found])
    diffs = tuple(dataclasses.replace(d, p_holm=p) for d, p in zip(found, adjusted, strict=True))
    tier_list = []
    for name in subset_names(cards):
        for measure in MEASURES:
            groups: dict[str, list[tuple[str, float, float, float]]] = {}
            for label, f in zip(labels, figs, strict=True):
                s = f.get(name)
                if s is None or measure not in s.intervals:
                    continue
                rate, low, high = s.intervals[measure]
                if rate is not None and low is not None and high is not None:
                    groups.setdefault(s.pair_set, []).append((label, float(rate), float(low), float(high)))
            for entries in groups.values():
                if len(entries) > 1:
                    tier_list.append(Tier(name, measure, tiers(entries)))
    return CardComparison(tuple(cards), {k: tuple(v) for k, v in shared.items()}, diffs, tuple(tier_list))
