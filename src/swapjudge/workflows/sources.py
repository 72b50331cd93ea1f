"""Records from whatever a command or a notebook holds: a JSONL/CSV path (`-`: stdin), a list of dicts, a pandas
or polars DataFrame. Validation is the file loader's: an error names the file and line, or the row and field."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from swapjudge.core import records
from swapjudge.core.records import RecordSet
from swapjudge.errors import InputError


def _is_pandas(source: Any) -> bool:
    return type(source).__module__.split(".")[0] == "pandas" and hasattr(source, "to_dict")


def _plain(value: Any) -> Any:
    """A pandas cell as the file loader would see it: missing (NaN/NA/None) is None, numpy scalars are Python."""
    if value is None:
        return None
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, str | bytes):
        with contextlib.suppress(TypeError, ValueError):
            value = item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    return value


def _pandas_rows(frame: Any) -> list[dict[str, Any]]:
    rows = []
    for row in frame.to_dict("records"):
        clean = {str(k): _plain(v) for k, v in row.items()}
        if isinstance(clean.get("round"), float) and clean["round"].is_integer():
            clean["round"] = int(clean["round"])  # a round column with a gap is float in pandas
        rows.append(clean)
    return rows


def _row_errors(source: str, load: Any) -> RecordSet:
    """Run an in-memory load; a problem is named by its row (from 1) and field, as a file's is by its line."""
    try:
        result: RecordSet = load()
    except InputError as err:
        if err.line is None:
            raise
        raise InputError(err.message, path=f"{source} row {err.line}", field=err.field, more=err.more) from None
    return result


def load_records(source: str | Path | Any, *, allow_unpaired: bool = False, extras: bool = True) -> RecordSet:
    """Validated presentation records from a JSONL/CSV path (`-`: stdin), a list of dicts, or a pandas or polars
    DataFrame. Validation is the file loader's: an error names the file and line, or the row and field.
    `extras=False` reads a file's core columns only (what the swap analysis needs: faster on large files)."""
    import polars as pl

    if isinstance(source, str | Path):
        return records.load_records(source, allow_unpaired=allow_unpaired, extras=extras)
    if isinstance(source, RecordSet):
        return source
    if isinstance(source, pl.DataFrame):
        frame = source
        return _row_errors("DataFrame", lambda: records.records_from_frame(
            frame, source="DataFrame", allow_unpaired=allow_unpaired))
    if _is_pandas(source):
        rows = _pandas_rows(source)
        return _row_errors("DataFrame", lambda: records.records_from_dicts(
            rows, source="DataFrame", allow_unpaired=allow_unpaired))
    if isinstance(source, list | tuple):
        bad = next((i for i, row in enumerate(source, start=1) if not isinstance(row, Mapping)), None)
        if bad is not None:
            raise InputError("a record must be a mapping (dict) of field names to values", path=f"records row {bad}")
        rows_in = source
        return _row_errors("records", lambda: records.records_from_dicts(
            rows_in, source="records", allow_unpaired=allow_unpaired))
    raise InputError(f"cannot read records from a {type(source).__name__}: give a path, a list of dicts, or a "
                     "pandas or polars DataFrame")
