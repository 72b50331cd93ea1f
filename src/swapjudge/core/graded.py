"""Graded verdicts under a swap: what the five levels (A>>B, A>B, A=B, B>A, B>>A) say about position bias.

A graded call is its positional verdict plus its strength (1 slightly, 2 much; docs/records.md), read here as one
of five levels in slot terms: level 0 = slot 1 much better, 1 = slot 1 slightly better, 2 = tie, 3 = slot 2
slightly better, 4 = slot 2 much better. A pair is graded when both its calls have a level (a verdict naming a
slot without a strength has none). Everything here is over graded pairs, each pair one observation, the
intervals clustered by item as the direction analysis' are.

- strength consistency: both calls name the same identity with the same strength, or both say tie;
- strong flips (both calls "much better" for the same slot), weak flips (both "slightly"), mixed flips (one of
  each), each with the flip-direction test of core.swap;
- the 5x5 cross-table of the two calls' levels;
- the graded score of a system: each call's score for it (1, 0.75, 0.5, 0.25, 0 from its level), averaged over
  the two orders, so the slot cancels as in the half-credit rate;
- arena-hard-auto's convention, for comparison only: every call its own battle, a strong verdict three battles,
  the orders never reconciled, and an interval that treats every battle as independent.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from swapjudge.core.stats import Independence, MeanInterval, mean_interval, proportion_interval
from swapjudge.core.swap import FlipDirection, flip_direction_of_pairs
from swapjudge.reading.codes import FIRST, SECOND, TIE, Outcome

if TYPE_CHECKING:
    import numpy as np

LEVELS = ("A>>B", "A>B", "A=B", "B>A", "B>>A")  # slot terms: A is the answer in slot 1
NO_LEVEL = -1
ARENA_HARD_WEIGHT = 3  # arena-hard-auto's show_result: a strong verdict is this many battles
GRADED_DEFINITION = ("each call's score for the system (much better 1, slightly better 0.75, tie 0.5, slightly "
                     "worse 0.25, much worse 0) averaged over the pair's two orders; the interval treats each item "
                     "(its pairs) as one unit")
ARENA_HARD_CONVENTION = ("arena-hard-auto's convention: every call is its own battle, a 'much better' verdict "
                         "counts as 3 battles, a tie as half a win, the two orders never reconciled; the interval "
                         "treats every battle as independent (as its bootstrap over battles does), so it is narrower "
                         "than the data support")


def levels(verdicts: np.ndarray, strengths: np.ndarray) -> np.ndarray:
    """Each call's level (0..4, LEVELS order) from its verdict code and strength (0 or negative: none);
    NO_LEVEL for a missing verdict or a verdict naming a slot without a strength."""
    import numpy as np

    v, s = np.asarray(verdicts), np.asarray(strengths)
    out = np.full(v.shape, NO_LEVEL, dtype=np.int8)
    out[(v == FIRST) & (s == 2)] = 0
    out[(v == FIRST) & (s == 1)] = 1
    out[v == TIE] = 2
    out[(v == SECOND) & (s == 1)] = 3
    out[(v == SECOND) & (s == 2)] = 4
    return out


def slot_one_score(level: np.ndarray) -> np.ndarray:
    """The graded score of the answer in slot 1 for each level: 1, 0.75, 0.5, 0.25, 0."""
    import numpy as np

    return (4 - np.asarray(level, dtype=float)) / 4


def graded_scores(level_a_first: np.ndarray, level_b_first: np.ndarray) -> np.ndarray:
    """System a's graded score per pair, averaged over the two orders (`level_a_first`: the level of the call
    with a in slot 1, `level_b_first`: with b in slot 1); NaN where the pair is not graded."""
    import numpy as np

    la, lb = np.asarray(level_a_first), np.asarray(level_b_first)
    score = (slot_one_score(la) + (1 - slot_one_score(lb))) / 2
    return np.where((la == NO_LEVEL) | (lb == NO_LEVEL), np.nan, score)


def arena_hard_battles(level_a_first: np.ndarray, level_b_first: np.ndarray,
                       weight: int = ARENA_HARD_WEIGHT) -> tuple[np.ndarray, np.ndarray]:
    """System a's battles under arena-hard-auto's convention: each graded call on its own (a call whose twin
    failed still counts), its score for a (1 win, 1/2 tie, 0 loss) and its number of battles (`weight` for a
    strong verdict, 1 otherwise). Returns (scores, battles) per call."""
    import numpy as np

    calls = []
    for level, a_in_slot_one in ((np.asarray(level_a_first), True), (np.asarray(level_b_first), False)):
        level = level[level != NO_LEVEL]
        slot_one = np.where(level < 2, 1.0, np.where(level == 2, 0.5, 0.0))
        calls.append((slot_one if a_in_slot_one else 1 - slot_one,
                      np.where((level == 0) | (level == 4), weight, 1)))
    return (np.concatenate([calls[0][0], calls[1][0]]), np.concatenate([calls[0][1], calls[1][1]]))


def arena_hard_interval(level_a_first: np.ndarray, level_b_first: np.ndarray, confidence: float = 0.95,
                        weight: int = ARENA_HARD_WEIGHT) -> tuple[MeanInterval, int]:
    """arena-hard's score for a (its battles' mean) with the interval its convention implies (every battle
    independent) and the number of battles."""
    import numpy as np

    scores, battles = arena_hard_battles(level_a_first, level_b_first, weight)
    expanded = np.repeat(scores, battles)
    m = mean_interval(expanded, confidence)
    return dataclasses.replace(m, independence=Independence("battles", int(expanded.size), 1.0)), int(expanded.size)


@dataclass(frozen=True)
class StrengthConsistency:
    """Graded pairs whose two calls agree in direction and in strength (a tie agrees with a tie), with a
    Wilson interval clustered by item (pairs judged on one item move together)."""

    consistent: int
    pairs: int
    rate: float | None
    low: float | None
    high: float | None
    confidence: float
    method: str
    effective_n: float | None
    independence: Independence

    def to_dict(self) -> dict[str, Any]:
        return {"rate": self.rate, "low": self.low, "high": self.high, "consistent": self.consistent,
                "pairs": self.pairs, "confidence": self.confidence, "method": self.method,
                "effective_n": self.effective_n, **self.independence.to_dict()}


@dataclass(frozen=True)
class GradedCrossTable:
    """Graded pairs by (level with `a` in slot 1, level with `b` in slot 1), both in slot terms (LEVELS).
    A consistent strong win of a is (A>>B, B>>A); a strong flip toward slot 1 is (A>>B, A>>B)."""

    a: str
    b: str
    counts: tuple[tuple[int, ...], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"rows": f"level with {self.a} in slot 1", "columns": f"level with {self.b} in slot 1",
                "labels": list(LEVELS), "counts": [list(r) for r in self.counts]}


def graded_cross_table(a: str, b: str, level_a_first: np.ndarray, level_b_first: np.ndarray) -> GradedCrossTable:
    """Cross-tabulate the graded pairs' two levels (rows: a in slot 1, columns: b in slot 1)."""
    import numpy as np

    la, lb = np.asarray(level_a_first, dtype=np.int64), np.asarray(level_b_first, dtype=np.int64)
    keep = (la != NO_LEVEL) & (lb != NO_LEVEL)
    flat = np.bincount(la[keep] * 5 + lb[keep], minlength=25)
    return GradedCrossTable(a, b, tuple(tuple(int(v) for v in flat[r * 5:(r + 1) * 5]) for r in range(5)))


@dataclass(frozen=True)
class GradedSwap:
    """What the swap reveals about graded verdicts (see the module docstring). `pairs`: graded complete pairs;
    `ungraded`: complete pairs left out because a call naming a slot carried no strength."""

    pairs: int
    ungraded: int
    strength_consistency: StrengthConsistency
    direction_only: int  # same identity chosen in both orders, with different strengths
    strong_flips: int
    weak_flips: int
    mixed_flips: int
    flip_direction_strong: FlipDirection
    flip_direction_weak: FlipDirection
    flip_direction_mixed: FlipDirection
    cross_table: GradedCrossTable | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "pairs": self.pairs, "ungraded": self.ungraded,
            "strength_consistency": self.strength_consistency.to_dict(),
            "direction_only": self.direction_only,
            "strong_flips": self.strong_flips, "weak_flips": self.weak_flips, "mixed_flips": self.mixed_flips,
            "flip_direction": {"strong": self.flip_direction_strong.to_dict(),
                               "weak": self.flip_direction_weak.to_dict(),
                               "mixed": self.flip_direction_mixed.to_dict()},
            "cross_table": self.cross_table.to_dict() if self.cross_table else None,
        }


def graded_swap(outcome: np.ndarray, level_x_first: np.ndarray, level_y_first: np.ndarray, items: np.ndarray,
                confidence: float = 0.95, cross: GradedCrossTable | None = None) -> GradedSwap:
    """The graded swap analysis of pairs from their outcome codes (reading.pairs), the level of each order's call
    (x in slot 1, y in slot 1) and each pair's item."""
    import numpy as np

    outcome = np.asarray(outcome)
    lx, ly = np.asarray(level_x_first), np.asarray(level_y_first)
    items = np.asarray(items)
    complete = outcome != Outcome.INCOMPLETE
    graded = complete & (lx != NO_LEVEL) & (ly != NO_LEVEL)
    # x's level in the y-first call, in slot terms, is its mirror: the two agree when lx == 4 - ly
    agree = graded & (lx == 4 - ly)
    m = proportion_interval(agree[graded], confidence, items[graded])
    flips = graded & np.isin(outcome, (Outcome.FLIP_FIRST, Outcome.FLIP_SECOND))
    strong = flips & ((lx == 0) | (lx == 4)) & (lx == ly)
    weak = flips & ((lx == 1) | (lx == 3)) & (lx == ly)
    mixed = flips & ~strong & ~weak
    direction = graded & np.isin(outcome, (Outcome.X_WINS, Outcome.Y_WINS)) & ~agree

    def lean(mask: np.ndarray) -> FlipDirection:
        return flip_direction_of_pairs(outcome[mask], items[mask], confidence)

    return GradedSwap(
        pairs=int(graded.sum()), ungraded=int((complete & ~graded).sum()),
        strength_consistency=StrengthConsistency(int(agree.sum()), int(graded.sum()), m.value, m.low, m.high,
                                                 confidence, m.method, m.effective_n, m.independence),
        direction_only=int(direction.sum()),
        strong_flips=int(strong.sum()), weak_flips=int(weak.sum()), mixed_flips=int(mixed.sum()),
        flip_direction_strong=lean(strong), flip_direction_weak=lean(weak), flip_direction_mixed=lean(mixed),
        cross_table=cross,
    )
