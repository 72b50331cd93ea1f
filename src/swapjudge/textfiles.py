"""The text files users give (JSON Lines, CSV), read one way: every file names a bad line in the same words."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from swapjudge.errors import InputError


def read_text(path: Path) -> str:
    """The file's text (UTF-8, a byte-order mark dropped); a missing or unreadable file is an InputError."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("no such file", path=str(path)) from None
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text (byte {err.start})", path=str(path)) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", path=str(path)) from None


def json_lines(text: str, path: str) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) for every non-blank line; a line that is not JSON is an InputError naming it."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(f"not valid JSON ({err.msg} at column {err.colno})", path=path, line=number) from None
        yield number, value


def csv_rows(text: str, path: str, *, required: Iterable[str] = (), delimiter: str = ","
             ) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line where the record starts, row) per CSV record, after checking the header names every `required`
    column; a row with more cells than the header is an InputError, one with fewer has None in the rest."""
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = reader.fieldnames or []
    for name in required:
        if name not in header:
            raise InputError("missing column", path=path, line=1, field=name)
    previous = 1
    for row in reader:
        # a quoted cell may span lines: the record starts just after the previous one ended
        start, previous = previous + 1, reader.line_num
        if None in row:
            raise InputError("more cells than header columns", path=path, line=start)
        yield start, row
