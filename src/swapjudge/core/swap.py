"""What the swap reveals (the counting rules of docs/records.md):
consistency, flip direction, the verdict split, the cross-table.

Pure functions of counts or outcome codes; forward and reverse are one comparison, so every rate here is over
pairs (or, for the verdict split, explicitly over calls).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from swapjudge.core.stats import (
    Independence,
    Tally,
    band,
    binomial_p,
    clustered_binomial_p,
    tally,
    tally_proportion_interval,
    wilson,
)
from swapjudge.reading.codes import FIRST, MISSING, SECOND, TIE, Outcome

if TYPE_CHECKING:  # numpy is imported where it is used, so `calc` starts without it
    import numpy as np


@dataclass(frozen=True)
class Outcomes:
    """Pair counts by outcome."""

    total: int
    complete: int
    consistent: int
    consistent_ties: int
    flips_first: int
    flips_second: int
    half_ties_first: int
    half_ties_second: int

    @property
    def incomplete(self) -> int:
        return self.total - self.complete

    @property
    def toward_first(self) -> int:
        return self.flips_first + self.half_ties_first

    @property
    def toward_second(self) -> int:
        return self.flips_second + self.half_ties_second

    def to_dict(self) -> dict[str, int]:
        return {"consistent": self.consistent, "consistent_ties": self.consistent_ties,
                "flips_first": self.flips_first, "flips_second": self.flips_second,
                "half_ties_first": self.half_ties_first, "half_ties_second": self.half_ties_second}


def count_outcomes(outcome: np.ndarray) -> Outcomes:
    """Tally outcome codes (pairs.Outcome) into the pair counts of docs/records.md."""
    import numpy as np

    tally = np.bincount(outcome.astype(np.int64), minlength=len(Outcome))
    n = {o: int(tally[o]) for o in Outcome}
    return Outcomes(
        total=int(outcome.size),
        complete=int(outcome.size) - n[Outcome.INCOMPLETE],
        consistent=n[Outcome.X_WINS] + n[Outcome.Y_WINS] + n[Outcome.TIE],
        consistent_ties=n[Outcome.TIE],
        flips_first=n[Outcome.FLIP_FIRST],
        flips_second=n[Outcome.FLIP_SECOND],
        half_ties_first=n[Outcome.HALF_TIE_FIRST],
        half_ties_second=n[Outcome.HALF_TIE_SECOND],
    )


@dataclass(frozen=True)
class Consistency:
    """Swap-consistency: consistent pairs over complete pairs, with a Wilson interval and the sensitivity band."""

    consistent: int
    pairs: int
    rate: float | None
    low: float | None
    high: float | None
    band: str | None
    confidence: float
    method: str = "wilson"
    independence: Independence | None = None
    effective_n: float | None = None

    @property
    def flip_rate(self) -> float | None:
        return None if self.rate is None else 1 - self.rate

    @property
    def flip_rate_low(self) -> float | None:
        return None if self.high is None else 1 - self.high

    @property
    def flip_rate_high(self) -> float | None:
        return None if self.low is None else 1 - self.low

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rate": self.rate, "low": self.low, "high": self.high, "band": self.band,
                               "consistent": self.consistent, "pairs": self.pairs, "confidence": self.confidence,
                               "method": self.method, "effective_n": self.effective_n}
        out.update((self.independence or Independence("pairs", self.pairs, 1.0)).to_dict())
        return out


def consistency(consistent: int, pairs: int, confidence: float = 0.95, *, flags: np.ndarray | None = None,
                items: np.ndarray | None = None) -> Consistency:
    """Swap-consistency from counts (each pair independent), or from each complete pair's consistent flag and
    its item, so that pairs judged on the same item count as one cluster (cluster_design)."""
    if not 0 <= consistent <= pairs:
        raise ValueError(f"consistent pairs ({consistent}) must be between 0 and the pairs ({pairs})")
    if flags is None and items is None:  # counts alone: proportion_interval's independent-pairs case, without numpy
        w = wilson(consistent, pairs, confidence)
        return Consistency(consistent, pairs, w.rate, w.low, w.high, band(w.rate), confidence, "wilson",
                           Independence("pairs", pairs, 1.0), None if pairs == 0 else float(pairs))
    import numpy as np

    if flags is None:
        flags = np.concatenate([np.ones(consistent), np.zeros(pairs - consistent)])
    counted = tally(np.asarray(flags, dtype=float), items)
    assert counted is not None  # 0/1 flags
    return consistency_of_tally(consistent, pairs, counted, confidence)


def consistency_of_tally(consistent: int, pairs: int, flags: Tally, confidence: float = 0.95) -> Consistency:
    """Swap-consistency from the tally of each complete pair's consistent flag by item (`reading.reduce`)."""
    m = tally_proportion_interval(flags, confidence)
    return Consistency(consistent, pairs, m.value, m.low, m.high, band(m.value), confidence, m.method,
                       m.independence, m.effective_n)


def consistency_of_pairs(outcome: np.ndarray, items: np.ndarray, confidence: float = 0.95) -> Consistency:
    """Swap-consistency of pairs from their outcome codes and items: the complete pairs, with pairs judged on the
    same item (other systems, other rounds) counted as one cluster."""
    import numpy as np

    counts = count_outcomes(outcome)
    complete = outcome != Outcome.INCOMPLETE
    return consistency(counts.consistent, counts.complete, confidence, flags=(outcome <= Outcome.TIE)[complete],
                       items=np.asarray(items)[complete])


@dataclass(frozen=True)
class FlipDirection:
    """Which slot the inconsistent pairs favour: the first-slot share among flips and half-ties, with a Wilson
    interval and an exact two-sided binomial test against 0.5 (no position preference). When several of those
    pairs share an item (other systems, other rounds), the item is the independent unit: the interval is Wilson's
    on the effective sample size and the test is scaled by the design effect (see `clustered_binomial_p`)."""

    first: int
    second: int
    first_share: float | None
    low: float | None
    high: float | None
    p_value: float | None
    level: float = 0.05  # a lean is claimed only when the test rejects at this level
    p_holm: float | None = None  # Holm-adjusted p when several judges or segments are tested at once
    independence: Independence | None = None  # what the interval and test treat as independent

    @property
    def lean(self) -> str | None:
        """"first" or "second" when the exact test (Holm-adjusted when several were tested) rejects at `level`;
        None otherwise: no clear lean."""
        p = self.p_holm if self.p_holm is not None else self.p_value
        if p is None or self.first_share is None or p >= self.level or self.first_share == 0.5:
            return None
        return "first" if self.first_share > 0.5 else "second"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"first": self.first, "second": self.second, "first_share": self.first_share,
                               "low": self.low, "high": self.high, "p_value": self.p_value, "p_holm": self.p_holm,
                               "level": self.level, "lean": self.lean}
        out.update((self.independence or Independence("pairs", self.first + self.second, 1.0)).to_dict())
        return out


def flip_direction(toward_first: int, toward_second: int, confidence: float = 0.95) -> FlipDirection:
    """From counts alone: each inconsistent pair independent."""
    n = toward_first + toward_second
    p = wilson(toward_first, n, confidence)
    return FlipDirection(toward_first, toward_second, p.rate, p.low, p.high, binomial_p(toward_first, n),
                         round(1 - confidence, 12), independence=Independence("pairs", n, 1.0))


def flip_direction_of_pairs(outcome: np.ndarray, items: np.ndarray, confidence: float = 0.95) -> FlipDirection:
    """From each pair's outcome code and item: the inconsistent pairs judged on one item count as one cluster."""
    import numpy as np

    outcome = np.asarray(outcome)
    toward_first = np.isin(outcome, (Outcome.FLIP_FIRST, Outcome.HALF_TIE_FIRST))
    inconsistent = toward_first | np.isin(outcome, (Outcome.FLIP_SECOND, Outcome.HALF_TIE_SECOND))
    k, n = int(toward_first.sum()), int(inconsistent.sum())
    counted = tally(toward_first[inconsistent].astype(float), np.asarray(items)[inconsistent] if n else None)
    assert counted is not None  # 0/1 flags
    return flip_direction_of_tally(k, n, counted, confidence)


def flip_direction_of_tally(toward_first: int, inconsistent: int, flags: Tally,
                            confidence: float = 0.95) -> FlipDirection:
    """Flip direction from the tally of each inconsistent pair's toward-first flag by item (`reading.reduce`)."""
    k, n = toward_first, inconsistent
    m = tally_proportion_interval(flags, confidence)
    return FlipDirection(k, n - k, m.value, m.low, m.high,
                         clustered_binomial_p(k, n, m.independence) if n else None, round(1 - confidence, 12),
                         independence=m.independence)


@dataclass(frozen=True)
class VerdictSplit:
    """Positional verdicts over calls: the first/second/tie split and the first-slot win rate."""

    first: int
    second: int
    tie: int
    unparsed: int
    first_slot_rate: float | None
    low: float | None
    high: float | None

    @property
    def calls(self) -> int:
        return self.first + self.second + self.tie + self.unparsed

    def to_dict(self) -> dict[str, Any]:
        return {"first": self.first, "second": self.second, "tie": self.tie, "unparsed": self.unparsed,
                "first_slot_rate": self.first_slot_rate, "low": self.low, "high": self.high}


def verdict_split(codes: np.ndarray, confidence: float = 0.95) -> VerdictSplit:
    """Split of positional verdict codes (pairs.FIRST/SECOND/TIE/MISSING) over calls."""
    import numpy as np

    first, second = int(np.sum(codes == FIRST)), int(np.sum(codes == SECOND))
    tie, unparsed = int(np.sum(codes == TIE)), int(np.sum(codes == MISSING))
    return verdict_split_of_counts(first, second, tie, unparsed, confidence)


def verdict_split_of_counts(first: int, second: int, tie: int, unparsed: int,
                            confidence: float = 0.95) -> VerdictSplit:
    """The verdict split from its four counts over calls."""
    p = wilson(first, first + second, confidence)
    return VerdictSplit(first, second, tie, unparsed, p.rate, p.low, p.high)


@dataclass(frozen=True)
class CrossTable:
    """Pairs by (verdict when `a` sat in slot 1, verdict when `b` sat in slot 1); index 0/1/2/3 =
    first/second/tie/missing. A consistent `a` win is (first, second); a flip toward slot 1 is (first, first)."""

    a: str
    b: str
    counts: tuple[tuple[int, ...], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"rows": f"verdict with {self.a} in slot 1", "columns": f"verdict with {self.b} in slot 1",
                "labels": ["first", "second", "tie", "none"], "counts": [list(r) for r in self.counts]}


def cross_table(a: str, b: str, va: np.ndarray, vb: np.ndarray) -> CrossTable:
    """Cross-tabulate each pair's two positional verdicts (va: `a` shown first, vb: `b` shown first)."""
    import numpy as np

    index = np.where(va == MISSING, 3, va).astype(np.int64) * 4 + np.where(vb == MISSING, 3, vb).astype(np.int64)
    flat = np.bincount(index, minlength=16)
    return CrossTable(a, b, tuple(tuple(int(v) for v in flat[r * 4:(r + 1) * 4]) for r in range(4)))
