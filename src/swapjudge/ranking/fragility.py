"""How few items stand between a ranking and another top system (`rank --fragility`), or another order of its
top k systems (`rank --fragility --top-k K`).

- **drop**: the fewest items whose removal puts another system on top (changes the order of the top k: another
  system among them, or two of them the other way round);
- **flip**: the fewest items whose comparisons of the top system, turned into its losses, do the same (for the
  top k: the comparisons of the upper system of the gap that closes).

Approximate where it says so: each item's effect on the gap between the top system and each challenger is
measured by refitting without that one item (or with it flipped), warm-started from the full fit; a set's effect
is taken as the sum of its items' effects (the first-order, influence-function approximation of Broderick,
Giordano and Meager's "approximate maximum influence perturbation"). The items with the largest effects are taken
until the summed effect closes the gap; the set is then confirmed by refitting without (or with flipped) those
items, and grown one item at a time, refitting each time, until the top really changes. The answer reported is
the confirmed one: a set that changes the top, found by this search, not proven the fewest. The consistency gate
is not reapplied to the reduced data (the ranking's top, the gate aside).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from swapjudge.core.choices import Model
from swapjudge.core.display import percent
from swapjudge.ranking.bradley_terry import (
    DEFAULT_RIDGE,
    Battle,
    Comparisons,
    comparison_cells,
    item_matrix,
    solve_strengths,
)

CHALLENGERS = 5  # the systems closest to the top (to the k-th, for the top k) whose gaps are searched
MAX_REFITS = 400  # refits, per gap searched, that the confirmation may grow the set by
TOLERANCE = 1e-9  # a system is above another only by more than this (a tie in the fit is no change of the order)


def overtaker(scores: np.ndarray, top: int) -> int | None:
    """The system now strictly above `top` (the highest one), or None."""
    best = int(np.argmax(scores))
    return best if best != top and scores[best] > scores[top] + TOLERANCE else None


def order_changed(scores: np.ndarray, order: Sequence[int]) -> bool:
    """Whether the top `len(order)` systems of `scores`, in order, are no longer `order`: a system below another
    of them now strictly above it, or a system outside them strictly above the last (by more than TOLERANCE)."""
    ranked = list(order)
    for upper, lower in itertools.pairwise(ranked):
        if scores[lower] > scores[upper] + TOLERANCE:
            return True
    outside = np.ones(scores.size, dtype=bool)
    outside[ranked] = False
    return bool(outside.any() and scores[outside].max() > scores[ranked[-1]] + TOLERANCE)


def top_order(scores: np.ndarray, k: int) -> list[int]:
    """The indices of the `k` highest scores, highest first (ties by index)."""
    return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]


@dataclass(frozen=True)
class TopChange:
    """The items found that change the top (the order of the top k), confirmed by refitting."""

    kind: str  # drop | flip
    items: int | None  # None: no set found within the refits allowed
    total: int
    ids: tuple[str, ...]
    top: str
    to: str | None  # the new top system
    predicted: int | None  # the items the summed one-item effects said were enough
    refits: int
    gap: float  # the lead that closed (log-strength): the top's over the system it loses to, for the top k the
    # gap between the two systems whose order turned
    method: str
    exact: bool = False
    confirmed: bool | None = None
    order: tuple[str, ...] = ()  # the top k, in order (top_k > 1 only)
    to_order: tuple[str, ...] | None = None  # the top k after the change, in order (top_k > 1 only)
    turned: str | None = None  # flip, top_k > 1: the system whose comparisons were turned into its losses

    @property
    def share(self) -> float | None:
        return None if self.items is None or not self.total else self.items / self.total

    @property
    def statement(self) -> str:
        if len(self.order) > 1:
            return self._order_statement()
        if self.items is None:
            how = "removed" if self.kind == "drop" else "with the top system's comparisons turned into losses"
            return (f"no set of items found ({how}, {self.refits:,} refits) puts another system above {self.top}")
        assert self.share is not None
        how = "dropped" if self.kind == "drop" else f"with {self.top}'s comparisons in them turned into its losses"
        return (f"{self.items:,} of {self.total:,} items ({percent(self.share)}) stand between {self.top} and "
                f"{self.to} on top: {how}, {self.to} ranks first (found by the influence approximation and "
                f"confirmed by refitting; not proven the fewest)")

    def _order_statement(self) -> str:
        k = len(self.order)
        shown = " > ".join(self.order)
        if self.items is None or self.to_order is None:
            how = "removed" if self.kind == "drop" else "with a top system's comparisons turned into its losses"
            return f"no set of items found ({how}, {self.refits:,} refits) changes the top {k} ({shown})"
        assert self.share is not None
        how = "dropped" if self.kind == "drop" else f"with {self.turned}'s comparisons in them turned into its losses"
        return (f"{self.items:,} of {self.total:,} items ({percent(self.share)}) stand between the order of the top "
                f"{k} ({shown}) and another: {how}, the top {k} becomes {' > '.join(self.to_order)} (found by the "
                "influence approximation and confirmed by refitting; not proven the fewest)")

    def to_dict(self) -> dict[str, Any]:
        out = {"items": self.items, "share": self.share, "ids": list(self.ids), "top": self.top, "to": self.to,
               "predicted": self.predicted, "refits": self.refits, "gap": self.gap, "exact": self.exact,
               "approximate": True, "method": self.method, "confirmed": self.confirmed,
               "statement": self.statement}
        if len(self.order) > 1:
            out.update({"order": list(self.order), "to_order": None if self.to_order is None else list(self.to_order),
                        "turned": self.turned})
        return out


@dataclass(frozen=True)
class RankFragility:
    """Drop and flip for the top of a ranking (the order of its top k), over items (an item's comparisons move
    together)."""

    top: str
    items: int
    drop: TopChange
    flip: TopChange
    notes: tuple[str, ...] = field(default_factory=tuple)
    order: tuple[str, ...] = ()  # the top k, in order (top_k > 1 only)

    @property
    def top_k(self) -> int:
        return max(1, len(self.order))

    def to_dict(self) -> dict[str, Any]:
        out = {"top": self.top, "items": self.items, "independent": "items", "drop": self.drop.to_dict(),
               "flip": self.flip.to_dict(), "splits_worst_case": None, "notes": list(self.notes)}
        if len(self.order) > 1:
            out.update({"top_k": self.top_k, "order": list(self.order)})
        return out


def flipped_against(data: Comparisons, system: int) -> Comparisons:
    """Every comparison of `system` turned into its loss (the others as they are)."""
    outcome = np.asarray(data.outcome).copy()
    outcome[np.asarray(data.left) == system] = Battle.RIGHT
    outcome[np.asarray(data.right) == system] = Battle.LEFT
    return Comparisons(systems=data.systems, item=data.item, left=data.left, right=data.right, outcome=outcome,
                       pair=data.pair, weight=data.weight, count=data.count, system_pairs=data.system_pairs)


class _Fitter:
    def __init__(self, data: Comparisons, model: Model, ridge: float) -> None:
        self.model, self.ridge = model, ridge
        self.cells = comparison_cells(data)
        self.by_item = item_matrix(data, self.cells).tocsc()
        self.point = solve_strengths(model, self.cells.lo, self.cells.hi, self.cells.n_systems, self.cells.counts,
                                     ridge)
        self.refits = 0

    def scores(self, counts: np.ndarray) -> np.ndarray:
        self.refits += 1
        counts = np.maximum(counts, 0.0)  # float sums of removed counts: never below zero
        return solve_strengths(self.model, self.cells.lo, self.cells.hi, self.cells.n_systems, counts, self.ridge,
                      start=self.point).scores


def _column_sum(matrix: Any, chosen: np.ndarray) -> np.ndarray:
    if chosen.size == 0:
        return np.zeros(matrix.shape[0])
    return np.asarray(matrix[:, chosen].sum(axis=1)).reshape(-1)


def gaps_searched(order: Sequence[int], ranked: Sequence[int], challengers: int) -> list[tuple[int, int]]:
    """The (upper, lower) pairs whose gap is searched: each of the top k above the next, and the k-th above each
    of the `challengers` systems nearest below it (for k = 1: the top above each of them)."""
    k = len(order)
    inside = [(int(order[i]), int(order[i + 1])) for i in range(k - 1)]
    return inside + [(int(order[-1]), int(j)) for j in list(ranked)[k:k + challengers]]


def top_fragility(data: Comparisons, model: Model | str = Model.rao_kupper, *,
                  item_names: Sequence[str] | None = None, ridge: float = DEFAULT_RIDGE,
                  challengers: int = CHALLENGERS, max_refits: int = MAX_REFITS, top_k: int = 1) -> RankFragility:
    """Drop and flip for the top system of the point fit of `data` (`item_names`: each item index's id); with
    `top_k` > 1, for the order of its top k systems: the fewest items found whose removal (drop), or whose
    comparisons of one of the top k turned into its losses (flip), change which systems are the top k or their
    order."""
    model = Model(model)
    fitter = _Fitter(data, model, ridge)
    base = fitter.point.scores
    ranked = [int(i) for i in np.argsort(-base, kind="stable")]
    k = max(1, min(int(top_k), len(ranked)))
    order = ranked[:k]
    top = order[0]
    n_items = fitter.by_item.shape[1]
    names = list(item_names) if item_names is not None else [str(i) for i in range(n_items)]
    pairs = gaps_searched(order, ranked, challengers)
    counts = fitter.cells.counts
    single = k == 1

    def changed(scores: np.ndarray) -> bool:
        return overtaker(scores, top) is not None if single else order_changed(scores, order)

    moves: dict[tuple[str, int], tuple[Any, np.ndarray, np.ndarray]] = {}

    def moved_by(kind: str, upper: int) -> tuple[Any, np.ndarray, np.ndarray]:
        """The change of every cell's counts per item, the items it touches and each one's effect alone."""
        key = (kind, upper if kind == "flip" else -1)
        if key not in moves:
            if kind == "flip":
                flipped = flipped_against(data, upper)
                moved = item_matrix(flipped, comparison_cells(flipped)).tocsc() - fitter.by_item
            else:
                moved = -fitter.by_item
            touched = np.flatnonzero(np.asarray(abs(moved).sum(axis=0)).reshape(-1) > 0)
            effects = np.zeros((n_items, base.size))
            for i in touched:  # one refit per item: its effect alone
                effects[i] = fitter.scores(counts + moved[:, [i]].toarray().reshape(-1)) - base
            moves[key] = (moved, touched, effects)
        return moves[key]

    def change(kind: str) -> TopChange:
        start = fitter.refits
        best: tuple[int, list[int], np.ndarray, int | None, float, int] | None = None
        for upper, lower in pairs:
            moved, touched, effects = moved_by(kind, upper)
            gap = float(base[upper] - base[lower])
            closing = effects[:, upper] - effects[:, lower]
            by_effect = touched[np.argsort(closing[touched], kind="stable")]
            summed = gap + np.cumsum(closing[by_effect])
            hit = np.flatnonzero(summed <= 0)
            predicted = int(hit[0]) + 1 if hit.size else None
            size = predicted if predicted is not None else max(1, int(np.sum(closing[by_effect] < 0)))
            size = min(size, max(1, by_effect.size - 1 if kind == "drop" else by_effect.size))
            found: tuple[int, np.ndarray] | None = None
            tries = 0
            while size <= by_effect.size and tries < max_refits and (best is None or size < best[0]):
                if kind == "drop" and size >= n_items:
                    break
                scores = fitter.scores(counts + _column_sum(moved, by_effect[:size]))
                tries += 1
                if changed(scores):
                    found = (size, scores)
                    break
                size += 1
            while found is not None and found[0] > 1:  # a shorter prefix of the same order may do too
                scores = fitter.scores(counts + _column_sum(moved, by_effect[:found[0] - 1]))
                if not changed(scores):
                    break
                found = (found[0] - 1, scores)
            if found is not None and (best is None or found[0] < best[0]):
                chosen = sorted(int(i) for i in by_effect[:found[0]])
                best = (found[0], chosen, found[1], predicted, gap, upper)
        refits = fitter.refits - start
        shown = tuple(data.systems[i] for i in order) if not single else ()
        if best is None:
            lead = float(base[pairs[0][0]] - base[pairs[0][1]]) if pairs else 0.0
            return TopChange(kind, None, n_items, (), data.systems[top], None, None, refits, lead, _METHOD,
                             order=shown)
        size, chosen, scores, predicted, gap, upper = best
        after = top_order(scores, k)
        return TopChange(kind, size, n_items, tuple(names[i] for i in chosen), data.systems[top],
                         data.systems[after[0]], predicted, refits, gap, _METHOD, confirmed=True, order=shown,
                         to_order=tuple(data.systems[i] for i in after) if not single else None,
                         turned=data.systems[upper] if kind == "flip" and not single else None)

    drop = change("drop")
    flip = change("flip")
    notes: tuple[str, ...]
    if single:
        notes = ("approximate: each item's effect measured alone and effects added (influence); every set reported "
                 "is confirmed by refitting without it; the consistency gate is not reapplied to the reduced data",)
        return RankFragility(data.systems[top], n_items, drop, flip, notes)
    notes = (f"approximate: the order of the top {k} is searched through the gap of each of them over the next and "
             f"of the last of them over the {challengers} systems nearest below it; each item's effect on a gap "
             "measured alone and effects added (influence); every set reported is confirmed by refitting without (or "
             "with flipped) it; the consistency gate is not reapplied to the reduced data",
             f"flip, for the top {k}: the comparisons of the upper system of the gap that closed (named in `turned`) "
             "turned into its losses")
    return RankFragility(data.systems[top], n_items, drop, flip, notes, order=tuple(data.systems[i] for i in order))


_METHOD = ("influence: each item's effect on the top's lead over the nearest systems, by a one-item refit, summed "
           "over the items with the largest effects; confirmed (and grown) by refitting")
