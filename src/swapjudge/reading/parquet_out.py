"""Presentation records written as Parquet (`export --format parquet`, `import ... -o x.parquet`): one column per
field, typed where every value agrees, atomically (a temporary file beside the target, then renamed).

A column whose values mix types (items that are integers in some records and text in others, an extra field
holding objects) is written as text, as the records loaders read ids anyway (`reading.records`: an integer id is
its text); an object or a list is its JSON text. The id fields are always text, so one file's `item` column never
changes type with its first rows.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from swapjudge.errors import InputError, SwapjudgeError
from swapjudge.reading.textfiles import is_stdio

PARQUET_SUFFIXES = (".parquet", ".pq")
# read as text by every loader: written as text, whatever the first records hold
_TEXT_FIELDS = ("judge", "item", "first", "second", "verdict", "label")


def is_parquet_path(path: str | Path) -> bool:
    return Path(path).suffix.lower() in PARQUET_SUFFIXES


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _column(name: str, values: list[Any]) -> pl.Series:
    if name in _TEXT_FIELDS:
        return pl.Series(name, [_text(v) for v in values], dtype=pl.String)
    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return pl.Series(name, values, dtype=pl.String)
    if kinds == {int, float}:
        values = [None if v is None else float(v) for v in values]
        kinds = {float}
    if len(kinds) == 1 and kinds <= {int, float, str, bool}:
        with contextlib.suppress(Exception):  # an integer too large for Int64 goes the text way
            return pl.Series(name, values, strict=True)
    return pl.Series(name, [_text(v) for v in values], dtype=pl.String)


def records_frame(rows: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    """The records as one frame: every key of any row a column (absent = null), in first-seen order."""
    names = list(dict.fromkeys(k for row in rows for k in row))
    return pl.DataFrame([_column(name, [row.get(name) for row in rows]) for name in names])


def write_records_parquet(records: Iterable[Mapping[str, Any]], path: str | Path) -> int:
    """Write records to a Parquet file (`-`: to stdout), atomically; returns how many were written."""
    rows = list(records)
    frame = records_frame(rows)
    if is_stdio(path):
        buffer = io.BytesIO()
        frame.write_parquet(buffer)
        sys.stdout.flush()
        sys.stdout.buffer.write(buffer.getvalue())
        sys.stdout.buffer.flush()
        return len(rows)
    target = Path(path)
    if not target.parent.is_dir():
        raise InputError("output folder does not exist", path=str(target.parent))
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as err:
        raise SwapjudgeError(f"{target}: cannot write: {err.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            frame.write_parquet(handle)
            handle.flush()
            os.fsync(handle.fileno())
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp_name, 0o666 & ~mask)  # mkstemp makes 0600; an output is shared like any file the user writes
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    return len(rows)
