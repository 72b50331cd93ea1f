"""Blind review sheets: a pairs file turned into 2n presentations (each pair in both orders, a seeded coin choosing
which answer is on the left first, ids given after shuffling), with system names kept in a separate key; the tally
turns a filled sheet back into presentation records whose judge is the reviewer, so people are analysed by exactly
the same code as models."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from swapjudge.errors import InputError, SwapjudgeError
from swapjudge.reading.pairs_file import PairItem
from swapjudge.reading.textfiles import is_stdio
from swapjudge.review.queue import write_table
from swapjudge.review.spreadsheet import read_sheet_table

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
               b: str | None = None, source: str | None = None,
               only: Sequence[tuple[str, str, str]] | None = None) -> Sheet:
    """Both presentations of every pair, shuffled, ids assigned after the shuffle.

    Each item must have exactly two answers, or name the two systems with `a` and `b`. A seeded coin picks the
    left answer of the first presentation; the second presentation is its exact swap. `only` restricts the sheet
    to these (item, system, system) pairs (e.g. the ones a judge could not settle), in the pairs file's order.
    """
    if seed is None:
        seed = secrets.randbits(32)
    rng = np.random.default_rng(seed)
    chosen: list[tuple[PairItem, str, str]] = []
    if only is not None:
        chosen = _chosen_pairs(items, only, source)
    for it in items if only is None else ():
        if a is not None and b is not None:
            missing = [s for s in (a, b) if s not in it.answers]
            if missing:
                raise InputError(f"item {it.item!r} has no answer from {missing[0]!r}", path=source,
                                 line=it.line, field="answers")
            x, y = a, b
        elif len(it.answers) == 2:
            x, y = sorted(it.answers)
        else:
            raise InputError(f"item {it.item!r} has {len(it.answers)} answers: name the two systems with {{a}} and "
                             "{b}", path=source, line=it.line, field="answers", arguments=("a", "b"))
        chosen.append((it, x, y))
    if not chosen:
        raise InputError("no pairs to put on the sheet", path=source)
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


def _chosen_pairs(items: Sequence[PairItem], only: Sequence[tuple[str, str, str]],
                  source: str | None) -> list[tuple[PairItem, str, str]]:
    """The requested (item, x, y) pairs with their pairs-file items, in file order; each must have both answers."""
    by_item = {it.item: it for it in items}
    wanted = list(dict.fromkeys((item, *sorted((x, y))) for item, x, y in only))
    for item, x, y in wanted:
        it = by_item.get(item)
        if it is None:
            raise InputError(f"item {item!r} is in the records but not in the pairs file", path=source)
        missing = [name for name in (x, y) if name not in it.answers]
        if missing:
            raise InputError(f"item {item!r} has no answer from {missing[0]!r}", path=source, line=it.line,
                             field="answers")
    order = {it.item: n for n, it in enumerate(items)}
    return [(by_item[item], x, y) for item, x, y in sorted(wanted, key=lambda w: order[w[0]])]


def write_sheet(sheet: Sheet, sheet_path: str | Path, key_path: str | Path) -> None:
    """The sheet (no system names, no item ids) and its key (which system sat where): both or neither. Each is
    written in full beside its place first, and only then do both replace their files, so a full disk never
    leaves a sheet without its key (a sheet whose answers nobody could map back to systems)."""
    sheet_path, key_path = Path(sheet_path), Path(key_path)
    if sheet_path.resolve() == key_path.resolve():
        raise SwapjudgeError("the sheet and the key must be different files")
    if is_stdio(sheet_path) or is_stdio(key_path):  # one of them on stdout: nothing to stage
        write_table([t.sheet_row() for t in sheet.tasks], sheet_path, SHEET_FIELDS)
        write_table([t.key_row() for t in sheet.tasks], key_path, KEY_FIELDS)
        return
    staged = [(_beside(sheet_path), sheet_path), (_beside(key_path), key_path)]
    tables = [([t.sheet_row() for t in sheet.tasks], SHEET_FIELDS), ([t.key_row() for t in sheet.tasks], KEY_FIELDS)]
    try:
        for (written, final), (rows, fields) in zip(staged, tables, strict=True):
            try:
                write_table(rows, written, fields)
            except SwapjudgeError as err:  # named by the file it was for, not by the file staged for it
                why = str(err).removeprefix(f"{written}: ")
                raise SwapjudgeError(f"{final}: {why}; neither the sheet nor its key was written") from None
        for written, final in staged:
            os.replace(written, final)
    finally:
        for written, _ in staged:
            written.unlink(missing_ok=True)


def _beside(path: Path) -> Path:
    """A hidden file in `path`'s folder with its suffix (which says the format), to write `path`'s content to."""
    return path.with_name(f".{path.stem}.{secrets.token_hex(4)}.partial{path.suffix}")


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
    """(spreadsheet row, row) for each non-blank row, as a spreadsheet may have saved the file; header checked."""
    yield from read_sheet_table(path, required).rows


def load_key(path: str | Path) -> dict[str, KeyRow]:
    path = Path(path)
    key: dict[str, KeyRow] = {}
    for line, row in _csv_rows(path, KEY_FIELDS):
        for name in ("task_id", "item", "left", "right"):
            if not row[name].strip():
                raise InputError("empty", path=str(path), line=line, field=name)
        row["presentation"] = row["presentation"].strip()
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


@dataclass(frozen=True)
class SheetProblem:
    source: str
    row: int | None  # the spreadsheet's row number (header = 1); None for the sheet as a whole
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.source if self.row is None else f"{self.source} row {self.row}"
        return ": ".join(p for p in (where, f"field `{self.field}`" if self.field else "", self.message) if p)


class SheetProblems(InputError):
    """Every problem of the filled sheets at once: one line for one problem, else a count and one line each."""

    def __init__(self, problems: Sequence[SheetProblem]) -> None:
        self.problems = tuple(problems)
        first = problems[0]
        super().__init__(first.message, path=first.source, field=first.field)
        if len(problems) > 1:
            text = f"{len(problems)} problems in the filled sheet(s):\n" + "\n".join(f"  {p}" for p in problems)
        else:
            text = str(first)
        self.args = (text,)


@dataclass(frozen=True)
class SheetTally:
    """The records of filled sheets (judge = reviewer), the tasks left unanswered (only with `allow_partial`),
    and reading warnings (an encoding guessed)."""

    records: tuple[dict[str, Any], ...]
    unanswered: tuple[tuple[str, str, str], ...]  # (sheet, reviewer, task id)
    warnings: tuple[str, ...]

    @property
    def reviewers(self) -> tuple[str, ...]:
        return tuple(sorted({str(r["judge"]) for r in self.records}))


def tally_sheets(sheet_paths: Sequence[str | Path], key_path: str | Path, *, reviewer: str | None = None,
                 allow_partial: bool = False) -> SheetTally:
    """Presentation records from filled sheets (one or several, e.g. one per reviewer): first/second are the
    systems on the left/right, the verdict the reviewer's choice (left = first), the judge the row's `reviewer`
    cell, else `reviewer`, else the sheet's file name (several sheets) or "reviewer" (one). Separators `,` `;`
    and tab, UTF-8 (with or without BOM) or Windows-1252, blank rows and header case are all taken as
    spreadsheets save them. Every problem is collected and raised at once (SheetProblems), with row numbers."""
    key = load_key(key_path)
    key_name = Path(key_path).name
    problems: list[SheetProblem] = []
    records: list[dict[str, Any]] = []
    unanswered: list[tuple[str, str, str]] = []
    warnings: list[str] = []
    seen: dict[tuple[str, str], tuple[str, int]] = {}
    for path in sheet_paths:
        table = read_sheet_table(path, ("task_id", "choice"))
        warnings += table.warnings
        default = reviewer or (Path(path).stem if len(sheet_paths) > 1 else "reviewer")
        on_sheet: dict[str, set[str]] = {}

        def problem(row: int | None, field: str | None, message: str, source: str = table.source) -> None:
            problems.append(SheetProblem(source, row, field, message))

        for number, row in table.rows:
            if "\x00extra" in row:
                problem(number, None, "more cells than header columns")
                continue
            task_id = row["task_id"].strip()
            if not task_id:
                problem(number, "task_id", "empty")
                continue
            if task_id not in key:
                problem(number, "task_id", f"unknown task id {task_id!r} (not in {key_name})")
                continue
            judge = row.get("reviewer", "").strip() or default
            on_sheet.setdefault(judge, set()).add(task_id)
            if (judge, task_id) in seen:
                first_sheet, first_row = seen[(judge, task_id)]
                where = f"row {first_row}" if first_sheet == table.source else f"{first_sheet} row {first_row}"
                problem(number, "task_id", f"task {task_id!r} answered twice by {judge!r} (first on {where})")
                continue
            seen[(judge, task_id)] = (table.source, number)
            choice = row["choice"].strip().lower()
            if not choice:
                if allow_partial:
                    unanswered.append((table.source, judge, task_id))
                else:
                    problem(number, "choice", f"task {task_id}: no answer (expected left, right or tie)")
                continue
            if choice not in CHOICES:
                problem(number, "choice", f"task {task_id}: {row['choice']!r} is not left, right or tie")
                continue
            k = key[task_id]
            record: dict[str, Any] = {"judge": judge, "item": k.item, "first": k.left, "second": k.right,
                                      "verdict": CHOICES[choice]}
            if k.label is not None:
                record["label"] = k.label
            record.update({"task_id": task_id, "presentation": k.presentation})
            if row.get("comment", "").strip():
                record["comment"] = row["comment"].strip()
            records.append(record)
        for judge, tasks in (on_sheet or {default: set()}).items():
            missing = [t for t in key if t not in tasks]
            if not missing:
                continue
            if allow_partial:
                unanswered += [(table.source, judge, t) for t in missing]
            else:
                problem(None, "task_id", f"{len(missing)} task(s) of the key are not on the sheet"
                        + (f" for {judge!r}" if len(on_sheet) > 1 else "") + f" (first: {missing[0]})")
    if problems:
        raise SheetProblems(problems)
    if not records:
        raise InputError("no answered task in the sheet(s): nothing to tally",
                         path=", ".join("<stdin>" if str(p) == "-" else str(p) for p in sheet_paths))
    return SheetTally(tuple(records), tuple(unanswered), tuple(warnings))


def sheet_records(sheet_path: str | Path, key_path: str | Path, *, reviewer: str = "reviewer") -> list[dict[str, Any]]:
    """Presentation records from one completely filled sheet (see `tally_sheets`)."""
    return list(tally_sheets([sheet_path], key_path, reviewer=reviewer).records)
