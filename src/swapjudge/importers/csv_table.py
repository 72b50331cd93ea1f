"""Any table of judge calls (CSV, or TSV by extension), one row per call, mapped by naming its columns.

`--item COL --first COL --second COL --verdict COL --map A=first,B=second,C=tie [--judge COL] [--label COL]
[--round COL] [--keep COL ...]`. Each `--keep` column is copied into the records under its own name (e.g. a
task group for `segments --by`). `--map` says what each verdict value means, in the presentation frame of
that row (`first` = the answer in the `--first` column won). Targets: first, second, tie, null. An empty
cell is a null verdict; a value not in the map is reported and written as null.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from swapjudge.errors import InputError
from swapjudge.importers.base import FileImport, ImportResult, finish, make_record, read_csv, read_paths

FORMAT = "csv"
TARGETS = {"first": "first", "second": "second", "tie": "tie", "null": None, "none": None}


@dataclass(frozen=True)
class CsvColumns:
    """Which column holds what; `judge`, `label`, `round` and the kept columns are optional."""

    item: str
    first: str
    second: str
    verdict: str
    judge: str | None = None
    label: str | None = None
    round: str | None = None
    keep: tuple[str, ...] = ()

    @property
    def required(self) -> tuple[str, ...]:
        optional = tuple(c for c in (self.judge, self.label, self.round) if c)
        return (self.item, self.first, self.second, self.verdict, *optional, *self.keep)


# record fields a kept column may not overwrite (docs/records.md)
RECORD_FIELDS = ("item", "first", "second", "verdict", "judge", "round", "label", "raw")


def check_keep(keep: Sequence[str]) -> tuple[str, ...]:
    """The kept column names, each once; one that would overwrite a record field is an error."""
    clash = [c for c in keep if c in RECORD_FIELDS]
    if clash:
        raise InputError(f"{{keep}} {clash[0]} would overwrite the record field of that name; rename the column "
                         "or map it with the option for that field", arguments=("keep",))
    return tuple(dict.fromkeys(keep))


def parse_map(text: str) -> dict[str, str | None]:
    """`A=first,B=second,C=tie` -> {"A": "first", ...}; raises InputError naming the bad entry."""
    mapping: dict[str, str | None] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        value, sep, target = entry.rpartition("=")
        if not sep or target.strip().lower() not in TARGETS:
            raise InputError(f"{{map}} entry {entry!r} must be VALUE=first|second|tie|null", arguments=("map",))
        mapping[value.strip()] = TARGETS[target.strip().lower()]
    if not mapping:
        raise InputError("{map} is empty; give e.g. A=first,B=second,C=tie", arguments=("map",))
    return mapping


def read_file(imp: FileImport, columns: CsvColumns, mapping: Mapping[str, str | None], *,
              judge_name: str | None = None, delimiter: str | None = None) -> None:
    for _line, where, row in read_csv(imp, columns.required, delimiter):
        round_value = 0
        if columns.round and (row.get(columns.round) or "").strip():
            try:
                round_value = int(str(row[columns.round]).strip())
            except ValueError:
                imp.flag(where, "error", f"{columns.round} {row[columns.round]!r} is not an integer")
                continue
        empty = [c for c in (columns.item, columns.first, columns.second) if not (row.get(c) or "").strip()]
        if empty:
            imp.flag(where, "error", f"empty {', '.join(empty)}")
            continue
        value = (row.get(columns.verdict) or "").strip()
        if not value:
            verdict = None
            imp.flag(where, "null_verdict", f"{columns.verdict} is empty")
        elif value in mapping:
            verdict = mapping[value]
            if verdict is None:
                imp.flag(where, "null_verdict", f"{columns.verdict} {value!r} maps to null")
        else:
            verdict = None
            imp.flag(where, "null_verdict",
                     f"{columns.verdict} {value!r} is not in --map ({', '.join(mapping)}); written as null")
        if judge_name is not None:
            judge = judge_name
        else:
            judge = (row.get(columns.judge) or "").strip() if columns.judge else ""
        label = (row.get(columns.label) or "").strip() or None if columns.label else None
        imp.add(make_record(
            item=row[columns.item].strip(), first=row[columns.first].strip(),
            second=row[columns.second].strip(), verdict=verdict, judge=judge, round=round_value,
            label=label, _where=where, **{c: row[c] for c in columns.keep},
        ))


def import_csv(paths: Sequence[Path], *, columns: CsvColumns, mapping: Mapping[str, str | None],
               judge_name: str | None = None, delimiter: str | None = None) -> ImportResult:
    """Presentation records (one per row) from any table of judge calls."""
    return finish(read_paths(paths, FORMAT, read_file, columns, mapping, judge_name=judge_name, delimiter=delimiter))
