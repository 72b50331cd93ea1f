"""A result as the documents people and scripts read: the `--format json` document with its schema version, and
the same JSON flattened to one row per result (or per system) as a polars or pandas DataFrame. Light: polars loads
only when a frame is asked for."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

JSON_SCHEMA_VERSION = 1  # docs/json.md: bumped when a key changes meaning; new keys do not bump it


def json_document(payload: Any) -> Any:
    """A `--format json` document: an object gets `schema_version` first; an array (a listing) is as it is."""
    if isinstance(payload, dict):
        return {"schema_version": JSON_SCHEMA_VERSION, **{k: v for k, v in payload.items() if k != "schema_version"}}
    return payload


def flatten(payload: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested JSON as one flat row: `consistency.rate`, `gate.passed`, ...; lists of objects become JSON text."""
    out: dict[str, Any] = {}
    for key, value in payload.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "."))
        elif isinstance(value, list | tuple) and any(isinstance(v, Mapping | list | tuple) for v in value):
            out[name] = json.dumps(value)
        elif isinstance(value, tuple):
            out[name] = list(value)
        else:
            out[name] = value
    return out


def frame(rows: Sequence[Mapping[str, Any]], backend: str = "polars") -> Any:
    """Rows as a polars DataFrame, or a pandas one with `backend="pandas"` (pandas must be installed)."""
    import polars as pl

    if backend not in ("polars", "pandas"):
        raise ValueError(f"backend must be 'polars' or 'pandas', got {backend!r}")
    out = pl.concat([pl.DataFrame([dict(r)]) for r in rows], how="diagonal_relaxed") if rows else pl.DataFrame()
    if backend == "polars":
        return out
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("to_frame(backend='pandas') needs pandas: pip install pandas") from None
    return pd.DataFrame(out.to_dict(as_series=False))  # column by column: no pyarrow needed
