"""One score per item: the candidate's order-cancelled result under the registered tie policy, averaged over the
item's pairs (rounds, or several calls of one judge), so pairs that share an item count once.

Per pair (both orders judged, verdicts mapped to identities): a consistent win of the candidate is 1, a consistent
win of the incumbent is 0, and a split (consistent tie, flip, half-tie) is worth what the policy says:
`half_credit` 1/2; `no_credit` and `separate` 0 (separate's headline is the candidate's share of consistent
wins); `exclude` leaves the split out, so an item whose pairs are all splits has no score and is not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from swapjudge.core.choices import TiePolicy
from swapjudge.reading.codes import Outcome


@dataclass(frozen=True)
class ItemScores:
    """Items in the order they first appear, each with its score in [0, 1]; `unscored` counts the items whose
    complete pairs gave no score (exclude: every pair a split)."""

    items: tuple[str, ...]
    scores: np.ndarray
    pairs: int  # complete pairs behind the scores
    wins: int  # consistent wins of the candidate among them
    losses: int
    splits: int
    unscored: int

    @property
    def n(self) -> int:
        return len(self.items)

    @property
    def mean(self) -> float | None:
        return float(self.scores.mean()) if self.scores.size else None

    def head(self, n: int) -> ItemScores:
        """The first `n` items (the registered fixed design reads these)."""
        if n >= self.n:
            return self
        return ItemScores(self.items[:n], self.scores[:n], self.pairs, self.wins, self.losses, self.splits,
                          self.unscored)


def pair_scores(outcome: np.ndarray, candidate_is_x: np.ndarray, policy: TiePolicy | str) -> np.ndarray:
    """Each complete pair's score for the candidate under `policy` (NaN: no score, an excluded split)."""
    policy = TiePolicy(policy)
    outcome = np.asarray(outcome)
    win = np.where(candidate_is_x, outcome == Outcome.X_WINS, outcome == Outcome.Y_WINS)
    loss = np.where(candidate_is_x, outcome == Outcome.Y_WINS, outcome == Outcome.X_WINS)
    split_value = {TiePolicy.half_credit: 0.5, TiePolicy.no_credit: 0.0, TiePolicy.separate: 0.0,
                   TiePolicy.exclude: np.nan}[policy]
    return np.where(win, 1.0, np.where(loss, 0.0, split_value))


def item_scores(items: np.ndarray, outcome: np.ndarray, candidate_is_x: np.ndarray,
                policy: TiePolicy | str) -> ItemScores:
    """Item scores from complete pairs: `items` (each pair's item, in record order), `outcome` (its Outcome code,
    none INCOMPLETE), `candidate_is_x` (whether the candidate is the pair's x)."""
    items = np.asarray(items).astype(str)
    outcome = np.asarray(outcome)
    scores = pair_scores(outcome, np.asarray(candidate_is_x, dtype=bool), policy)
    win = scores == 1.0
    decided = np.isin(outcome, (Outcome.X_WINS, Outcome.Y_WINS))
    names, first, codes = np.unique(items, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # first appearance: the stream order a sequence reads
    scored = ~np.isnan(scores)
    totals = np.bincount(codes[scored], weights=scores[scored], minlength=names.size)
    counts = np.bincount(codes[scored], minlength=names.size)
    keep = order[counts[order] > 0]
    return ItemScores(
        items=tuple(str(n) for n in names[keep]),
        scores=totals[keep] / counts[keep],
        pairs=int(items.size),
        wins=int(win.sum()),
        losses=int((decided & ~win).sum()),
        splits=int((~decided).sum()),
        unscored=int(names.size - keep.size),
    )
