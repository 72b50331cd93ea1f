"""Records reduced to counts: what every statistic of `analyze`, `rank`, `segments` and `agreement` needs,
without the rows (docs/scale.md). The same reduction runs in memory here (polars, from validated records) and
over files larger than memory in `reading.streaming` (DuckDB), and for a small, plain JSON Lines file with the
standard library in `reading.small` (so `analyze` of it starts without polars); all produce the tables below, so
the figures computed from them (`core.counted`) are the same to the last bit.

Two steps. The **pair table** has one row per pair (judge, round, item, x < y): the positional verdict of each
of its calls (`vx` of the call that showed x first, `vy` of the other; NULL when the call has no verdict,
ABSENT when there is no such call), how its label relates to it and whether its lone call is an adaptive run's
skipped swap; the identical-answer probe calls sit beside it. The **counts** of one selection (a judge, the two
compared systems, a segment) then say how many pairs of each type there are per system pair, and how many items
hold the same multiset of pair types (a *kind* of item): the clustered intervals and the item bootstrap need no
more, because items of one kind contribute alike.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from swapjudge.reading.codes import FIRST, MISSING, SECOND, TIE, VERDICT_CODES

if TYPE_CHECKING:  # the in-memory reduction loads polars when it runs: counts alone need none (reading.small)
    import polars as pl

# verdict codes of the pair table: FIRST, SECOND, TIE as everywhere, then these two
NULL = 3  # the call exists and gave no usable verdict
ABSENT = 4  # there is no call in this order
VERDICT_STATES = 5
# how a pair's label relates to its two answers
LABEL_NONE, LABEL_X, LABEL_Y, LABEL_TIE = 0, 1, 2, 3
LABEL_STATES = 4
TIE_LABEL = "tie"
# a pair type: both verdict states, the label and the skipped-swap flag, as one small integer
TYPES = VERDICT_STATES * VERDICT_STATES * LABEL_STATES * 2

_t = np.arange(TYPES)
TYPE_VX = (_t // (VERDICT_STATES * LABEL_STATES * 2)).astype(np.int64)
TYPE_VY = (_t // (LABEL_STATES * 2) % VERDICT_STATES).astype(np.int64)
TYPE_LABEL = (_t // 2 % LABEL_STATES).astype(np.int64)
TYPE_SKIPPED = (_t % 2).astype(bool)
del _t

# the compact pair table's columns (both engines write exactly these; `segment` only when asked for, the
# probabilities only when the records carry them)
PAIR_COLUMNS = ("judge", "round", "item", "x", "y", "vx", "vy", "label", "skipped", "reshow_lo", "reshow_hi")
PROBE_COLUMNS = ("judge", "system", "code", "reshow")


def pair_type(vx: Any, vy: Any, label: Any, skipped: Any) -> Any:
    """The type code of pairs (works on numbers, numpy arrays and polars expressions alike)."""
    return ((vx * VERDICT_STATES + vy) * LABEL_STATES + label) * 2 + skipped


def positional(state: np.ndarray) -> np.ndarray:
    """Verdict states as the pair table elsewhere codes them: FIRST/SECOND/TIE, MISSING for NULL and ABSENT."""
    out: np.ndarray = np.where(state >= NULL, MISSING, state).astype(np.int64)
    return out


# ---- the reduced form ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kinds:
    """Items grouped by what their pairs are: kind k holds `items[k]` items, each with `count[e]` pairs of type
    `ptype[e]` for every entry e with `kind[e] == k` (a long table of the kinds' multisets)."""

    items: np.ndarray
    kind: np.ndarray
    ptype: np.ndarray
    count: np.ndarray

    @property
    def n_items(self) -> int:
        return int(self.items.sum())

    @classmethod
    def empty(cls) -> Kinds:
        none = np.zeros(0, dtype=np.int64)
        return cls(none, none, none, none)

    @classmethod
    def from_lists(cls, types: Sequence[Sequence[int]], items: Sequence[int]) -> Kinds:
        """From each kind's sorted list of pair types (a type repeats once per pair) and its item count."""
        lengths = np.array([len(t) for t in types], dtype=np.int64)
        flat = np.fromiter((v for t in types for v in t), dtype=np.int64, count=int(lengths.sum()))
        kind = np.repeat(np.arange(len(types), dtype=np.int64), lengths)
        # a (kind, type) entry per distinct type of the kind, with its multiplicity
        key = kind * TYPES + flat
        unique, count = np.unique(key, return_counts=True)
        return cls(np.asarray(items, dtype=np.int64), unique // TYPES, unique % TYPES, count.astype(np.int64))

    def per_kind(self, per_type: np.ndarray) -> np.ndarray:
        """Sum over each kind's pairs of a per-type integer (units, doubled values): one value per kind."""
        sums = np.bincount(self.kind, weights=self.count * per_type[self.ptype], minlength=len(self.items))
        out: np.ndarray = np.rint(sums).astype(np.int64)
        return out

    def total(self, per_type: np.ndarray) -> int:
        """Sum over every pair of every item of a per-type integer."""
        return int((self.items[self.kind] * self.count) @ per_type[self.ptype].astype(np.int64))


@dataclass(frozen=True)
class DebiasCounts:
    """What the debiased verdicts (`core.debias`) need of one selection's pairs whose two calls carry
    probabilities: counts by (order-averaged class, calibrated verdict of each call, label), the slot prior of
    the identical-answer calls with probabilities, and how many such calls there were."""

    counts: np.ndarray  # shape (3, VERDICT_STATES - 1, VERDICT_STATES - 1, LABEL_STATES): class X/Y/TIE, FIRST..NULL
    prior: float | None
    probe_calls: int


# one row of `PairCounts.pairs`: the system pair (x < y), a pair type and how many pairs of it
TypeRow = tuple[str, str, int, int]


@dataclass(frozen=True)
class PairCounts:
    """One selection's pairs as counts: the pairs by system pair and type (`pairs`: rows (x, y, ptype, n), sorted),
    the items by kind, the distinct rounds, the identical-answer calls by verdict (first, second, tie, none), the
    re-show share of a live review's export, and the debiased verdicts' counts when the records carry
    probabilities."""

    pairs: tuple[TypeRow, ...]
    kinds: Kinds
    rounds: int
    probes: tuple[int, int, int, int]
    reshow: float | None = None
    debias: DebiasCounts | None = None

    @property
    def type_counts(self) -> np.ndarray:
        """Pairs of each type, every system pair together."""
        counts = np.zeros(TYPES, dtype=np.int64)
        for _, _, ptype, n in self.pairs:
            counts[ptype] += n
        return counts

    @property
    def systems(self) -> list[str]:
        return sorted({x for x, _, _, _ in self.pairs} | {y for _, y, _, _ in self.pairs})


class PairSource(Protocol):
    """Records reduced to what the analysis asks of them, one selection at a time: in memory (`FrameSource`)
    or from a file larger than memory (`reading.streaming`)."""

    @property
    def source(self) -> str: ...  # where the records came from (read only: a frozen source is one too)

    def judges(self) -> list[str]: ...

    def systems(self, judge: str) -> list[str]: ...

    def counts(self, judge: str, pair: tuple[str, str] | None = None, *,
               segment: str | None = None) -> PairCounts: ...

    def segment_values(self, judge: str | None = None) -> list[str]: ...

    def thresholds(self, judge: str) -> list[float]: ...

    def registered(self, column: str) -> list[str]: ...


# ---- the in-memory reduction (polars) --------------------------------------------------------------------


def _verdict_state(verdict: pl.Expr) -> pl.Expr:
    import polars as pl

    return verdict.replace_strict(VERDICT_CODES, default=NULL, return_dtype=pl.Int8).fill_null(NULL)


def _threshold_value(frame: pl.DataFrame) -> pl.Expr:
    """Each call's adaptive threshold when it is one in (0.5, 1], else null (as `reading.records` reads it)."""
    import polars as pl

    from swapjudge.reading.records import REGISTERED_ADAPTIVE, adaptive_threshold

    return adaptive_threshold(frame) if REGISTERED_ADAPTIVE in frame.columns else pl.lit(None, dtype=pl.Float64)


def _reshow_value(frame: pl.DataFrame) -> pl.Expr:
    import polars as pl

    from swapjudge.reading.records import REGISTERED_RESHOW

    if REGISTERED_RESHOW not in frame.columns:
        return pl.lit(None, dtype=pl.Float64)
    return pl.col(REGISTERED_RESHOW).cast(pl.Float64, strict=False)


def _probability(frame: pl.DataFrame, name: str) -> pl.Expr:
    import polars as pl

    return pl.col(name).cast(pl.Float64, strict=False) if name in frame.columns else pl.lit(None, dtype=pl.Float64)


def slot_share_expr(p_first: pl.Expr, p_second: pl.Expr) -> pl.Expr:
    """`core.debias.slot_share` as an expression: P(slot 1) over both slots, clipped; null where unusable."""
    import polars as pl

    total = p_first + p_second
    return pl.when(total > 0).then((p_first / total).clip(1e-12, 1.0 - 1e-12))


def compact_pairs(frame: pl.DataFrame, *, segment: str | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The pair table and the identical-answer calls of validated records (the columns of PAIR_COLUMNS and
    PROBE_COLUMNS, plus `segment` when asked for and `qx`/`qy`, each call's slot-1 share, when the records carry
    probabilities)."""
    import polars as pl

    with_p = all(c in frame.columns for c in ("p_first", "p_second"))
    calls = frame.select(
        "judge", "round", "item", "first", "second", "label",
        _verdict_state(pl.col("verdict")).alias("_state"),
        (_threshold_value(frame).is_not_null() & pl.col("verdict").is_not_null()).alias("_skippable"),
        _reshow_value(frame).alias("_reshow"),
        (pl.col(segment) if segment is not None else pl.lit(None, dtype=pl.String)).alias("_segment"),
        slot_share_expr(_probability(frame, "p_first"), _probability(frame, "p_second")).alias("_share"),
        (_probability(frame, "p_first").is_not_null() & _probability(frame, "p_second").is_not_null())
        .alias("_has_p"),
    )
    probes = calls.filter(pl.col("first") == pl.col("second")).select(
        "judge", pl.col("first").alias("system"), pl.col("_state").alias("code"), pl.col("_reshow").alias("reshow"),
        pl.col("_segment").alias("segment"), pl.col("_share").alias("share"), pl.col("_has_p").alias("has_p"))
    pair_calls = calls.filter(pl.col("first") != pl.col("second")).with_columns(
        pl.min_horizontal("first", "second").alias("x"), pl.max_horizontal("first", "second").alias("y"))
    xf = pl.col("first") == pl.col("x")
    pairs = pair_calls.group_by(["judge", "round", "item", "x", "y"], maintain_order=True).agg(
        pl.col("_state").filter(xf).first().fill_null(ABSENT).alias("vx"),
        pl.col("_state").filter(~xf).first().fill_null(ABSENT).alias("vy"),
        pl.col("label").drop_nulls().first().alias("_label"),
        pl.len().alias("_calls"),
        pl.col("_skippable").any().alias("_skippable"),
        pl.col("_reshow").min().alias("reshow_lo"),
        pl.col("_reshow").max().alias("reshow_hi"),
        pl.col("_segment").first().alias("segment"),
        pl.col("_share").filter(xf & pl.col("_has_p")).first().alias("qx"),
        pl.col("_share").filter(~xf & pl.col("_has_p")).first().alias("qy"),
        (pl.col("_has_p").filter(xf).first().fill_null(False)
         & pl.col("_has_p").filter(~xf).first().fill_null(False)).alias("has_p"),
    )
    label = (pl.when(pl.col("_label") == pl.col("x")).then(LABEL_X).when(pl.col("_label") == pl.col("y"))
             .then(LABEL_Y).when(pl.col("_label") == TIE_LABEL).then(LABEL_TIE).otherwise(LABEL_NONE))
    pairs = pairs.with_columns(
        label.cast(pl.Int8).alias("label"),
        ((pl.col("_calls") == 1) & pl.col("_skippable")).alias("skipped"),
    ).drop("_label", "_calls", "_skippable")
    if not with_p:
        pairs = pairs.drop("qx", "qy", "has_p")
        probes = probes.drop("share", "has_p")
    if segment is None:
        pairs, probes = pairs.drop("segment"), probes.drop("segment")
    return pairs, probes


def kinds_of(pairs: pl.DataFrame) -> Kinds:
    """The items of these pairs grouped by their multiset of pair types."""
    import polars as pl

    if pairs.height == 0:
        return Kinds.empty()
    per_item = pairs.group_by("item").agg(pl.col("ptype").sort().alias("types"))
    grouped = per_item.group_by("types").len()
    return Kinds.from_lists(grouped.get_column("types").to_list(), grouped.get_column("len").to_list())


def one_value(values: Sequence[Any]) -> float | None:
    """The one distinct value, or None (none, or several disagree)."""
    distinct = {float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))}
    return distinct.pop() if len(distinct) == 1 else None


def debias_counts(pairs: pl.DataFrame, probes: pl.DataFrame) -> DebiasCounts | None:
    """The debiased verdicts' counts of one selection (None when no pair has probabilities in both calls)."""
    import polars as pl

    if "has_p" not in pairs.columns:
        return None
    usable = pairs.filter(pl.col("has_p"))
    if usable.height == 0:
        return None
    with_p = probes.filter(pl.col("has_p"))
    shares = with_p.get_column("share").cast(pl.Float64).to_numpy()
    prior = float(np.nanmean(shares)) if with_p.height else None
    return DebiasCounts(debias_table(usable.get_column("qx").to_numpy(), usable.get_column("qy").to_numpy(),
                                     usable.get_column("label").to_numpy(), prior), prior, int(with_p.height))


def calibrated_states(share: np.ndarray, prior: float | None) -> np.ndarray:
    """Each call's verdict once the slot prior is subtracted on the log-odds scale (FIRST above the prior, SECOND
    below, TIE at it, NULL without a share); all NULL without a prior. The log-odds are monotone, so comparing
    the shares says the same exactly."""
    if prior is None:
        return np.full(share.shape, NULL, dtype=np.int64)
    with np.errstate(invalid="ignore"):
        states = np.where(share > prior, FIRST, np.where(share < prior, SECOND, TIE))
    out: np.ndarray = np.where(np.isnan(share), NULL, states).astype(np.int64)
    return out


def debias_table(qx: np.ndarray, qy: np.ndarray, label: np.ndarray, prior: float | None) -> np.ndarray:
    """Counts by (order-averaged class, calibrated state of each call, label) of pairs with both shares."""
    qx, qy = np.asarray(qx, dtype=float), np.asarray(qy, dtype=float)
    with np.errstate(invalid="ignore"):
        averaged = 0.5 * (qx + (1.0 - qy))
        klass = np.where(averaged > 0.5, 0, np.where(averaged < 0.5, 1, 2))
    cx, cy = calibrated_states(qx, prior), calibrated_states(qy, prior)
    index = ((klass * 4 + cx) * 4 + cy) * LABEL_STATES + np.asarray(label, dtype=np.int64)
    return np.bincount(index, minlength=3 * 4 * 4 * LABEL_STATES).reshape(3, 4, 4, LABEL_STATES)


def selection_counts(pairs: pl.DataFrame, probes: pl.DataFrame, pair: tuple[str, str] | None) -> PairCounts:
    """The counts of one judge's (or segment's) pair table and probe calls, limited to `pair` when given."""
    import polars as pl

    if pair is not None:
        lo, hi = sorted(pair)
        pairs = pairs.filter((pl.col("x") == lo) & (pl.col("y") == hi))
        probes = probes.filter(pl.col("system").is_in(list(pair)))
    typed = pairs.with_columns(pair_type(pl.col("vx").cast(pl.Int64), pl.col("vy").cast(pl.Int64),
                                         pl.col("label").cast(pl.Int64), pl.col("skipped").cast(pl.Int64))
                               .alias("ptype"))
    by_pair = (typed.group_by("x", "y", "ptype").len(name="n").sort("x", "y", "ptype")
               .with_columns(pl.col("ptype").cast(pl.Int64), pl.col("n").cast(pl.Int64)))
    codes = probes.get_column("code").to_numpy()
    reshows = [*pairs.get_column("reshow_lo").to_list(), *pairs.get_column("reshow_hi").to_list(),
               *probes.get_column("reshow").to_list()]
    return PairCounts(
        pairs=tuple((str(x), str(y), int(t), int(n)) for x, y, t, n in by_pair.iter_rows()),
        kinds=kinds_of(typed), rounds=int(pairs.get_column("round").n_unique()),
        probes=(int((codes == FIRST).sum()), int((codes == SECOND).sum()), int((codes == TIE).sum()),
                int((codes == NULL).sum())),
        reshow=one_value(reshows), debias=debias_counts(pairs, probes))


@dataclass(frozen=True)
class FrameSource:
    """Validated records in memory as a `PairSource`: the reference the streaming reduction is held to."""

    frame: pl.DataFrame
    source: str = "records"
    segment: str | None = None
    _tables: dict[str, pl.DataFrame] = field(default_factory=dict, compare=False, repr=False)

    def _pairs(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        if not self._tables:
            pairs, probes = compact_pairs(self.frame, segment=self.segment)
            self._tables.update(pairs=pairs, probes=probes)
        return self._tables["pairs"], self._tables["probes"]

    def judges(self) -> list[str]:
        return sorted(self.frame.get_column("judge").unique().to_list())

    def systems(self, judge: str) -> list[str]:
        import polars as pl

        pairs = self._pairs()[0].filter(pl.col("judge") == judge)
        return sorted(set(pairs.get_column("x").to_list()) | set(pairs.get_column("y").to_list()))

    def counts(self, judge: str, pair: tuple[str, str] | None = None, *,
               segment: str | None = None) -> PairCounts:
        import polars as pl

        pairs, probes = self._pairs()
        pairs, probes = pairs.filter(pl.col("judge") == judge), probes.filter(pl.col("judge") == judge)
        if segment is not None:
            pairs = pairs.filter(pl.col("segment") == segment)
            probes = probes.filter(pl.col("segment") == segment)
        return selection_counts(pairs, probes, pair)

    def segment_values(self, judge: str | None = None) -> list[str]:
        import polars as pl

        pairs, probes = self._pairs()
        if judge is not None:
            pairs, probes = pairs.filter(pl.col("judge") == judge), probes.filter(pl.col("judge") == judge)
        return sorted(set(pairs.get_column("segment").to_list()) | set(probes.get_column("segment").to_list()))

    def thresholds(self, judge: str) -> list[float]:
        import polars as pl

        calls = self.frame.filter(pl.col("judge") == judge)
        values = calls.select(_threshold_value(calls)).to_series().drop_nulls().unique().to_list()
        return sorted(float(v) for v in values)

    def registered(self, column: str) -> list[str]:
        if column not in self.frame.columns:
            return []
        return sorted(str(v) for v in self.frame.get_column(column).drop_nulls().unique().to_list())
