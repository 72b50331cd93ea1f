"""The win rate of a cascade run over all of its pairs: what the judges settled, what people voted where they did,
and the pairs nobody settled as an explicit range from the worst case (every one lost) to the best case (every one
won). A rate over the settled pairs alone is never given: those pairs were selected by the judges' confidence, so
they are no sample of the whole.

Scores, per pair, for system a: 1 a win, 1/2 a tie (half credit), 0 a loss; NaN a pair nobody settled. The range's
ends are the means with NaN as 0 and as 1; each end has its sampling interval (items independent: pairs sharing an
item are clustered), so `low` is the lower bound of the worst case and `high` the upper bound of the best case.
Pure: arrays in, a frozen result out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from swapjudge.core.stats import MeanInterval, mean_interval


@dataclass(frozen=True)
class CascadeWinRate:
    """System `a`'s win rate against `b` over every pair of a cascade run."""

    a: str
    b: str
    pairs: int
    by_judges: int  # pairs the cascade's judges settled
    by_people: int  # pairs nobody settled but people voted on
    unsettled: int  # pairs neither settled
    worst: MeanInterval  # every unsettled pair lost
    best: MeanInterval  # every unsettled pair won

    @property
    def low(self) -> float | None:
        """The lower end of the range: the worst case's lower confidence bound."""
        return self.worst.low

    @property
    def high(self) -> float | None:
        """The upper end of the range: the best case's upper confidence bound."""
        return self.best.high

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "pairs": self.pairs, "settled_by_judges": self.by_judges,
                "settled_by_people": self.by_people, "unsettled": self.unsettled,
                "worst_case": self.worst.value, "best_case": self.best.value, "low": self.low, "high": self.high,
                "ties": "half credit", "independent": self.worst.independence.units}


def cascade_win_rate(judged: npt.ArrayLike, people: npt.ArrayLike, items: npt.ArrayLike, *, a: str, b: str,
                     confidence: float = 0.95) -> CascadeWinRate:
    """`judged`: each pair's score for `a` where a judge settled it (NaN where none did); `people`: the score
    people gave where they voted (NaN elsewhere), used only where no judge settled the pair; `items`: each pair's
    item (the clusters of its interval)."""
    judged = np.asarray(judged, dtype=np.float64)
    people = np.asarray(people, dtype=np.float64)
    items = np.asarray(items).astype(str)
    settled = ~np.isnan(judged)
    voted = ~settled & ~np.isnan(people)
    score = np.where(settled, judged, people)
    open_ = np.isnan(score)
    worst = mean_interval(np.where(open_, 0.0, score), confidence, items)
    best = mean_interval(np.where(open_, 1.0, score), confidence, items)
    return CascadeWinRate(a=a, b=b, pairs=int(judged.size), by_judges=int(settled.sum()), by_people=int(voted.sum()),
                          unsettled=int(open_.sum()), worst=worst, best=best)
