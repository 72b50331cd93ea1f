"""Blind review sheets: a pairs file turned into 2n presentations (each pair in both orders, a seeded coin choosing
which answer is on the left first, ids given after shuffling), with system names kept in a separate key; the tally
turns a filled sheet back into presentation records whose judge is the reviewer, so people are analysed by exactly
the same code as models."""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from swapjudge.core.pairs_file import PairItem
from swapjudge.core.textfiles import csv_rows, read_text
from swapjudge.errors import InputError, SwapjudgeError
from swapjudge.review.queue import write_table

SHEET_FIELDS = ("task_id", "prompt", "answer_left", "answer_right", "choice", "reviewer", "comment")
KEY_FIELDS = ("task_id", "item", "presentation", "left", "right", "label")
CHOICES = {"left": "first", "l": "first", "right": "second", "r": "second", "tie": "tie", "t": "tie"}


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
