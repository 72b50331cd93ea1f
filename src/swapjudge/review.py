"""Human review: the queue of pairs the judge could not settle, and blind review sheets for people.

The review queue lists every pair that flipped or half-tied, with both answers and both raw judge replies, for a
person to read. The blind sheet turns a pairs file into 2n presentations (each pair in both orders, a seeded coin
choosing which answer is on the left first, ids given after shuffling), with system names kept in a separate key;
the tally turns a filled sheet back into presentation records whose judge is the reviewer, so people are analysed
by exactly the same code as models.
"""

from __future__ import annotations

import csv
import io
import json
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from swapjudge.errors import InputError, SwapjudgeError
from swapjudge.pairs import FIRST, SECOND, TIE, Outcome, build_pairs
from swapjudge.pairs_input import PairItem, load_pairs
from swapjudge.textfiles import csv_rows, read_text, write_atomic

QUEUE_OUTCOMES = {
    Outcome.FLIP_FIRST: "flip_first",
    Outcome.FLIP_SECOND: "flip_second",
    Outcome.HALF_TIE_FIRST: "half_tie_first",
    Outcome.HALF_TIE_SECOND: "half_tie_second",
}
QUEUE_FIELDS = ("judge", "round", "item", "outcome", "x", "y", "label", "verdict_x_first", "verdict_y_first",
                "named_x_first", "named_y_first", "prompt", "text_x", "text_y", "raw_x_first", "raw_y_first")
_CODE_NAMES = {FIRST: "first", SECOND: "second", TIE: "tie"}

SHEET_FIELDS = ("task_id", "prompt", "answer_left", "answer_right", "choice", "reviewer", "comment")
KEY_FIELDS = ("task_id", "item", "presentation", "left", "right", "label")
CHOICES = {"left": "first", "l": "first", "right": "second", "r": "second", "tie": "tie", "t": "tie"}


# ---- pairs files ---------------------------------------------------------------------------------------------


def load_pair_items(path: str | Path) -> list[PairItem]:
    """The items of a pairs file, read by the runner's reader (`swapjudge.pairs_input.load_pairs`)."""
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
    """Write rows as JSON Lines, or CSV when the path ends in .csv; atomically (a temporary file renamed)."""
    path = Path(path)
    dicts = rows.to_dicts() if isinstance(rows, pl.DataFrame) else list(rows)
    names = list(fields) if fields is not None else (
        rows.columns if isinstance(rows, pl.DataFrame) else list(dict.fromkeys(k for d in dicts for k in d)))
    if path.suffix.lower() == ".csv":
        buffer = io.StringIO(newline="")
        writer = csv.DictWriter(buffer, fieldnames=names, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(dicts)
        text = buffer.getvalue()
    else:
        text = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in dicts)
    write_atomic(path, text)


# ---- blind review sheet -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SheetTask:
    """One presentation on the sheet. `left`/`right` are system names (key only); `presentation` is 1 for the
    coin's order and 2 for its exact swap."""

    task_id: str
    item: str
    presentation: int
    prompt: str
    left: str
    right: str
    left_text: str
    right_text: str
    label: str | None

    def sheet_row(self) -> dict[str, str]:
        return {"task_id": self.task_id, "prompt": self.prompt, "answer_left": self.left_text,
                "answer_right": self.right_text, "choice": "", "reviewer": "", "comment": ""}

    def key_row(self) -> dict[str, str]:
        return {"task_id": self.task_id, "item": self.item, "presentation": str(self.presentation),
                "left": self.left, "right": self.right, "label": self.label or ""}


@dataclass(frozen=True)
class Sheet:
    tasks: tuple[SheetTask, ...]  # in task-id order, which is the shuffled order
    seed: int


def make_sheet(items: Sequence[PairItem], *, seed: int | None = None, a: str | None = None,
               b: str | None = None, source: str | None = None) -> Sheet:
    """Both presentations of every pair, shuffled, ids assigned after the shuffle.

    Each item must have exactly two answers, or name the two systems with `a` and `b`. A seeded coin picks the
    left answer of the first presentation; the second presentation is its exact swap.
    """
    if seed is None:
        seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    chosen: list[tuple[PairItem, str, str]] = []
    for it in items:
        if a is not None and b is not None:
            missing = [s for s in (a, b) if s not in it.answers]
            if missing:
                raise InputError(f"item {it.item!r} has no answer from {missing[0]!r}", path=source,
                                 line=it.line, field="answers")
            x, y = a, b
        elif len(it.answers) == 2:
            x, y = sorted(it.answers)
        else:
            raise InputError(f"item {it.item!r} has {len(it.answers)} answers: name the two systems with --a and "
                             "--b", path=source, line=it.line, field="answers")
        chosen.append((it, x, y))
    coins = rng.integers(0, 2, size=len(chosen))
    presentations: list[tuple[PairItem, int, str, str]] = []
    for (it, x, y), coin in zip(chosen, coins, strict=True):
        left, right = (x, y) if coin == 0 else (y, x)
        presentations.append((it, 1, left, right))
        presentations.append((it, 2, right, left))
    order = rng.permutation(len(presentations))
    width = max(4, len(str(len(presentations))))
    tasks = []
    for number, index in enumerate(order, start=1):
        it, presentation, left, right = presentations[int(index)]
        tasks.append(SheetTask(f"T{number:0{width}d}", it.item, presentation, it.prompt, left, right,
                               it.answers[left], it.answers[right], it.label))
    return Sheet(tuple(tasks), seed)


def write_sheet(sheet: Sheet, sheet_path: str | Path, key_path: str | Path) -> None:
    """The sheet (no system names, no item ids) and its key (which system sat where)."""
    sheet_path, key_path = Path(sheet_path), Path(key_path)
    if sheet_path.resolve() == key_path.resolve():
        raise SwapjudgeError("the sheet and the key must be different files")
    write_table([t.sheet_row() for t in sheet.tasks], sheet_path, SHEET_FIELDS)
    write_table([t.key_row() for t in sheet.tasks], key_path, KEY_FIELDS)


@dataclass(frozen=True)
class KeyRow:
    task_id: str
    item: str
    presentation: int
    left: str
    right: str
    label: str | None
    line: int


def _csv_rows(path: Path, required: Iterable[str]) -> Iterable[tuple[int, dict[str, str]]]:
    """(line, row) for each CSV record, the line being where the record starts; header checked first."""
    for start, row in csv_rows(read_text(path), str(path), required=required):
        yield start, {k: (v or "") for k, v in row.items()}


def load_key(path: str | Path) -> dict[str, KeyRow]:
    path = Path(path)
    key: dict[str, KeyRow] = {}
    for line, row in _csv_rows(path, KEY_FIELDS):
        for name in ("task_id", "item", "left", "right"):
            if not row[name].strip():
                raise InputError("empty", path=str(path), line=line, field=name)
        if row["presentation"] not in ("1", "2"):
            raise InputError(f"must be 1 or 2, got {row['presentation']!r}", path=str(path), line=line,
                             field="presentation")
        task_id = row["task_id"].strip()
        if task_id in key:
            raise InputError(f"task id {task_id!r} twice (first on line {key[task_id].line})", path=str(path),
                             line=line, field="task_id")
        key[task_id] = KeyRow(task_id, row["item"], int(row["presentation"]), row["left"], row["right"],
                              row["label"] or None, line)
    if not key:
        raise InputError("no tasks in the key", path=str(path))
    return key


def tally(sheet_path: str | Path, key_path: str | Path, *, reviewer: str = "reviewer") -> list[dict[str, Any]]:
    """Presentation records from a filled sheet: first/second are the systems on the left/right, the verdict is
    the reviewer's choice (left = first), the judge is the sheet's `reviewer` cell or `reviewer`."""
    sheet_path = Path(sheet_path)
    key = load_key(key_path)
    where = str(sheet_path)
    seen: dict[str, int] = {}
    records: list[dict[str, Any]] = []
    for line, row in _csv_rows(sheet_path, ("task_id", "choice")):
        task_id = row["task_id"].strip()
        if not task_id:
            raise InputError("empty", path=where, line=line, field="task_id")
        if task_id not in key:
            raise InputError(f"unknown task id {task_id!r} (not in {Path(key_path).name})", path=where, line=line,
                             field="task_id")
        if task_id in seen:
            raise InputError(f"task {task_id!r} answered twice (first on line {seen[task_id]})", path=where,
                             line=line, field="task_id")
        seen[task_id] = line
        choice = row["choice"].strip().lower()
        if not choice:
            raise InputError(f"task {task_id}: no answer (expected left, right or tie)", path=where, line=line,
                             field="choice")
        if choice not in CHOICES:
            raise InputError(f"task {task_id}: {row['choice']!r} is not left, right or tie", path=where, line=line,
                             field="choice")
        k = key[task_id]
        record: dict[str, Any] = {"judge": row.get("reviewer", "").strip() or reviewer, "item": k.item,
                                  "first": k.left, "second": k.right, "verdict": CHOICES[choice]}
        if k.label is not None:
            record["label"] = k.label
        record.update({"task_id": task_id, "presentation": k.presentation})
        if row.get("comment", "").strip():
            record["comment"] = row["comment"].strip()
        records.append(record)
    missing = [t for t in key if t not in seen]
    if missing:
        raise InputError(f"{len(missing)} task(s) of the key are not on the sheet (first: {missing[0]})",
                         path=where, field="task_id")
    return records
