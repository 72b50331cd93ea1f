"""The review queue: every pair that flipped or half-tied, with both answers and both raw judge replies, for a
person to read; and the pairs file's texts joined onto records."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from swapjudge.errors import InputError
from swapjudge.reading.pairs import FIRST, SECOND, TIE, Outcome, build_pairs
from swapjudge.reading.pairs_file import PairItem, load_pairs
from swapjudge.reading.records import RecordSet
from swapjudge.reading.textfiles import spreadsheet_cell, write_atomic

QUEUE_OUTCOMES = {
    Outcome.FLIP_FIRST: "flip_first",
    Outcome.FLIP_SECOND: "flip_second",
    Outcome.HALF_TIE_FIRST: "half_tie_first",
    Outcome.HALF_TIE_SECOND: "half_tie_second",
}
QUEUE_FIELDS = ("judge", "round", "item", "outcome", "x", "y", "label", "verdict_x_first", "verdict_y_first",
                "named_x_first", "named_y_first", "prompt", "text_x", "text_y", "raw_x_first", "raw_y_first")
_CODE_NAMES = {FIRST: "first", SECOND: "second", TIE: "tie"}


# ---- pairs files ---------------------------------------------------------------------------------------------


def load_pair_items(path: str | Path) -> list[PairItem]:
    """The items of a pairs file, read by the runner's reader (`swapjudge.reading.pairs_file.load_pairs`)."""
    return list(load_pairs(path).items)


def attach_texts(frame: pl.DataFrame, items: Sequence[PairItem]) -> pl.DataFrame:
    """Add `first_text`, `second_text` and `prompt` to each call from a pairs file (by item and identity);
    calls whose item or system the file lacks get nulls."""
    texts = pl.DataFrame(
        [(it.item, name, answer) for it in items for name, answer in it.answers.items()],
        schema={"item": pl.String, "_system": pl.String, "_text": pl.String}, orient="row")
    prompts = pl.DataFrame([(it.item, it.prompt) for it in items], schema={"item": pl.String, "prompt": pl.String},
                           orient="row")
    out = frame.drop([c for c in ("first_text", "second_text", "prompt") if c in frame.columns])
    out = out.join(texts.rename({"_system": "first", "_text": "first_text"}), on=["item", "first"], how="left")
    out = out.join(texts.rename({"_system": "second", "_text": "second_text"}), on=["item", "second"], how="left")
    return out.join(prompts, on="item", how="left")


# ---- review queue -------------------------------------------------------------------------------------------


def review_queue(frame: pl.DataFrame, *, judge: str | None = None, a: str | None = None,
                 b: str | None = None) -> pl.DataFrame:
    """The pairs that flipped or half-tied, one row per pair (QUEUE_FIELDS), in file order.

    `verdict_x_first` is the positional verdict of the call that showed x in slot 1; `named_x_first` is the
    identity that call named (or "tie"), so a flip reads as two different names.
    """
    if judge is not None:
        frame = frame.filter(pl.col("judge") == judge)
    if a is not None and b is not None:
        frame = frame.filter(pl.col("first").is_in([a, b]) & pl.col("second").is_in([a, b]))
    keep = tuple(c for c in ("raw", "first_text", "second_text", "prompt") if c in frame.columns)
    pairs = build_pairs(frame, keep=keep).frame
    pairs = pairs.filter(pl.col("outcome").is_in([int(o) for o in QUEUE_OUTCOMES]))

    def col(name: str) -> pl.Expr:
        return pl.col(name).cast(pl.String) if name in pairs.columns else pl.lit(None, dtype=pl.String)

    def named(code: str, slot1: str, slot2: str) -> pl.Expr:
        return (pl.when(pl.col(code) == FIRST).then(pl.col(slot1)).when(pl.col(code) == SECOND)
                .then(pl.col(slot2)).when(pl.col(code) == TIE).then(pl.lit("tie")).otherwise(None))

    return pairs.select(
        pl.col("judge"), pl.col("round"), pl.col("item"),
        pl.col("outcome").replace_strict({int(k): v for k, v in QUEUE_OUTCOMES.items()},
                                         return_dtype=pl.String).alias("outcome"),
        pl.col("x"), pl.col("y"), pl.col("label"),
        pl.col("vx").replace_strict(_CODE_NAMES, default=None, return_dtype=pl.String).alias("verdict_x_first"),
        pl.col("vy").replace_strict(_CODE_NAMES, default=None, return_dtype=pl.String).alias("verdict_y_first"),
        named("vx", "x", "y").alias("named_x_first"),
        named("vy", "y", "x").alias("named_y_first"),
        pl.coalesce(col("prompt_xf"), col("prompt_yf")).alias("prompt"),
        pl.coalesce(col("first_text_xf"), col("second_text_yf")).alias("text_x"),
        pl.coalesce(col("second_text_xf"), col("first_text_yf")).alias("text_y"),
        col("raw_xf").alias("raw_x_first"),
        col("raw_yf").alias("raw_y_first"),
    )


def write_table(rows: pl.DataFrame | Sequence[dict[str, Any]], path: str | Path,
                fields: Sequence[str] | None = None) -> None:
    """Write rows as JSON Lines, or CSV when the path ends in .csv; atomically (a temporary file renamed). A CSV
    is written for people's spreadsheets: a text cell that would run as a formula is escaped with a leading `'`
    (`reading.textfiles.spreadsheet_cell`), which every swapjudge reader of CSV takes off again."""
    path = Path(path)
    dicts = rows.to_dicts() if isinstance(rows, pl.DataFrame) else list(rows)
    names = list(fields) if fields is not None else (
        rows.columns if isinstance(rows, pl.DataFrame) else list(dict.fromkeys(k for d in dicts for k in d)))
    if path.suffix.lower() == ".csv":
        buffer = io.StringIO(newline="")
        # CRLF ends a row (RFC 4180): the writer then quotes a cell holding a lone CR, which would otherwise end
        # the row there in every reader and start the next one with the rest of the cell
        writer = csv.DictWriter(buffer, fieldnames=names, extrasaction="ignore", lineterminator="\r\n")
        writer.writeheader()
        writer.writerows({k: spreadsheet_cell(v) for k, v in d.items()} for d in dicts)
        text = buffer.getvalue()
    else:
        text = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in dicts)
    write_atomic(path, text)


def unsettled_pairs(records: RecordSet, *, judge: str | None = None, a: str | None = None,
                    b: str | None = None) -> list[tuple[str, str, str]]:
    """(item, x, y) of every pair the judge could not settle (a flip or a half-tie), once each across rounds:
    the pairs a blind human review sheet most often needs."""
    judges = records.judges
    if judge is None and len(judges) > 1:
        raise InputError(f"records hold {len(judges)} judges ({', '.join(judges)}); choose one with {{judge}}",
                         path=records.source, arguments=("judge",))
    if judge is not None and judge not in judges:
        raise InputError(f"no records of judge {judge!r} (judges: {', '.join(judges) or '(unnamed)'})",
                         path=records.source)
    queue = review_queue(records.frame, judge=judge, a=a, b=b)
    rows = queue.select("item", "x", "y").unique(maintain_order=True).iter_rows()
    return [(str(item), str(x), str(y)) for item, x, y in rows]
