"""Generated presentation records at any size, written by polars' streaming engine (memory stays flat), for the
scale benchmarks: `python bench/scale_records.py N OUT.parquet|OUT.jsonl [PAIRS_PER_ITEM]`.

Four judges and eight systems, both orders of every pair, as an arena log is: each item (prompt) compares one
pair of systems per judge (`pairs_per_item` 1, the default), or several different pairs (2: the shape where an
item's pairs must be told apart). The second call of a pair repeats the first call's verdict (mirrored into its
own slots) 80% of the time and is drawn afresh otherwise, so swap-consistency is realistic (about 0.85) and
flips lean toward the first slot. No row repeats a pair key.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

JUDGES = ("judge-a", "judge-b", "judge-c", "judge-d")
SYSTEMS = ("baseline", "v1", "v2", "v3", "v4", "v5", "v6", "v7")
SYSTEM_PAIRS = [(a, b) for i, a in enumerate(SYSTEMS) for b in SYSTEMS[i + 1:]]  # 28, x < y


def records(n: int, pairs_per_item: int = 1, seed: int = 7) -> pl.LazyFrame:
    """n records (n even) as a lazy frame: row r is order r % 2 of pair r // 2."""
    call = pl.int_range(0, n, dtype=pl.Int64)
    lf = pl.LazyFrame().select(call.alias("r")).with_columns(
        (pl.col("r") // 2).alias("k"), (pl.col("r") % 2 == 1).alias("swapped"))
    judge = pl.col("k") % len(JUDGES)
    rest = pl.col("k") // len(JUDGES)
    item = rest // pairs_per_item
    lf = lf.with_columns(judge.alias("j"), item.alias("item_no"), (rest % pairs_per_item).alias("slot"))
    # the item's system pairs: consecutive in a seeded order, so the pairs of one item differ
    start = (pl.col("item_no") * len(JUDGES) + pl.col("j")).hash(seed) % len(SYSTEM_PAIRS)
    lf = lf.with_columns(((start + pl.col("slot") * 5) % len(SYSTEM_PAIRS)).alias("p"))
    u_pair = (pl.col("k").hash(seed + 1) % 1_000_000) / 1_000_000
    u_call = (pl.col("r").hash(seed + 2) % 1_000_000) / 1_000_000
    # the x-first call's verdict: first 45%, second 40%, tie 13%, none 2%
    base = (pl.when(u_pair < 0.45).then(0).when(u_pair < 0.85).then(1).when(u_pair < 0.98).then(2).otherwise(3))
    fresh = (pl.when(u_call < 0.5).then(0).when(u_call < 0.85).then(1).when(u_call < 0.97).then(2).otherwise(3))
    mirrored = pl.when(base == 0).then(1).when(base == 1).then(0).otherwise(base)
    keep = ((pl.col("r").hash(seed + 3) % 100) < 80)
    state = pl.when(~pl.col("swapped")).then(base).when(keep).then(mirrored).otherwise(fresh)
    x = pl.col("p").replace_strict(list(range(len(SYSTEM_PAIRS))), [a for a, _ in SYSTEM_PAIRS],
                                   return_dtype=pl.String)
    y = pl.col("p").replace_strict(list(range(len(SYSTEM_PAIRS))), [b for _, b in SYSTEM_PAIRS],
                                   return_dtype=pl.String)
    return lf.select(
        pl.col("j").replace_strict(list(range(len(JUDGES))), list(JUDGES), return_dtype=pl.String).alias("judge"),
        pl.format("q{}", pl.col("item_no")).alias("item"),
        pl.when(pl.col("swapped")).then(y).otherwise(x).alias("first"),
        pl.when(pl.col("swapped")).then(x).otherwise(y).alias("second"),
        state.replace_strict([0, 1, 2, 3], ["first", "second", "tie", None], return_dtype=pl.String)
        .alias("verdict"),
    )


def write(n: int, path: Path, pairs_per_item: int = 1) -> None:
    """Write n records to a Parquet or JSON Lines file (by suffix), streaming; an existing file is kept."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    lf = records(n, pairs_per_item)
    if path.suffix == ".parquet":
        lf.sink_parquet(partial, row_group_size=1_000_000)
    else:
        lf.sink_ndjson(partial)
    partial.rename(path)


if __name__ == "__main__":
    write(int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 1)
