"""JSON Lines text, line by line: one reader of the format, so every file names a bad line the same way."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from swapjudge.errors import InputError


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
