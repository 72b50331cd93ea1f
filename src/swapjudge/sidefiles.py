"""Side files the probes read next to the records: answer texts (a pairs file) and labels (item + label).

Pairs file (the one a run judges): JSON Lines `{"item": ..., "prompt": ..., "answers": {"sys": "text", ...},
"label": "sys"}` (label optional), or CSV with `item`, optional `label`, and one `answer.<sys>` column per
system. Labels file: CSV/TSV or JSON Lines with `item` and `label` columns (a pairs file works too).
Errors name the file, line and field.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from swapjudge.errors import InputError


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("no such file", path=str(path)) from None
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text (byte {err.start})", path=str(path)) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", path=str(path)) from None


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every record of a JSON Lines or CSV/TSV file."""
    text = _read_text(path)
    if path.suffix.lower() in (".csv", ".tsv"):
        head = text.split("\n", 1)[0]
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t" if head.count("\t") > head.count(",")
                                else ",")
        previous = 1
        for row in reader:
            number, previous = previous + 1, reader.line_num
            if None in row:
                raise InputError("more cells than header columns", path=str(path), line=number)
            yield number, dict(row)
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(f"not valid JSON ({err.msg} at column {err.colno})", path=str(path),
                             line=number) from None
        if not isinstance(obj, dict):
            raise InputError("a record must be a JSON object", path=str(path), line=number)
        yield number, obj


def _name(value: Any, path: Path, line: int, field: str) -> str:
    if value is None or isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise InputError(f"must be a non-empty string or integer, got {json.dumps(value)}", path=str(path),
                         line=line, field=field)
    return str(value)


def load_answer_texts(path: str | Path) -> dict[tuple[str, str], str]:
    """Answer texts keyed by (item, system) from a pairs file."""
    path = Path(path)
    texts: dict[tuple[str, str], str] = {}
    for line, row in _rows(path):
        item = _name(row.get("item"), path, line, "item")
        answers = row.get("answers")
        if answers is None:
            answers = {k[len("answer."):]: v for k, v in row.items() if k.startswith("answer.") and v}
        if not isinstance(answers, dict) or not answers:
            raise InputError("expected an object of answer texts by system (or answer.<system> columns)",
                             path=str(path), line=line, field="answers")
        for system, answer in answers.items():
            if not isinstance(answer, str):
                raise InputError(f"must be a string, got {json.dumps(answer)}", path=str(path), line=line,
                                 field=f"answers.{system}")
            if (item, str(system)) in texts:
                raise InputError(f"item {item!r} already has an answer for {system!r}", path=str(path), line=line,
                                 field=f"answers.{system}")
            texts[(item, str(system))] = answer
    if not texts:
        raise InputError("no answers", path=str(path))
    return texts


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
