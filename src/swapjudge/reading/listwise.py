"""Listwise (best-of-N) records (docs/records.md): one judge call that saw N >= 3 answers in `slots` (slot 1 first)
and picked one, `pick` (1-based, null when the judge gave no usable answer), optionally ranking them all.

Read from JSON Lines (a path, `-` for stdin), a list of dicts, or a polars DataFrame; every problem is one
`InputError` naming the file, line and field. `is_listwise` tells a file of listwise records from pairwise ones
by its first record, so `analyze` and `rank` take either.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swapjudge.errors import InputError
from swapjudge.reading.textfiles import decode_text, is_stdio, json_lines, looks_like_csv, read_bytes, read_stdin

MIN_SLOTS = 3
LISTWISE_FIELDS = ("slots", "pick")
# the pairwise record's own fields: a record holding them is not a listwise one
PAIRWISE_FIELDS = ("first", "second", "verdict")
HEAD_BYTES = 4 << 20  # the most `is_listwise` reads of a file to find its first record


@dataclass(frozen=True)
class ListwiseCall:
    """One best-of-N call: the systems in the order shown, the slot picked (1-based; None: no usable answer) and,
    when the judge ranked them, the slots from best to worst."""

    item: str
    slots: tuple[str, ...]
    pick: int | None
    judge: str = ""
    round: int = 0
    ranking: tuple[int, ...] | None = None
    label: str | None = None
    line: int | None = None
    # False when `slots` is not the order the judge saw (a source that does not record it): no slot figure then
    order_shown: bool = True

    @property
    def n(self) -> int:
        return len(self.slots)

    @property
    def picked(self) -> str | None:
        """The system the judge picked (None: no usable answer)."""
        return None if self.pick is None else self.slots[self.pick - 1]

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "round": self.round, "item": self.item, "slots": list(self.slots),
                "pick": self.pick, "ranking": None if self.ranking is None else list(self.ranking),
                "label": self.label, **({} if self.order_shown else {"order_shown": False})}


@dataclass(frozen=True)
class ListwiseRecords:
    """Validated listwise calls, in file order, and where they came from."""

    calls: tuple[ListwiseCall, ...]
    source: str

    @property
    def judges(self) -> list[str]:
        return sorted({c.judge for c in self.calls})

    def of_judge(self, judge: str) -> tuple[ListwiseCall, ...]:
        return tuple(c for c in self.calls if c.judge == judge)

    def __len__(self) -> int:
        return len(self.calls)


def _first_record(data: bytes, path: str) -> Any:
    text = decode_text(data, path)
    for line in text.splitlines():
        if line.strip():
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def _looks_listwise(row: Any) -> bool:
    return isinstance(row, Mapping) and "slots" in row and not any(k in row for k in PAIRWISE_FIELDS)


def is_listwise(source: Any) -> bool:
    """Whether `source` holds listwise records: its first record has `slots` and none of `first`, `second`,
    `verdict`. A path is read for its first line only; stdin (`-`) is read whole once (`read_stdin`, which keeps
    the bytes for whichever reader then reads them) and tested the same way."""
    if isinstance(source, ListwiseRecords):
        return True
    if isinstance(source, str | Path):
        path = Path(source)
        if is_stdio(path):
            data = read_stdin()
            if data.startswith(b"SQLite format 3") or looks_like_csv(data):
                return False
            try:
                return _looks_listwise(_first_record(data, "<stdin>"))
            except InputError:
                return False  # not UTF-8: the records reader names the problem
        if path.suffix.lower() in (".parquet", ".pq", ".csv", ".tsv") or not path.is_file():
            return False
        with path.open("rb") as handle:
            start = handle.read(HEAD_BYTES)  # the first record is all it reads: never a whole store or file
        if start.startswith(b"SQLite format 3"):
            return False
        head = next((line for line in start.split(b"\n") if line.strip()), b"")
        try:
            return _looks_listwise(json.loads(head.decode("utf-8-sig")))
        except ValueError:
            return False
    if isinstance(source, list | tuple):
        return bool(source) and _looks_listwise(source[0])
    columns = getattr(source, "columns", None)
    if columns is not None:
        names = list(columns)
        return "slots" in names and not any(k in names for k in PAIRWISE_FIELDS)
    return False


def load_listwise(source: str | Path | Iterable[Mapping[str, Any]] | Any) -> ListwiseRecords:
    """Validated listwise records from a JSON Lines path (`-`: stdin), a list of dicts or a polars DataFrame.
    A problem is an `InputError` naming the file (or `records row N`), the line and the field."""
    if isinstance(source, ListwiseRecords):
        return source
    if isinstance(source, str | Path):
        path = Path(source)
        data = read_bytes(path)
        name = "<stdin>" if is_stdio(path) else str(path)
        if path.suffix.lower() in (".csv", ".tsv") or (is_stdio(path) and looks_like_csv(data)):
            raise InputError("listwise records are read from JSON Lines (a CSV cell cannot hold the list `slots`)",
                             path=name)
        rows = list(json_lines(decode_text(data, name), name))
        return _validated(rows, name, lines=True)
    if hasattr(source, "to_dicts"):  # a polars DataFrame
        rows = list(enumerate(source.to_dicts(), start=1))
        return _validated(rows, "DataFrame", lines=False)
    if isinstance(source, list | tuple):
        return _validated(list(enumerate(source, start=1)), "records", lines=False)
    raise InputError(f"cannot read listwise records from a {type(source).__name__}: give a path, a list of dicts "
                     "or a polars DataFrame")


def _validated(rows: list[tuple[int, Any]], source: str, *, lines: bool) -> ListwiseRecords:
    if not rows:
        raise InputError("no records", path=source)
    calls: list[ListwiseCall] = []
    seen: dict[tuple[str, int, str, tuple[str, ...]], int] = {}
    shown: dict[tuple[str, str], tuple[frozenset[str], int]] = {}
    for number, row in rows:
        def fail(message: str, field: str | None = None, number: int = number) -> InputError:
            if lines:
                return InputError(message, path=source, line=number, field=field)
            return InputError(message, path=f"{source} row {number}", field=field)

        call = _call(row, number, fail)
        key = (call.judge, call.round, call.item, call.slots)
        if key in seen:
            raise fail(f"the same call (judge, round, item and slot order) is already on line {seen[key]}"
                       if lines else f"the same call (judge, round, item and slot order) is already row {seen[key]}",
                       "slots")
        seen[key] = number
        systems = frozenset(call.slots)
        before = shown.setdefault((call.judge, call.item), (systems, number))
        if before[0] != systems:
            raise fail(f"item {call.item!r} showed other systems before ({', '.join(sorted(before[0]))}, "
                       f"{'line' if lines else 'row'} {before[1]}): every call of an item shows the same N answers",
                       "slots")
        calls.append(call)
    return ListwiseRecords(tuple(calls), source)


def _text(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    return None


def _slot_number(value: Any) -> int | None:
    """A 1-based slot from an integer (or a float holding one, as a DataFrame may); None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _call(row: Any, number: int, fail: Any) -> ListwiseCall:
    if not isinstance(row, Mapping):
        raise fail("a record must be a JSON object")
    for name in ("item", "slots"):
        if row.get(name) is None:
            raise fail("missing (a listwise record needs item, slots and pick)", name)
    if "pick" not in row:
        raise fail("missing: the 1-based slot the judge picked, or null when it gave no usable answer", "pick")
    item = _text(row["item"])
    if item is None or not item:
        raise fail("must be a non-empty string", "item")
    slots_in = row["slots"]
    if not isinstance(slots_in, list | tuple):
        raise fail("must be a list of the systems in the order shown, slot 1 first", "slots")
    slots: list[str] = []
    for index, value in enumerate(slots_in, start=1):
        shown = _text(value)
        if not shown:
            raise fail(f"slot {index} must name a system (a non-empty string)", "slots")
        if shown in slots:
            raise fail(f"{shown!r} is in slot {slots.index(shown) + 1} and slot {index}: each system is shown once",
                       "slots")
        slots.append(shown)
    n = len(slots)
    if n < MIN_SLOTS:
        raise fail(f"has {n} answer{'s' if n != 1 else ''}: a listwise call shows at least {MIN_SLOTS} "
                   "(two answers are a pairwise record: first, second, verdict)", "slots")
    pick = row["pick"]
    if pick is not None:
        pick = _slot_number(pick)
        if pick is None or not 1 <= pick <= n:
            raise fail(f"must be a slot from 1 to {n} (1-based) or null, got {row['pick']!r}", "pick")
    ranking = row.get("ranking")
    if ranking is not None:
        if not isinstance(ranking, list | tuple) or not ranking:
            raise fail("must be a list of slots from best to worst (1-based)", "ranking")
        order = [_slot_number(v) for v in ranking]
        if any(s is None or not 1 <= s <= n for s in order):
            raise fail(f"every entry must be a slot from 1 to {n}, got {list(ranking)!r}", "ranking")
        if len(set(order)) != len(order):
            raise fail(f"names a slot twice: {list(ranking)!r}", "ranking")
        if pick is not None and order[0] != pick:
            raise fail(f"ranks slot {order[0]} best but the pick is slot {pick}", "ranking")
        if pick is None:
            pick = order[0]
        ranking = tuple(int(s) for s in order if s is not None)
    judge = row.get("judge")
    if judge is None:
        judge = ""
    elif not isinstance(judge, str):
        raise fail("must be a string", "judge")
    round_ = row.get("round", 0)
    round_ = 0 if round_ is None else _slot_number(round_)
    if round_ is None or round_ < 0:
        raise fail(f"must be a whole number >= 0, got {row.get('round')!r}", "round")
    label = row.get("label")
    if label is not None:
        label = _text(label)
        if label is None or label not in slots:
            raise fail(f"must name one of the systems shown ({', '.join(slots)}), got {row.get('label')!r}",
                       "label")
    order_shown = row.get("order_shown", True)
    if order_shown is None:
        order_shown = True
    if not isinstance(order_shown, bool):
        raise fail(f"must be true or false (false: `slots` is not the order the judge saw), got {order_shown!r}",
                   "order_shown")
    return ListwiseCall(item, tuple(slots), pick, judge, round_, ranking, label, number, order_shown)
