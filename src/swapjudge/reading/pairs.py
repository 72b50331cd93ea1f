"""From calls to pairs: both verdicts of a pair side by side, mapped to identities (the counting rules of
docs/records.md).

A pair is (judge, round, item, {x, y}) with x < y. `vx` is the positional verdict of the call that showed x
first, `vy` of the call that showed y first, coded FIRST/SECOND/TIE/MISSING.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

# the codes live in reading.codes (no polars) and are used from here as before
from swapjudge.reading.codes import FIRST as FIRST
from swapjudge.reading.codes import MISSING as MISSING
from swapjudge.reading.codes import SECOND as SECOND
from swapjudge.reading.codes import TIE as TIE
from swapjudge.reading.codes import VERDICT_CODES as VERDICT_CODES
from swapjudge.reading.codes import Outcome as Outcome

if TYPE_CHECKING:  # polars loads when pairs are built: the counts of a small file need none (reading.small)
    import polars as pl


@dataclass(frozen=True)
class PairTable:
    """One row per pair; `frame` holds judge, round, item, x, y, label, vx, vy, outcome, the number of calls in
    each order (n_xf, n_yf: 1 each in valid data), `sx` / `sy` (each order's strength: 1 slightly, 2 much, null)
    when the records carry `strength`, and, when asked for, the extras of the x-first call, suffixed `_xf`, and
    of the y-first call, suffixed `_yf`."""

    frame: pl.DataFrame

    @property
    def vx(self) -> np.ndarray:
        return self.frame.get_column("vx").to_numpy()

    @property
    def vy(self) -> np.ndarray:
        return self.frame.get_column("vy").to_numpy()

    @property
    def outcome(self) -> np.ndarray:
        return self.frame.get_column("outcome").to_numpy()

    @property
    def systems(self) -> list[str]:
        return sorted(set(self.frame.get_column("x").unique().to_list())
                      | set(self.frame.get_column("y").unique().to_list()))

    def __len__(self) -> int:
        return self.frame.height


def verdict_codes(verdicts: pl.Expr) -> pl.Expr:
    """first/second/tie/null as FIRST/SECOND/TIE/MISSING."""
    import polars as pl

    return verdicts.replace_strict(VERDICT_CODES, default=MISSING, return_dtype=pl.Int8).fill_null(MISSING)


def classify(vx: np.ndarray, vy: np.ndarray) -> np.ndarray:
    """Outcome code for each pair from its two positional verdicts (vectorised; pure)."""
    out = np.full(vx.shape, Outcome.INCOMPLETE, dtype=np.int8)
    complete = (vx != MISSING) & (vy != MISSING)
    rules = [
        ((vx == FIRST) & (vy == SECOND), Outcome.X_WINS),
        ((vx == SECOND) & (vy == FIRST), Outcome.Y_WINS),
        ((vx == TIE) & (vy == TIE), Outcome.TIE),
        ((vx == FIRST) & (vy == FIRST), Outcome.FLIP_FIRST),
        ((vx == SECOND) & (vy == SECOND), Outcome.FLIP_SECOND),
        (((vx == TIE) & (vy == FIRST)) | ((vx == FIRST) & (vy == TIE)), Outcome.HALF_TIE_FIRST),
        (((vx == TIE) & (vy == SECOND)) | ((vx == SECOND) & (vy == TIE)), Outcome.HALF_TIE_SECOND),
    ]
    for mask, code in rules:
        out[mask & complete] = code
    return out


def order_cancelled_score(outcome: np.ndarray) -> np.ndarray:
    """1 for a consistent x win, 0 for a consistent y win, 1/2 for every other complete pair, NaN if incomplete."""
    score = np.full(outcome.shape, 0.5)
    score[outcome == Outcome.X_WINS] = 1.0
    score[outcome == Outcome.Y_WINS] = 0.0
    score[outcome == Outcome.INCOMPLETE] = np.nan
    return score


def build_pairs(frame: pl.DataFrame, *, keep: tuple[str, ...] = ()) -> PairTable:
    """Pair up validated records (identical-answer probe calls, first == second, are left out).

    A pair seen in one order only (allowed for single-order data or with allow_unpaired) gets MISSING for the
    absent call and so counts as incomplete. `keep` names extra columns to carry from each call.
    """
    import polars as pl

    calls = frame.filter(pl.col("first") != pl.col("second")).with_columns(
        pl.min_horizontal("first", "second").alias("x"),
        pl.max_horizontal("first", "second").alias("y"),
        verdict_codes(pl.col("verdict")).alias("_code"),
    ).with_columns((pl.col("first") == pl.col("x")).alias("_x_first"))
    extras = [c for c in keep if c in calls.columns]
    aggs = [
        pl.col("_code").filter(pl.col("_x_first")).first().fill_null(MISSING).alias("vx"),
        pl.col("_code").filter(~pl.col("_x_first")).first().fill_null(MISSING).alias("vy"),
        pl.col("label").drop_nulls().first().alias("label"),
        pl.len().alias("calls"),
        pl.col("_x_first").sum().alias("n_xf"),
    ]
    if "strength" in calls.columns:  # graded verdicts: each order's strength, as vx / vy are each order's slot
        aggs.append(pl.col("strength").filter(pl.col("_x_first")).first().cast(pl.Int8).alias("sx"))
        aggs.append(pl.col("strength").filter(~pl.col("_x_first")).first().cast(pl.Int8).alias("sy"))
    for col in extras:
        aggs.append(pl.col(col).filter(pl.col("_x_first")).first().alias(f"{col}_xf"))
        aggs.append(pl.col(col).filter(~pl.col("_x_first")).first().alias(f"{col}_yf"))
    pairs = calls.group_by(["judge", "round", "item", "x", "y"], maintain_order=True).agg(aggs)
    pairs = pairs.with_columns((pl.col("calls") - pl.col("n_xf")).alias("n_yf"))
    outcome = classify(pairs.get_column("vx").to_numpy(), pairs.get_column("vy").to_numpy())
    return PairTable(pairs.with_columns(pl.Series("outcome", outcome, dtype=pl.Int8)))


def probe_calls(frame: pl.DataFrame) -> pl.DataFrame:
    """Identical-answer probe calls: the same identity in both slots."""
    import polars as pl

    return frame.filter(pl.col("first") == pl.col("second"))
