"""A judge card: how one judge behaves on pairs whose better answer is known, per subset of a suite, with the
protocol it was measured under. Pure: the card is put together from results other modules computed (the analysis
of `swapjudge analyze`, the agreement of `swapjudge agreement`, the length and repeat probes), so its figures are
those results' own; this module adds no statistic of its own but the per-pair outcomes the comparisons pair on.

A subset's JSON object carries `pairs`, `consistency`, `flip_direction` and `accuracy` exactly as `analyze` names
them (docs/json.md), beside the probes and `per_pair`: one `[item, x, y, label, verdict with x first, verdict with
y first, outcome]` row per pair (x < y by name; verdicts `first`, `second`, `tie` or null; the outcome as the
analysis coded it: `x_wins`, `y_wins`, `tie`, `flip_first`, ..., `incomplete`), which `swapjudge card --compare`
pairs cards on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from swapjudge.core.display import Displayable
from swapjudge.reading.codes import Outcome
from swapjudge.reading.pairs import MISSING, PairTable

if TYPE_CHECKING:
    from swapjudge.core.analysis import JudgeAnalysis
    from swapjudge.probes.agreement import JudgeAgreement
    from swapjudge.probes.length import LengthProbe
    from swapjudge.probes.repeat import RepeatStability

CARD_KIND = "judge_card"
VERDICT_NAMES = ("first", "second", "tie")
# A length probe is shown where at least this many complete pairs have answers whose lengths differ by more than
# the probe's threshold: below it the slope and the prefer-longer share rest on a handful of pairs.
MIN_LENGTH_APART = 10


@dataclass(frozen=True)
class SubsetInfo:
    """Where a subset's pairs come from and what its label means (None for a user's own suite)."""

    name: str
    pair_set: str  # what the pairs are drawn from: cards with the same pair_set judged the same kind of pairs
    source: str | None = None
    licence: str | None = None
    label_meaning: str | None = None
    source_pairs: int | None = None  # pairs in the source set (the suite may hold a sample of them)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "pair_set": self.pair_set, "source": self.source, "licence": self.licence,
                "label_meaning": self.label_meaning, "source_pairs": self.source_pairs}


def per_pair_rows(pairs: PairTable) -> list[list[Any]]:
    """One row per pair: item, x, y, label, the verdict of the call with x in slot 1 and of the one with y in slot 1,
    and the pair's outcome as the analysis coded it."""
    f = pairs.frame

    def name(code: int) -> str | None:
        return None if code == MISSING else VERDICT_NAMES[int(code)]

    columns = (f.get_column("item").cast(str).to_list(), f.get_column("x").to_list(), f.get_column("y").to_list(),
               f.get_column("label").to_list(), np.asarray(pairs.vx).tolist(), np.asarray(pairs.vy).tolist(),
               np.asarray(pairs.outcome).tolist())
    return [[str(item), str(x), str(y), None if label is None else str(label), name(a), name(b),
             Outcome(int(o)).name.lower()] for item, x, y, label, a, b, o in zip(*columns, strict=True)]


def length_note(probe: LengthProbe | None) -> str | None:
    """Why a subset shows no length probe (None when it shows one)."""
    if probe is None:
        return "no answer texts for a length probe"
    apart = probe.prefer_longer.n + probe.prefer_longer_splits
    if apart < MIN_LENGTH_APART:
        return (f"no length probe: {apart} complete pair(s) have answers whose lengths differ by more than "
                f"{probe.threshold} {probe.unit.value} (at least {MIN_LENGTH_APART} needed)")
    return None


@dataclass(frozen=True)
class SubsetCard:
    """One subset: the analysis (`analyze` on the subset's records), agreement with the labels, the length probe
    where lengths vary, and each pair's verdicts."""

    info: SubsetInfo
    analysis: JudgeAnalysis
    agreement: JudgeAgreement | None
    length: LengthProbe | None
    per_pair: tuple[tuple[Any, ...], ...] = ()

    @property
    def length_shown(self) -> LengthProbe | None:
        return self.length if length_note(self.length) is None else None

    def to_dict(self) -> dict[str, Any]:
        a = self.analysis.to_dict()
        return {
            **self.info.to_dict(),
            **{key: a[key] for key in ("pairs", "outcomes", "consistency", "flip_direction", "accuracy", "verdicts",
                                       "gate", "identical", "notes")},
            "agreement": None if self.agreement is None else self.agreement.to_dict(),
            "length": None if self.length_shown is None else self.length_shown.to_dict(),
            "length_note": length_note(self.length),
            "per_pair": [list(row) for row in self.per_pair],
        }


@dataclass(frozen=True)
class RepeatCheck:
    """Repeat stability on a small seeded sample of the suite's pairs: their calls made again, in the same order."""

    pairs: int
    items: tuple[str, ...]
    stability: RepeatStability | None
    failed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"pairs": self.pairs, "items": list(self.items), "failed_calls": self.failed,
                "stability": None if self.stability is None else self.stability.to_dict()}


@dataclass(frozen=True)
class JudgeCard(Displayable):
    """The card: one `SubsetCard` per subset, the whole suite, repeat stability, the protocol, and the reference
    cards set beside it (`comparison`, from `drift.card_compare`)."""

    judge: str
    suite: Mapping[str, Any]
    subsets: tuple[SubsetCard, ...]
    overall: SubsetCard
    repeat: RepeatCheck | None
    protocol: Mapping[str, Any]
    comparison: Any = None  # drift.card_compare.CardComparison (typed loosely: probes sit below drift)
    notes: tuple[str, ...] = field(default_factory=tuple)
    attacks: Any = None  # probes.attacks.AttackProbe, when the card was asked for attacks

    @property
    def passed(self) -> bool:
        return self.overall.analysis.gate.passed

    def to_dict(self) -> dict[str, Any]:
        comparison = None if self.comparison is None else self.comparison.to_dict()
        return {
            "kind": CARD_KIND,
            "judge": self.judge,
            "suite": dict(self.suite),
            "subsets": [s.to_dict() for s in self.subsets],
            "overall": self.overall.to_dict(),
            "repeat": None if self.repeat is None else self.repeat.to_dict(),
            "protocol": dict(self.protocol),
            "references": [] if comparison is None else comparison["references"],
            "differences": [] if comparison is None else comparison["differences"],
            "tiers": [] if comparison is None else comparison["tiers"],
            "notes": list(self.notes),
            **({} if self.attacks is None else {"attacks": self.attacks.to_dict()}),
        }


def subset_names(cards: Sequence[Mapping[str, Any]]) -> list[str]:
    """Subset names in the order the cards first list them."""
    seen: dict[str, None] = {}
    for card in cards:
        for s in card.get("subsets") or []:
            seen.setdefault(str(s["name"]), None)
    return list(seen)


# ---- reference cards from published counts -------------------------------------------------------------------

def published_count(text: str) -> tuple[int, int]:
    """(k, n) from a published "k / n = p%" figure."""
    head = text.split("=", 1)[0]
    k, n = (int(part) for part in head.split("/"))
    return k, n


def counts_subset(name: str, *, consistent: int, pairs: int, right_both: int | None = None,
                  by_order: Mapping[str, float] | None = None, confidence: float = 0.95,
                  info: SubsetInfo | None = None) -> dict[str, Any]:
    """A card's subset object from published counts alone: swap-consistency and order-controlled accuracy with
    Wilson intervals over pairs (each pair independent: the sets hold one pair per item); what the counts do not
    say (flip direction, accuracy with the better answer in each slot) is null."""
    from swapjudge.core.stats import wilson
    from swapjudge.core.swap import consistency

    accuracy = None
    if right_both is not None:
        w = wilson(right_both, pairs, confidence)
        accuracy = {"pairs": pairs, "decided_pairs": pairs, "better_first": None, "better_second": None,
                    "both": w.rate, "consistent": right_both / consistent if consistent else None,
                    "intervals": {"both": {"low": w.low, "high": w.high}},
                    "by_call_order": dict(by_order or {}), "independent": "pairs", "clusters": pairs,
                    "design_effect": 1.0}
    base = (info or SubsetInfo(name, f"llmbar/{name}")).to_dict()
    return {**base, "pairs": {"total": pairs, "complete": pairs, "incomplete": None},
            "consistency": consistency(consistent, pairs, confidence).to_dict(), "flip_direction": None,
            "accuracy": accuracy, "per_pair": []}


_POSITION = {("1", "x"): "first", ("2", "x"): "second", ("1", "y"): "second", ("2", "y"): "first"}
_OUTCOME = {"11": "x_wins", "22": "y_wins", "12": "flip_first", "21": "flip_second"}


def published_pairs(subset: str, entries: Sequence[str]) -> list[list[Any]]:
    """Per-pair rows from LLMBar's published winners (`"L:FT"`: the label, the winner with output_1 shown first and
    with output_2 shown first, 1 or 2 each): x = output_1, y = output_2, so the first winner is the x-first call's."""
    rows = []
    for index, entry in enumerate(entries):
        label, winners = entry.split(":")
        first, second = winners[0], winners[1]
        rows.append([f"{subset}#{index}", "output_1", "output_2", f"output_{label}", _POSITION[(first, "x")],
                     _POSITION[(second, "y")], _OUTCOME[first + second]])
    return rows


def llmbar_reference_cards(published: Mapping[str, Any], confidence: float = 0.95) -> list[dict[str, Any]]:
    """One reference card per LLMBar evaluator, from its published statistics files: `equal` (the same output
    chosen in both orders) is swap-consistency, `correct_both` order-controlled accuracy, `correct_False` /
    `correct_True` the accuracy with output_1 / output_2 shown first (the published figures, over each whole set)."""
    cards = []
    for judge, entries in published["evaluators"].items():
        subsets = []
        for entry in entries:
            stats = entry["statistics"]
            consistent, n = published_count(stats["equal"])
            both, _ = published_count(stats["correct_both"])
            first, _ = published_count(stats["correct_False"])
            second, _ = published_count(stats["correct_True"])
            info = SubsetInfo(entry["subset"], f"llmbar/{entry['subset']}", f"{published['source']}: {entry['file']}",
                              published["licence"], None, n)
            subset = counts_subset(entry["subset"], consistent=consistent, pairs=n, right_both=both,
                                   by_order={"output_1_first": first / n, "output_2_first": second / n},
                                   confidence=confidence, info=info)
            subset["published"] = dict(stats)
            if entry.get("per_pair"):
                subset["per_pair"] = published_pairs(entry["subset"], entry["per_pair"]["pairs"])
                subset["per_pair_source"] = f"{published['source']}: {entry['per_pair']['file']}"
            subsets.append(subset)
        cards.append({"kind": "reference_card", "judge": f"{judge} Vanilla", "source": "LLMBar",
                      "method": published["method"], "subsets": subsets,
                      "note": "published counts over each whole set; the card's own pairs are a sample of the same "
                              "set, so the two are compared as independent samples"})
    return cards
