"""The best-of-N audit, pure: each slot's pick share, the test that no slot is preferred, winner consistency over
the rotations of an item, its gate, and accuracy against labels by the slot the better answer sat in.

What is independent: items. The N calls of one item show the same answers, so every interval over calls is
clustered by item, and the consistency and the slot test are computed over items.

The slot test's null. Under "no slot is preferred" a call's pick depends on which systems are shown, not where.
When an item's calls show each of its systems equally often in each slot (a Latin square, or every permutation),
the expected number of picks of each slot is then exactly the item's calls / N, whatever the systems' strengths;
when the order was drawn at random, that holds in expectation over the draw. A plain chi-square on the slot totals
treats the calls as independent draws with probability 1/N each, which they are not: a judge that always picks
the same system puts exactly one pick in each slot of a Latin square, far less spread than a multinomial, and
the chi-square would then almost never reject. So the test is on items: each item's deviation of its slot counts
from calls / N (N - 1 of them, since they sum to 0), and Hotelling's one-sample T-squared that their mean is 0,
with its F reference on (N - 1, items - N + 1) degrees of freedom; the covariance is the items' own, so it
accounts for whatever the calls of an item share.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY
from swapjudge.core.policy import Gate
from swapjudge.core.stats import MeanInterval, Proportion, mean_interval, proportion_interval, wilson
from swapjudge.errors import ArgumentError
from swapjudge.reading.listwise import ListwiseCall


@dataclass(frozen=True)
class SlotTest:
    """Hotelling's T-squared over items that the mean slot-count deviation is 0 (see the module's docstring).
    `statistic` is the F statistic, `p_value` its upper tail; both None when too few items (fewer than N)."""

    statistic: float | None
    p_value: float | None
    df: tuple[int, int] | None
    items: int
    design: str  # "balanced": items whose calls show each system equally often in each slot; "randomized"
    method: str = "hotelling_t2_items"

    def to_dict(self) -> dict[str, Any]:
        infinite = self.statistic is not None and math.isinf(self.statistic)
        return {"statistic": None if infinite else self.statistic, "p_value": self.p_value,
                "note": "every item deviates the same way: F is infinite" if infinite else None,
                "df": None if self.df is None else list(self.df), "items": self.items, "design": self.design,
                "method": self.method}


@dataclass(frozen=True)
class WinnerConsistency:
    """Winner consistency: of the items with at least two calls, all with a usable pick, the share whose calls all
    picked the same system; Wilson interval over items (independent). `incomplete`: items left out because a
    call had no usable pick; `single`: items judged once (nothing to compare)."""

    rate: float | None
    low: float | None
    high: float | None
    consistent: int
    items: int
    incomplete: int
    single: int

    def to_dict(self) -> dict[str, Any]:
        return {"rate": self.rate, "low": self.low, "high": self.high, "consistent": self.consistent,
                "items": self.items, "incomplete": self.incomplete, "single": self.single,
                "independent": "items"}


@dataclass(frozen=True)
class ListwiseAccuracy:
    """Accuracy against `label` (the better system): `by_slot[s]` the share of calls with the better answer in
    slot s + 1 that picked it (clustered by item); `order_controlled` the mean over items of the share right,
    over items whose calls put the better answer equally often in every slot (so each slot weighs the same),
    interval over items; `all_right` the share of those items right in every call; `chance` 1 / N."""

    by_slot: tuple[MeanInterval, ...]
    order_controlled: MeanInterval
    all_right: Proportion
    chance: float
    calls: int

    def to_dict(self) -> dict[str, Any]:
        return {"by_slot": [m.to_dict() for m in self.by_slot], "order_controlled": self.order_controlled.to_dict(),
                "all_right": self.all_right.to_dict(), "chance": self.chance, "calls": self.calls}


@dataclass(frozen=True)
class ListwiseAudit:
    """One judge's best-of-N figures that need no fit (the strengths are `ranking.plackett_luce`'s)."""

    judge: str
    n_slots: int
    systems: tuple[str, ...]
    calls: int
    unparsed: int
    items: int
    slot_share: tuple[MeanInterval, ...]
    slot_test: SlotTest
    consistency: WinnerConsistency
    gate: Gate
    accuracy: ListwiseAccuracy | None
    # Why the slot figures are withheld (None: they are measured): the records do not say the order shown
    slot_audit_withheld: str | None = None

    def to_dict(self) -> dict[str, Any]:
        withheld = self.slot_audit_withheld is not None
        body = {"n_slots": self.n_slots, "systems": list(self.systems), "calls": self.calls,
                "unparsed": self.unparsed, "items": self.items,
                "slot_share": None if withheld else [m.value for m in self.slot_share],
                "slot_share_intervals": None if withheld else [m.to_dict() for m in self.slot_share],
                "slot_test": self.slot_test.to_dict(), "consistency": self.consistency.to_dict(),
                "accuracy": None if self.accuracy is None else self.accuracy.to_dict()}
        if withheld:
            body["slot_audit_withheld"] = self.slot_audit_withheld
        return body


ORDER_NOT_RECORDED = ("the records do not say in which order the judge saw the answers (`order_shown: false`): "
                      "a slot's pull cannot be measured, so no slot share, slot test, accuracy by slot or slot "
                      "effect is given, and whatever pull the order had is inside the strengths")


def _by_item(calls: Sequence[ListwiseCall]) -> dict[str, list[ListwiseCall]]:
    grouped: dict[str, list[ListwiseCall]] = defaultdict(list)
    for call in calls:
        grouped[call.item].append(call)
    return grouped


def _balanced(calls: Sequence[ListwiseCall], n: int) -> bool:
    """Whether these calls show each of their systems equally often in each slot (and at least once)."""
    if len(calls) % n:
        return False
    seen: dict[tuple[str, int], int] = defaultdict(int)
    for call in calls:
        for slot, system in enumerate(call.slots):
            seen[(system, slot)] += 1
    return len(seen) == n * n and len(set(seen.values())) == 1


def slot_test(calls: Sequence[ListwiseCall], n: int) -> SlotTest:
    """Hotelling's T-squared over items (the module's docstring says why not a chi-square on the totals). Items
    whose usable calls are balanced over the slots are used when there are any (their null mean is exactly 0);
    otherwise every item, on the assumption that the order shown was drawn at random."""
    from scipy import stats

    grouped = _by_item([c for c in calls if c.pick is not None])
    balanced = [cs for cs in grouped.values() if _balanced(cs, n)]
    design = "balanced" if balanced else "randomized"
    used = balanced if balanced else list(grouped.values())
    m = len(used)
    if m < n:
        return SlotTest(None, None, None, m, design)
    d = np.zeros((m, n))
    for i, cs in enumerate(used):
        for c in cs:
            d[i, (c.pick or 0) - 1] += 1  # every call here has a pick
        d[i] -= len(cs) / n
    d = d[:, : n - 1]  # the last slot's deviation is minus the sum of the others
    mean = d.mean(axis=0)
    cov = np.cov(d, rowvar=False, ddof=1).reshape(n - 1, n - 1)
    p = n - 1
    scale = (m - p) / (p * (m - 1))
    if not np.any(mean):
        return SlotTest(0.0, 1.0, (p, m - p), m, design)
    # a deviation outside the span of the items' covariance is the same in every item: certain, not noise
    inverse = np.linalg.pinv(cov, rcond=1e-10)
    if np.linalg.norm(cov @ inverse @ mean - mean) > 1e-9 * max(1.0, float(np.linalg.norm(mean))):
        return SlotTest(float("inf"), 0.0, (p, m - p), m, design)
    t2 = m * float(mean @ inverse @ mean)
    f = scale * t2
    return SlotTest(f, float(stats.f.sf(f, p, m - p)), (p, m - p), m, design)


def winner_consistency(calls: Sequence[ListwiseCall], confidence: float = 0.95) -> WinnerConsistency:
    """Winner consistency over items (see `WinnerConsistency`)."""
    consistent = items = incomplete = single = 0
    for cs in _by_item(calls).values():
        if len(cs) < 2:
            single += 1
            continue
        if any(c.pick is None for c in cs):
            incomplete += 1
            continue
        items += 1
        consistent += len({c.picked for c in cs}) == 1
    w = wilson(consistent, items, confidence)
    return WinnerConsistency(w.rate, w.low, w.high, consistent, items, incomplete, single)


def listwise_gate(result: WinnerConsistency, minimum: float) -> Gate:
    """The gate on winner consistency, as the pairwise gate is on swap-consistency: below it, no strengths."""
    if result.rate is None:
        return Gate(minimum, False, "winner consistency cannot be measured (no item has two or more calls, all "
                                    "with a usable pick): no strengths reported")
    uncertain = None if result.low is None or result.high is None else bool(result.low <= minimum <= result.high)
    if result.rate < minimum:
        return Gate(minimum, False, f"winner consistency {result.rate:.1%} is below the gate of {minimum:.0%}: the "
                                    "judge's pick moves with the order shown; no strengths reported", uncertain)
    return Gate(minimum, True, None, uncertain)


def accuracy(calls: Sequence[ListwiseCall], n: int, confidence: float = 0.95) -> ListwiseAccuracy | None:
    """Accuracy against labels (see `ListwiseAccuracy`); None when no call carries a label. A call without a
    usable pick counts as wrong: the judge did not name the better answer."""
    labelled = [c for c in calls if c.label is not None]
    if not labelled:
        return None
    by_slot = []
    for slot in range(n):
        here = [c for c in labelled if c.slots.index(c.label or "") == slot]
        flags = np.array([c.picked == c.label for c in here], dtype=float)
        clusters = np.array([c.item for c in here], dtype=object)
        by_slot.append(proportion_interval(flags, confidence, clusters if here else None))
    scores, right = [], 0
    for cs in _by_item(labelled).values():
        places: dict[int, int] = defaultdict(int)
        for c in cs:
            places[c.slots.index(c.label or "")] += 1
        if len(places) != n or len(set(places.values())) != 1:
            continue
        hits = [c.picked == c.label for c in cs]
        scores.append(float(np.mean(hits)))
        right += all(hits)
    order_controlled = mean_interval(np.array(scores, dtype=float), confidence)
    return ListwiseAccuracy(tuple(by_slot), order_controlled, wilson(right, len(scores), confidence), 1.0 / n,
                            len(labelled))


def audit(calls: Sequence[ListwiseCall], *, judge: str = "", min_consistency: float = DEFAULT_MIN_CONSISTENCY,
          confidence: float = 0.95) -> ListwiseAudit:
    """One judge's best-of-N audit from its calls (all of one judge)."""
    if not 0 < confidence < 1:
        raise ArgumentError(f"{{confidence}} must be between 0 and 1, got {confidence}", "confidence")
    if not 0 <= min_consistency <= 1:
        raise ArgumentError(f"{{min_consistency}} must be between 0 and 1, got {min_consistency}", "min_consistency")
    if not calls:
        raise ArgumentError("{calls} is empty: no listwise call to analyse", "calls")
    sizes = {c.n for c in calls}
    if len(sizes) != 1:
        raise ArgumentError("{calls} mix calls of " + ", ".join(str(s) for s in sorted(sizes)) +
                            " answers: analyse each N on its own", "calls")
    n = sizes.pop()
    if not all(c.order_shown for c in calls):  # the slots listed are not the order seen: nothing by slot
        agreed = winner_consistency(calls, confidence)
        right = accuracy(calls, n, confidence)
        if right is not None:
            right = replace(right, by_slot=())
        return ListwiseAudit(judge, n, tuple(sorted({s for c in calls for s in c.slots})), len(calls),
                             sum(c.pick is None for c in calls), len({c.item for c in calls}), (),
                             SlotTest(None, None, None, 0, "order not recorded"), agreed,
                             listwise_gate(agreed, min_consistency), right, ORDER_NOT_RECORDED)
    usable = [c for c in calls if c.pick is not None]
    clusters = np.array([c.item for c in usable], dtype=object)
    shares = tuple(proportion_interval(np.array([c.pick == s for c in usable], dtype=float), confidence,
                                       clusters if usable else None) for s in range(1, n + 1))
    agreed = winner_consistency(calls, confidence)
    return ListwiseAudit(judge, n, tuple(sorted({s for c in calls for s in c.slots})), len(calls),
                         len(calls) - len(usable), len({c.item for c in calls}), shares, slot_test(calls, n), agreed,
                         listwise_gate(agreed, min_consistency), accuracy(calls, n, confidence))
