"""How few items stand between a ranking and another top system (`rank --fragility`).

- **drop**: the fewest items whose removal puts another system on top;
- **flip**: the fewest items whose comparisons of the top system, turned into its losses, do the same.

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

CHALLENGERS = 5  # the systems closest to the top whose gaps are searched
MAX_REFITS = 400  # refits, per challenger, that the confirmation may grow the set by
TOLERANCE = 1e-9  # a system is above the top only by more than this (a tie in the fit is no change of the top)


def overtaker(scores: np.ndarray, top: int) -> int | None:
    """The system now strictly above `top` (the highest one), or None."""
    best = int(np.argmax(scores))
    return best if best != top and scores[best] > scores[top] + TOLERANCE else None


@dataclass(frozen=True)
class TopChange:
    """The items found that put another system on top, confirmed by refitting."""

    kind: str  # drop | flip
    items: int | None  # None: no set found within the refits allowed
    total: int
    ids: tuple[str, ...]
    top: str
    to: str | None  # the new top system
    predicted: int | None  # the items the summed one-item effects said were enough
    refits: int
    gap: float  # the top's lead over the challenger it loses to (log-strength)
    method: str
    exact: bool = False
    confirmed: bool | None = None

    @property
    def share(self) -> float | None:
        return None if self.items is None or not self.total else self.items / self.total

    @property
    def statement(self) -> str:
        if self.items is None:
            how = "removed" if self.kind == "drop" else "with the top system's comparisons turned into losses"
            return (f"no set of items found ({how}, {self.refits:,} refits) puts another system above {self.top}")
        assert self.share is not None
        how = "dropped" if self.kind == "drop" else f"with {self.top}'s comparisons in them turned into its losses"
        return (f"{self.items:,} of {self.total:,} items ({percent(self.share)}) stand between {self.top} and "
                f"{self.to} on top: {how}, {self.to} ranks first (found by the influence approximation and "
                f"confirmed by refitting; not proven the fewest)")

    def to_dict(self) -> dict[str, Any]:
        return {"items": self.items, "share": self.share, "ids": list(self.ids), "top": self.top, "to": self.to,
                "predicted": self.predicted, "refits": self.refits, "gap": self.gap, "exact": self.exact,
                "approximate": True, "method": self.method, "confirmed": self.confirmed,
                "statement": self.statement}


@dataclass(frozen=True)
class RankFragility:
    """Drop and flip for the top of a ranking, over items (an item's comparisons move together)."""

    top: str
    items: int
    drop: TopChange
    flip: TopChange
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"top": self.top, "items": self.items, "independent": "items", "drop": self.drop.to_dict(),
                "flip": self.flip.to_dict(), "splits_worst_case": None, "notes": list(self.notes)}


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


def top_fragility(data: Comparisons, model: Model | str = Model.rao_kupper, *,
                  item_names: Sequence[str] | None = None, ridge: float = DEFAULT_RIDGE,
                  challengers: int = CHALLENGERS, max_refits: int = MAX_REFITS) -> RankFragility:
    """Drop and flip for the top system of the point fit of `data` (`item_names`: each item index's id)."""
    model = Model(model)
    fitter = _Fitter(data, model, ridge)
    base = fitter.point.scores
    top = int(np.argmax(base))
    n_items = fitter.by_item.shape[1]
    names = list(item_names) if item_names is not None else [str(i) for i in range(n_items)]
    flipped = flipped_against(data, top)
    by_item_flip = item_matrix(flipped, comparison_cells(flipped)).tocsc()
    order = np.argsort(-base)
    rivals = [int(j) for j in order[1:1 + challengers]]
    counts = fitter.cells.counts

    def change(kind: str) -> TopChange:
        start = fitter.refits
        moved = by_item_flip - fitter.by_item if kind == "flip" else -fitter.by_item
        touched = np.flatnonzero(np.asarray(abs(moved).sum(axis=0)).reshape(-1) > 0)
        effects = np.zeros((n_items, base.size))
        for i in touched:  # one refit per item: its effect alone
            effects[i] = fitter.scores(counts + moved[:, [i]].toarray().reshape(-1)) - base
        best: TopChange | None = None
        for j in rivals:
            gap = float(base[top] - base[j])
            closing = effects[:, top] - effects[:, j]
            ranked = touched[np.argsort(closing[touched], kind="stable")]
            summed = gap + np.cumsum(closing[ranked])
            hit = np.flatnonzero(summed <= 0)
            predicted = int(hit[0]) + 1 if hit.size else None
            k = predicted if predicted is not None else max(1, int(np.sum(closing[ranked] < 0)))
            k = min(k, max(1, ranked.size - 1 if kind == "drop" else ranked.size))
            found = None
            tries = 0
            while k <= ranked.size and tries < max_refits and (best is None or best.items is None or k < best.items):
                if kind == "drop" and k >= n_items:
                    break
                scores = fitter.scores(counts + _column_sum(moved, ranked[:k]))
                tries += 1
                if overtaker(scores, top) is not None:
                    found = (k, int(np.argmax(scores)))
                    break
                k += 1
            while found is not None and found[0] > 1:  # a shorter prefix of the same order may do too
                scores = fitter.scores(counts + _column_sum(moved, ranked[:found[0] - 1]))
                if overtaker(scores, top) is None:
                    break
                found = (found[0] - 1, int(np.argmax(scores)))
            if found is not None:
                chosen = sorted(int(i) for i in ranked[:found[0]])
                candidate = TopChange(kind, found[0], n_items, tuple(names[i] for i in chosen), data.systems[top],
                                      data.systems[found[1]], predicted, 0, gap, _METHOD, confirmed=True)
                if best is None or best.items is None or candidate.items < best.items:  # type: ignore[operator]
                    best = candidate
        refits = fitter.refits - start
        if best is None:
            return TopChange(kind, None, n_items, (), data.systems[top], None, None, refits,
                             float(base[top] - base[rivals[0]]) if rivals else 0.0, _METHOD)
        return TopChange(best.kind, best.items, best.total, best.ids, best.top, best.to, best.predicted, refits,
                         best.gap, best.method, confirmed=True)

    drop = change("drop")
    flip = change("flip")
    notes = ("approximate: each item's effect measured alone and effects added (influence); every set reported "
             "is confirmed by refitting without it; the consistency gate is not reapplied to the reduced data",)
    return RankFragility(data.systems[top], n_items, drop, flip, notes)


_METHOD = ("influence: each item's effect on the top's lead over the nearest systems, by a one-item refit, summed "
           "over the items with the largest effects; confirmed (and grown) by refitting")
