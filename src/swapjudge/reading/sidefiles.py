"""Side files the probes read next to the records: answer texts (a pairs file) and labels (item + label).

Pairs file: the one a run judges, read by `swapjudge.reading.pairs_file.load_pairs` (JSON Lines `{"item", "prompt",
"answers": {system: text}, "label"}` or CSV with `answer.<system>` columns). Labels file: CSV/TSV or JSON Lines
with `item` and `label` columns (a pairs file works too).
Errors name the file, line and field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from swapjudge.errors import InputError
from swapjudge.reading.pairs_file import load_pairs
from swapjudge.reading.textfiles import csv_rows, json_lines, read_text


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every record of a JSON Lines or CSV/TSV file."""
    text = read_text(path)
    if path.suffix.lower() in (".csv", ".tsv"):
        head = text.split("\n", 1)[0]
        yield from csv_rows(text, str(path), delimiter="\t" if head.count("\t") > head.count(",") else ",")
        return
    for number, obj in json_lines(text, str(path)):
        if not isinstance(obj, dict):
            raise InputError("a record must be a JSON object", path=str(path), line=number)
        yield number, obj


def _name(value: Any, path: Path, line: int, field: str) -> str:
    if value is None or isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise InputError(f"must be a non-empty string or integer, got {json.dumps(value)}", path=str(path),
                         line=line, field=field)
    return str(value)


def load_answer_texts(path: str | Path) -> dict[tuple[str, str], str]:
    """Answer texts keyed by (item, system) from a pairs file, read by the runner's reader."""
    return {(it.item, system): text for it in load_pairs(path).items for system, text in it.answers.items()}


def load_labels(path: str | Path) -> dict[str, str]:
    """Labels keyed by item: the identity of the better answer, or "tie"."""
    path = Path(path)
    labels: dict[str, str] = {}
    for line, row in _rows(path):
        item = _name(row.get("item"), path, line, "item")
        if "label" not in row:
            raise InputError("missing", path=str(path), line=line, field="label")
        if row["label"] in (None, ""):
            continue  # an unlabelled item is allowed (e.g. a pairs file with some labels)
        label = _name(row["label"], path, line, "label")
        if labels.get(item, label) != label:
            raise InputError(f"item {item!r} already labelled {labels[item]!r}", path=str(path), line=line,
                             field="label")
        labels[item] = label
    if not labels:
        raise InputError("no labels", path=str(path))
    return labels


def texts_from_records(frame: pl.DataFrame) -> dict[tuple[str, str], str]:
    """Answer texts carried by the records themselves in `first_text` / `second_text` fields (empty if none)."""
    texts: dict[tuple[str, str], str] = {}
    for slot in ("first", "second"):
        column = f"{slot}_text"
        if column not in frame.columns:
            continue
        rows = frame.select("item", slot, pl.col(column).cast(pl.String)).drop_nulls().iter_rows()
        for item, system, text in rows:
            texts.setdefault((item, system), text)
    return texts


def with_labels(frame: pl.DataFrame, labels: dict[str, str]) -> pl.DataFrame:
    """Records with the `label` column taken from a labels file (items it does not name keep their own)."""
    mapped = pl.col("item").replace_strict(labels, default=None, return_dtype=pl.String)
    return frame.with_columns(pl.coalesce(mapped, pl.col("label")).alias("label"))
