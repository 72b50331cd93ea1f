"""What every importer shares: the import report, awkward-row bookkeeping, readers and the atomic writer.

An importer turns one foreign file into presentation records (docs/records.md) plus a report. Nothing is dropped
silently: a row that cannot be converted, a null verdict, a game missing, a pair seen in one order only or a
duplicate is listed with its location (`file:line`, or `file[index]` for JSON arrays) and a reason, and
counted.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Concatenate, Literal, ParamSpec, TextIO

from swapjudge.errors import InputError
from swapjudge.reading.textfiles import (
    allow_long_cells,
    atomic_text,
    from_spreadsheet,
    is_stdio,
    read_stdin,
    spreadsheet_cell,
)

Record = dict[str, Any]

# Kinds of awkward rows, in the order the report lists them.
AwkwardKind = Literal[
    "error", "skipped", "null_verdict", "game_missing", "single_order", "duplicate", "warning",
]
AWKWARD_KINDS: tuple[AwkwardKind, ...] = (
    "error", "skipped", "null_verdict", "game_missing", "single_order", "duplicate", "warning",
)
AWKWARD_MEANING: dict[str, str] = {
    "error": "row not converted (unreadable, a required field missing or malformed)",
    "skipped": "row not converted (not a positional pairwise judgment)",
    "null_verdict": "record written with verdict null (judge error, unparsed or missing verdict)",
    "game_missing": "row holds one presentation order only; the other order is absent",
    "single_order": "pair seen in one order only across the input (no twin record)",
    "duplicate": "same call seen again; the later row is kept, this one is not written",
    "warning": "row converted, but one of its fields was unusable and left empty (named in the reason)",
}


@dataclass(frozen=True)
class Awkward:
    """One awkward row: where it is, what kind of trouble, and why."""

    location: str
    kind: AwkwardKind
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"location": self.location, "kind": self.kind, "reason": self.reason}


@dataclass(frozen=True)
class ImportReport:
    """What one file gave: rows read, records written, every awkward row, and file-level notes."""

    path: str
    format: str
    rows: int
    records: int
    awkward: tuple[Awkward, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def counts(self) -> dict[str, int]:
        """Awkward rows per kind (kinds with none are left out)."""
        tally = Counter(a.kind for a in self.awkward)
        return {kind: tally[kind] for kind in AWKWARD_KINDS if tally[kind]}

    def summary_line(self) -> str:
        parts = [f"{self.path}: {self.format}: {self.rows} rows -> {self.records} records"]
        parts += [f"{n} {kind.replace('_', ' ')}" for kind, n in self.counts.items()]
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "rows": self.rows,
            "records": self.records,
            "counts": self.counts,
            "awkward": [a.to_dict() for a in self.awkward],
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class ImportResult:
    """Records from one or more files of one format, and one report per file."""

    records: tuple[Record, ...]
    reports: tuple[ImportReport, ...]

    @property
    def awkward(self) -> tuple[Awkward, ...]:
        return tuple(a for r in self.reports for a in r.awkward)

    def to_dict(self) -> dict[str, Any]:
        return {"records": len(self.records), "files": [r.to_dict() for r in self.reports]}


@dataclass
class FileImport:
    """Mutable collector an importer fills while it reads one file; `finish()` freezes it."""

    path: Path
    format: str
    rows: int = 0
    records: list[Record] = field(default_factory=list)
    awkward: list[Awkward] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Pair keys whose missing twin is already explained by a `game_missing` entry.
    explained: set[tuple[str, int, str, str, str]] = field(default_factory=set)

    def flag(self, location: str, kind: AwkwardKind, reason: str) -> None:
        self.awkward.append(Awkward(location, kind, reason))

    def add(self, record: Record) -> None:
        self.records.append(record)

    def finish(self) -> ImportReport:
        return ImportReport(
            path=str(self.path), format=self.format, rows=self.rows, records=len(self.records),
            awkward=tuple(self.awkward), notes=tuple(self.notes),
        )


def make_record(*, item: Any, first: str, second: str, verdict: str | None, judge: str, round: int = 0,
                label: str | None = None, raw: str | None = None, **extra: Any) -> Record:
    """A presentation record with the record format's fields first, then the importer's extra provenance fields."""
    return {"item": str(item), "first": str(first), "second": str(second), "verdict": verdict,
            "judge": judge, "round": round, "label": label, "raw": raw, **extra}


PairKey = tuple[str, int, str, str, str]


def pair_key(record: Mapping[str, Any]) -> PairKey:
    """(judge, round, item, x, y) with x <= y: the same for both orders of a pair (records from make_record)."""
    a, b = record["first"], record["second"]
    if b < a:
        a, b = b, a
    return (record["judge"], record["round"], record["item"], a, b)


def line_location(path: Path, line: int) -> str:
    return f"{path}:{line}"


def index_location(path: Path, index: int) -> str:
    return f"{path}[{index}]"


# --- readers -------------------------------------------------------------------------------------------


def open_input(path: Path, newline: str | None = None) -> TextIO:
    """A file to import as text (`-`: stdin, read whole)."""
    if is_stdio(path):
        return io.StringIO(read_stdin().decode("utf-8-sig"), newline=newline)
    return path.open(encoding="utf-8", newline=newline)


def read_jsonl(imp: FileImport) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """Yield (line number, location, object) per non-blank line; a non-object line is flagged."""
    try:
        handle = open_input(imp.path)
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", path=str(imp.path)) from None
    with handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            imp.rows += 1
            where = line_location(imp.path, number)
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as err:
                imp.flag(where, "error", f"not valid JSON ({err.msg})")
                continue
            if not isinstance(obj, dict):
                imp.flag(where, "error", f"expected a JSON object, got {type(obj).__name__}")
                continue
            yield number, where, obj


def read_json_array(imp: FileImport) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """Yield (index, location, object) for each element of a JSON array file; non-objects are flagged."""
    try:
        data = json.loads(open_input(imp.path).read())
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", path=str(imp.path)) from None
    except json.JSONDecodeError as err:
        raise InputError(f"not valid JSON ({err.msg})", path=str(imp.path), line=err.lineno) from None
    if not isinstance(data, list):
        raise InputError(f"expected a JSON array of objects, got {type(data).__name__}", path=str(imp.path))
    for index, obj in enumerate(data):
        imp.rows += 1
        where = index_location(imp.path, index)
        if not isinstance(obj, dict):
            imp.flag(where, "error", f"expected a JSON object, got {type(obj).__name__}")
            continue
        yield index, where, obj


def read_csv(imp: FileImport, required: Sequence[str], delimiter: str | None = None
             ) -> Iterator[tuple[int, str, dict[str, str]]]:
    """Yield (line number, location, row) per data row; a missing required column fails the file."""
    if delimiter is None:
        delimiter = "\t" if imp.path.suffix.lower() in (".tsv", ".tab") else ","
    try:
        handle = open_input(imp.path, newline="")
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", path=str(imp.path)) from None
    with handle:
        allow_long_cells()  # a judge's reply in one cell can be longer than csv's default limit
        reader = csv.DictReader(handle, delimiter=delimiter)
        header = reader.fieldnames or []
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(
                f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                f"(header has: {', '.join(header) or 'nothing'})",
                path=str(imp.path), line=1,
            )
        start = reader.line_num + 1
        for row in reader:
            imp.rows += 1
            # a quoted newline makes a row span lines: name the line it starts on
            # the `'` a CSV swapjudge wrote puts before a formula-like text, taken off (spreadsheet_cell)
            yield start, line_location(imp.path, start), {k: from_spreadsheet(v) if isinstance(v, str) else v
                                                          for k, v in row.items()}
            start = reader.line_num + 1


# --- whole-input checks --------------------------------------------------------------------------------


def dedupe(imports: Sequence[FileImport]) -> None:
    """Keep the last record of each (judge, round, item, first, second); flag earlier ones."""
    seen: dict[tuple[str, int, str, str, str], tuple[FileImport, int]] = {}
    dropped = False
    for imp in imports:
        for index, rec in enumerate(imp.records):
            key = (rec["judge"], rec["round"], rec["item"], rec["first"], rec["second"])
            if key in seen:
                prev_imp, prev_index = seen[key]
                prev = prev_imp.records[prev_index]
                prev_imp.flag(str(prev.get("_where", prev_imp.path)), "duplicate",
                              f"{rec['first']} first vs {rec['second']} on item {rec['item']} "
                              f"seen again at {rec.get('_where', imp.path)}")
                prev_imp.records[prev_index] = {}
                dropped = True
            seen[key] = (imp, index)
    if dropped:
        for imp in imports:
            imp.records[:] = [r for r in imp.records if r]


def check_pairs(imports: Sequence[FileImport]) -> None:
    """Flag every record whose swapped twin is absent (unless a `game_missing` entry already explains it)."""
    explained: set[PairKey] = set()
    keys: list[list[PairKey | None]] = []
    for imp in imports:
        explained |= imp.explained
        # an identical-answer probe call (first == second) has one order only by nature
        keys.append([pair_key(r) if r["first"] != r["second"] else None for r in imp.records])
    calls = Counter(k for file_keys in keys for k in file_keys if k is not None)
    lonely: Counter[int] = Counter()
    for imp, file_keys in zip(imports, keys, strict=True):
        for rec, key in zip(imp.records, file_keys, strict=True):
            if key is None or calls[key] != 1:
                continue
            lonely[id(imp)] += 1
            if key in explained:
                continue
            imp.flag(str(rec.get("_where", imp.path)), "single_order",
                     f"{rec['first']} first vs {rec['second']} on item {rec['item']}: "
                     f"the swapped order ({rec['second']} first) is absent")
    # analyze reads input where no pair has both orders as single-order data without being told
    single_order = bool(calls) and all(n == 1 for n in calls.values())
    for imp in imports:
        if not lonely[id(imp)]:
            continue
        if single_order:
            imp.notes.append(f"{lonely[id(imp)]} record(s) have no swapped twin and no pair has both orders: "
                             "single-order data, for which `swapjudge analyze` reports the first-slot rate and "
                             "verdict split but no swap-consistency")
        else:
            imp.notes.append(f"{lonely[id(imp)]} record(s) have no swapped twin: `swapjudge analyze "
                             "--allow-unpaired` counts their pairs as incomplete (else they are an error)")


ReadOptions = ParamSpec("ReadOptions")


def read_paths(paths: Sequence[Path], format: str, read: Callable[Concatenate[FileImport, ReadOptions], None],
               *args: ReadOptions.args, **kwargs: ReadOptions.kwargs) -> list[FileImport]:
    """One FileImport per path, each filled by `read(imp, *args, **kwargs)`; `finish()` them together."""
    imports = []
    for path in paths:
        imp = FileImport(Path(path), format)
        read(imp, *args, **kwargs)
        imports.append(imp)
    return imports


def finish(imports: Sequence[FileImport], *, pair_check: bool = True) -> ImportResult:
    """Dedupe, check pairs, strip bookkeeping fields, freeze."""
    dedupe(imports)
    if pair_check:
        check_pairs(imports)
    records: list[Record] = []
    for imp in imports:
        for rec in imp.records:
            rec.pop("_where", None)
            records.append(rec)
    return ImportResult(records=tuple(records), reports=tuple(imp.finish() for imp in imports))


# --- writers -------------------------------------------------------------------------------------------


def write_records(records: Iterable[Mapping[str, Any]], path: Path) -> int:
    """Write records as JSON Lines (CSV when the name ends in .csv, Parquet in .parquet), atomically."""
    from swapjudge.reading.parquet_out import is_parquet_path, write_records_parquet

    if is_parquet_path(path):
        return write_records_parquet(records, path)
    rows = list(records)
    with atomic_text(path, create_parent=False) as handle:
        if Path(path).suffix.lower() == ".csv":
            columns: list[str] = []
            for row in rows:
                columns += [k for k in row if k not in columns]
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            for row in rows:
                writer.writerow({k: "" if v is None else spreadsheet_cell(v) for k, v in row.items()})
        else:
            encode = json.JSONEncoder(ensure_ascii=False).encode  # one encoder, not one per row
            for row in rows:
                handle.write(encode(row) + "\n")
    return len(rows)


def write_json(payload: Any, path: Path) -> None:
    """Write one JSON document (e.g. an import report), atomically."""
    with atomic_text(path, create_parent=False) as handle:
        json.dump(payload, handle, indent=2, ensure_ascii=False)
        handle.write("\n")
