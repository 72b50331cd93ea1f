"""Which engine computes a command's counts: the one place every workflow asks.

Both engines produce the same per-item counts (`reading.reduce`): the in-memory one reads the records whole (polars),
the streaming one reduces a file larger than memory (DuckDB). A figure computed from counts is the same to the
bit either way, so the choice only says who computes them, and it is made here, by `streams`, for `analyze`,
`rank`, `segments`, `agreement`, `calibrate` and `report`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swapjudge.core import arguments
from swapjudge.core.choices import ReadEngine
from swapjudge.errors import ArgumentError


@dataclass(frozen=True)
class RowsNeeded:
    """A statistic the counts do not hold, so the records are read whole: `refusal` is the one line given when
    the streaming engine is asked for anyway (an argument template naming `arguments`, `{engine}` among them)."""

    refusal: str
    arguments: tuple[str, ...]


def streams(source: str | Path | Any, engine: ReadEngine | str, *, needs_rows: RowsNeeded | None = None) -> bool:
    """Whether `source` is reduced by the streaming engine: never under "memory"; under "streaming" always for a
    records file (refused in one line when the command `needs_rows`); under "auto" for Parquet files and JSON
    Lines files of `reading.streaming.STREAM_ABOVE_BYTES` or more, when DuckDB is installed and no statistic
    needs the rows. A stored run, stdin and in-memory records are read whole."""
    read = arguments.choice(engine, "engine", ReadEngine)
    if read is ReadEngine.memory:
        return False
    if needs_rows is not None:
        if read is ReadEngine.streaming:
            raise ArgumentError(needs_rows.refusal, *needs_rows.arguments)
        return False
    from swapjudge.reading.streaming import should_stream

    return should_stream(source, read.value)
