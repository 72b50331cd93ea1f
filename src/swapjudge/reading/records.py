"""Presentation records (docs/records.md): loading JSON Lines or CSV, validating, naming every problem's place.

Two paths produce the same frame. The fast path reads the whole file columnar with polars and validates with
vectorised checks; only when it finds a problem (or cannot parse the file) does the slow path read line by line
to name the exact file, line and field. A clean file never pays for the slow path.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from swapjudge.errors import InputError
from swapjudge.reading.pairs import PairTable, build_pairs

# the record's field names and its one-record check live in reading.rows (no polars); imported from here as before
from swapjudge.reading.rows import KEY as KEY
from swapjudge.reading.rows import REGISTERED_A as REGISTERED_A
from swapjudge.reading.rows import REGISTERED_ADAPTIVE as REGISTERED_ADAPTIVE
from swapjudge.reading.rows import REGISTERED_B as REGISTERED_B
from swapjudge.reading.rows import REGISTERED_POLICY as REGISTERED_POLICY
from swapjudge.reading.rows import REGISTERED_RESHOW as REGISTERED_RESHOW
from swapjudge.reading.rows import REQUIRED as REQUIRED
from swapjudge.reading.rows import STRENGTH as STRENGTH
from swapjudge.reading.rows import STRENGTH_ALIASES as STRENGTH_ALIASES
from swapjudge.reading.rows import STRENGTH_VALUES as STRENGTH_VALUES
from swapjudge.reading.rows import VERDICT_VALUES as VERDICT_VALUES
from swapjudge.reading.rows import choose_judges as choose_judges
from swapjudge.reading.rows import parse_row as parse_row
from swapjudge.reading.textfiles import (
    ESCAPED_CELL,
    csv_rows,
    decode_text,
    is_stdio,
    json_lines,
    looks_like_csv,
    read_bytes,
)

# Columns every frame has, with their types; other fields ride along as provenance.
CORE_SCHEMA: dict[str, Any] = {
    "judge": pl.String,
    "round": pl.Int64,
    "item": pl.String,
    "first": pl.String,
    "second": pl.String,
    "verdict": pl.String,
    "label": pl.String,
}
# the provenance the analysis reads even when extras are skipped (reading.rows says what each is), typed
REGISTERED_SCHEMA: dict[str, Any] = {REGISTERED_POLICY: pl.String, REGISTERED_A: pl.String, REGISTERED_B: pl.String,
                                     REGISTERED_ADAPTIVE: pl.Float64, REGISTERED_RESHOW: pl.Float64}
PROBABILITY_SCHEMA: dict[str, Any] = {"p_first": pl.Float64, "p_second": pl.Float64}
STRENGTH_SCHEMA: dict[str, Any] = {STRENGTH: pl.Int64}
OPTIONAL_SCHEMA: dict[str, Any] = {**REGISTERED_SCHEMA, **PROBABILITY_SCHEMA, **STRENGTH_SCHEMA}


@dataclass(frozen=True)
class RecordSet:
    """Validated presentation records. `frame` has the CORE_SCHEMA columns (judge "" when absent, round 0 when
    absent) and any extra provenance columns. `single_order` is True when no pair was judged in both orders."""

    frame: pl.DataFrame
    source: str
    single_order: bool = False
    # the pairing computed during validation, reused by the analysis so it is built once
    pairs: PairTable | None = field(default=None, compare=False, repr=False)

    def _registered(self, column: str) -> str | None:
        """The one value of a registration column (None: absent, or the records disagree)."""
        if column not in self.frame.columns:
            return None
        values = self.frame.get_column(column).drop_nulls().unique().to_list()
        return str(values[0]) if len(values) == 1 else None

    @property
    def registered_tie_policy(self) -> str | None:
        """The tie policy the run behind these records was registered with (exports of a stored run carry it)."""
        return self._registered(REGISTERED_POLICY)

    @property
    def registered_systems(self) -> tuple[str, str] | None:
        """The systems `a` and `b` the run behind these records compared, when it named two."""
        a, b = self._registered(REGISTERED_A), self._registered(REGISTERED_B)
        return (a, b) if a and b and a != b else None

    @property
    def registered_adaptive_swap(self) -> float | None:
        """The adaptive swapping threshold the run behind these records was registered with (None: always both)."""
        return registered_adaptive_swap(self.frame)

    @property
    def judges(self) -> list[str]:
        return select_judges(self.frame)

    def __len__(self) -> int:
        return self.frame.height


def adaptive_threshold(frame: pl.DataFrame) -> pl.Expr:
    """Each record's registered adaptive threshold; null where absent or not a threshold in (0.5, 1]."""
    dtype = frame.schema.get(REGISTERED_ADAPTIVE)
    col = pl.col(REGISTERED_ADAPTIVE)
    if dtype == pl.String:  # CSV, or a slow-path column of mixed types
        value = col.str.strip_chars().cast(pl.Float64, strict=False)
    elif dtype is not None and dtype.is_numeric():
        value = col.cast(pl.Float64)
    else:
        return pl.lit(None, dtype=pl.Float64)
    return pl.when(value.is_between(0.5, 1.0, closed="right")).then(value)


def registered_adaptive_swap(frame: pl.DataFrame) -> float | None:
    """The one adaptive threshold these records were registered with (None: none, or several disagree)."""
    if REGISTERED_ADAPTIVE not in frame.columns:
        return None
    values = frame.select(adaptive_threshold(frame)).to_series().drop_nulls().unique().to_list()
    return float(values[0]) if len(values) == 1 else None


def skipped_swaps(frame: pl.DataFrame) -> pl.DataFrame:
    """The records an adaptive run left single-order: a pair call whose swapped twin is absent, with a verdict
    and the registered threshold (a skipped swap always follows a usable first verdict)."""
    if REGISTERED_ADAPTIVE not in frame.columns:
        return frame.clear()
    return frame.filter(_unpaired_mask(frame) & _expected_single(frame))


def _expected_single(frame: pl.DataFrame) -> pl.Series:
    """True for records that may stand alone: they carry an adaptive run's threshold and a verdict."""
    return frame.select(adaptive_threshold(frame).is_not_null() & pl.col("verdict").is_not_null()).to_series()


def registered_reshow(frame: pl.DataFrame) -> float | None:
    """The re-show share of the live review these records came from (None: not a review's export)."""
    if REGISTERED_RESHOW not in frame.columns:
        return None
    values = frame.get_column(REGISTERED_RESHOW).cast(pl.Float64, strict=False).drop_nulls().unique().to_list()
    return float(values[0]) if len(values) == 1 else None


def _single_by_design(frame: pl.DataFrame) -> pl.Series:
    """True for records that may stand alone: an adaptive run's skipped swap, or a pair a live review showed once
    (both carry a verdict)."""
    reshow = (pl.col(REGISTERED_RESHOW).cast(pl.Float64, strict=False).is_not_null()
              if REGISTERED_RESHOW in frame.columns else pl.lit(False))
    return frame.select((adaptive_threshold(frame).is_not_null() | reshow)
                        & pl.col("verdict").is_not_null()).to_series()


def select_judges(frame: pl.DataFrame, judge: str | None = None) -> list[str]:
    """The judges of validated records, sorted; only `judge` when given (an error naming the others if absent)."""
    return choose_judges(sorted(frame.get_column("judge").unique().to_list()), judge)


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


def read_records(source: str | Path | Any, *, allow_unpaired: bool = False, extras: bool = True) -> RecordSet:
    """Validated presentation records from a JSONL/CSV path (`-`: stdin), a list of dicts, or a pandas or polars
    DataFrame. Validation is the file loader's: an error names the file and line, or the row and field.
    `extras=False` reads a file's core columns only (what the swap analysis needs: faster on large files)."""
    if isinstance(source, str | Path):
        return load_records_file(source, allow_unpaired=allow_unpaired, extras=extras)
    if isinstance(source, RecordSet):
        return source
    if isinstance(source, pl.DataFrame):
        frame = source
        if frame.height == 0:
            raise InputError("no records", path="DataFrame")
        return _row_errors("DataFrame", lambda: records_from_frame(
            frame, source="DataFrame", allow_unpaired=allow_unpaired))
    if _is_pandas(source):
        rows = _pandas_rows(source)
        if not rows:
            raise InputError("no records", path="DataFrame")
        return _row_errors("DataFrame", lambda: records_from_dicts(
            rows, source="DataFrame", allow_unpaired=allow_unpaired))
    if isinstance(source, list | tuple):
        bad = next((i for i, row in enumerate(source, start=1) if not isinstance(row, Mapping)), None)
        if bad is not None:
            raise InputError("a record must be a mapping (dict) of field names to values", path=f"records row {bad}")
        if not source:
            raise InputError("no records", path="records")
        rows_in = source
        return _row_errors("records", lambda: records_from_dicts(
            rows_in, source="records", allow_unpaired=allow_unpaired))
    raise InputError(f"cannot read records from a {type(source).__name__}: give a path, a list of dicts, or a "
                     "pandas or polars DataFrame")


def load_records_file(path: str | Path, *, allow_unpaired: bool = False, extras: bool = True) -> RecordSet:
    """Load and validate a JSONL or CSV file of presentation records (`-`: stdin, JSON Lines or CSV by content).

    `extras=False` reads only the core columns of docs/records.md (what the analysis needs; much faster on large
    JSONL files); provenance such as `raw` is then left out. A pair judged in only one order is an error unless
    no pair in the file has both orders (single-order data: swap-consistency cannot be measured, which the
    analysis says) or `allow_unpaired` is set (the lonely call then makes its pair incomplete).
    """
    path = Path(path)
    if path.suffix.lower() in PARQUET_SUFFIXES and not is_stdio(path):
        return load_records_parquet(path, allow_unpaired=allow_unpaired, extras=extras)
    data = read_bytes(path)
    stdin = is_stdio(path)
    is_csv = looks_like_csv(data) if stdin else path.suffix.lower() in (".csv", ".tsv")
    source = "<stdin>" if stdin else str(path)
    frame = _fast_frame(data, is_csv, extras)
    if frame is not None and frame.height == 0:
        raise InputError("no records", path=str(path))
    if frame is not None and not _missing_verdict_keys(data, frame, is_csv):
        pairs = build_pairs(frame)
        if not _problems(frame, pairs, allow_unpaired, text_numbers=is_csv):
            return RecordSet(frame, source, _single_order(pairs), pairs)
    # Slow path: per-line parsing; raises InputError naming the first problem's line and field.
    frame = _slow_frame(data, source, is_csv)
    if frame.height == 0:
        raise InputError("no records", path=source)
    if not extras:
        kept = [*CORE_SCHEMA, "_line", *(c for c in OPTIONAL_SCHEMA if c in frame.columns)]
        frame = frame.select(kept)
    return _checked(frame, source, allow_unpaired)


PARQUET_SUFFIXES = (".parquet", ".pq")
# the column types a Parquet file may give the id and text fields (anything else is refused row by row)
_PARQUET_TEXT = (pl.String, pl.Null)


def parquet_row_place(path: str, row: int) -> str:
    """Where a Parquet row is: `FILE row N (row group G)`, the row group read from the file's footer."""
    group = None
    with contextlib.suppress(Exception):  # the footer is read by pyarrow when it is there, else left out
        import pyarrow.parquet as pq

        seen = 0
        metadata = pq.ParquetFile(path).metadata
        for index in range(metadata.num_row_groups):
            seen += metadata.row_group(index).num_rows
            if row <= seen:
                group = index
                break
    return f"{path} row {row}" + ("" if group is None else f" (row group {group})")


def load_records_parquet(path: str | Path, *, allow_unpaired: bool = False, extras: bool = True) -> RecordSet:
    """Load and validate a Parquet file of presentation records, in memory (`reading.streaming` reads one larger
    than memory). Id columns are text or integers; a problem names the row (from 1) and its row group."""
    source = str(path)
    try:
        schema = pl.read_parquet_schema(source)
    except FileNotFoundError:
        raise InputError("no such file", path=source) from None
    except Exception as err:  # not a Parquet file, or a damaged one
        raise InputError(f"cannot be read: {str(err).splitlines()[0] if str(err) else type(err).__name__}",
                         path=source) from None
    missing = [name for name in REQUIRED if name not in schema]
    if missing:
        raise InputError("missing column", path=source, field=missing[0], more=len(missing) - 1)
    keep = None if extras else [c for c in (*CORE_SCHEMA, *REGISTERED_SCHEMA, *PROBABILITY_SCHEMA, STRENGTH)
                                   if c in schema]
    raw = pl.read_parquet(source, columns=keep)
    if raw.height == 0:
        raise InputError("no records", path=source)
    typed_ok = all(schema[c] in _PARQUET_TEXT or (c != "verdict" and c != "judge" and schema[c].is_integer())
                   for c in ("item", "first", "second", "verdict", "judge", "label") if c in schema)
    try:
        if typed_ok:
            return records_from_frame(raw, source=source, allow_unpaired=allow_unpaired)
        return records_from_dicts(raw.to_dicts(), source=source, allow_unpaired=allow_unpaired)
    except InputError as err:
        if err.line is None:
            raise
        raise InputError(err.message, path=parquet_row_place(source, err.line), field=err.field,
                         more=err.more) from None


def records_from_frame(raw: pl.DataFrame, *, source: str = "<DataFrame>", allow_unpaired: bool = False) -> RecordSet:
    """Validate a polars frame of records exactly as a file is: a clean frame is checked columnar; a frame with a
    problem goes row by row so the error names the row (numbered from 1) and the field. Optional columns
    (`judge`, `round`, `label`) may be absent or null."""
    missing = [name for name in REQUIRED if name not in raw.columns]
    if missing:
        raise InputError("missing column", path=source, field=missing[0], more=len(missing) - 1)
    try:
        frame: pl.DataFrame | None = _normalise(raw)
    except Exception:  # a column of the wrong type: the row-by-row check names it
        frame = None
    if frame is not None:
        pairs = build_pairs(frame)
        if not _problems(frame, pairs, allow_unpaired):
            return RecordSet(frame, source, _single_order(pairs), pairs)
    return records_from_dicts(raw.to_dicts(), source=source, allow_unpaired=allow_unpaired)


def records_from_dicts(rows: Iterable[Mapping[str, Any]], *, source: str = "<records>",
                       allow_unpaired: bool = False) -> RecordSet:
    """Validate in-memory records (the runner, importers and tests use this); errors name the row number."""
    parsed = [parse_row(dict(row), source, i) for i, row in enumerate(rows, start=1)]
    return _checked(_frame_from_rows(parsed), source, allow_unpaired)


def _checked(frame: pl.DataFrame, source: str, allow_unpaired: bool) -> RecordSet:
    """Run the multi-line checks on a slow-path frame (with `_line`) and pair it once, as the fast path does."""
    pairs = build_pairs(frame)
    single = _single_order(pairs)
    _raise_problems(frame, source, allow_unpaired or single)
    return RecordSet(frame.drop("_line"), source, single, pairs)


# ---- fast path -------------------------------------------------------------------------------------------


def _fast_frame(data: bytes, is_csv: bool, extras: bool = True) -> pl.DataFrame | None:
    """Columnar read; None when polars cannot read it (the slow path then names the line)."""
    try:
        if is_csv:
            raw = pl.read_csv(io.BytesIO(data), infer_schema=False, separator=_separator(data))
            if b"'" in data and raw.select(pl.any_horizontal(pl.col(pl.String).str.contains(ESCAPED_CELL))
                                           .fill_null(False).any()).item():
                return None  # a cell escaped for spreadsheets: the slow path's reader takes the `'` off
        else:
            if not data.strip():
                return None
            if extras:
                # polars rejects overrides of absent columns; a key's name missing from the bytes means absent.
                # round is inferred, so a string round fails the cast and goes the slow way.
                present = {k: v for k, v in CORE_SCHEMA.items() if k != "round" and f'"{k}"'.encode() in data}
                raw = pl.read_ndjson(io.BytesIO(data), schema_overrides=present, infer_schema_length=None)
            else:
                # a fixed schema skips the full-file type inference, the costliest step of the read
                raw = pl.read_ndjson(io.BytesIO(data), schema={**CORE_SCHEMA, **OPTIONAL_SCHEMA})
                raw = raw.drop([c for c in OPTIONAL_SCHEMA if raw.get_column(c).null_count() == raw.height])
        if any(col not in raw.columns for col in REQUIRED):
            return None
        if not is_csv and _maybe_coerced(raw):
            return None
        return _normalise(raw)
    except Exception:  # any parse or cast failure: the slow path reports it precisely
        return None


# polars reads `true`, `1.5`, `{...}` and `[...]` into a text column as text; such a value may have been one (the
# slow path then decides from the JSON types, as docs/records.md and the streaming engine do)
_NOT_TEXT_LIKE = r"^(?:true|false|-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|[\[{].*)$"
_NOT_INTEGER = r"^(?:true|false|-?\d+(?:\.\d*)?[eE][-+]?\d+|-?\d+\.\d*|[\[{].*)$"


def _maybe_coerced(raw: pl.DataFrame) -> bool:
    """True when a JSON Lines frame may hold a value of the wrong JSON type, or an empty verdict (`""` is no
    verdict in JSON; only an empty CSV cell is null)."""
    checks = [pl.col(c).cast(pl.String).str.contains(_NOT_INTEGER) for c in ("item", "first", "second", "label")
              if c in raw.columns]
    if "judge" in raw.columns:
        checks.append(pl.col("judge").cast(pl.String).str.contains(_NOT_TEXT_LIKE))
    checks.append(pl.col("verdict").cast(pl.String) == "")
    return bool(raw.select(pl.any_horizontal(checks).fill_null(False).any()).item())


def _separator(data: bytes) -> str:
    head = data.split(b"\n", 1)[0]
    return "\t" if head.count(b"\t") > head.count(b",") else ","


def _normalise(raw: pl.DataFrame) -> pl.DataFrame:
    """Give a raw frame the core columns and types: judge "" and round 0 where absent, empty verdict = null."""
    exprs = []
    for name, dtype in CORE_SCHEMA.items():
        if name not in raw.columns:
            default: Any = 0 if name == "round" else ("" if name == "judge" else None)
            exprs.append(pl.lit(default, dtype=dtype).alias(name))
        elif name == "round":
            col = pl.col(name)
            if raw.schema[name] == pl.String:
                col = pl.when(col.str.strip_chars() == "").then(None).otherwise(col.str.strip_chars())
            exprs.append(col.cast(pl.Int64, strict=True).fill_null(0).alias(name))
        elif name in ("verdict", "label"):
            col = pl.col(name).cast(pl.String)
            exprs.append(pl.when(col == "").then(None).otherwise(col).alias(name))
        elif name == "judge":
            exprs.append(pl.col(name).cast(pl.String).fill_null("").alias(name))
        else:
            exprs.append(pl.col(name).cast(pl.String).alias(name))
    extras = [pl.col(c) for c in raw.columns if c not in CORE_SCHEMA and c != STRENGTH]
    if STRENGTH in raw.columns:
        extras.append(_strength_codes(raw.schema[STRENGTH]).alias(STRENGTH))
    return raw.select([*exprs, *extras])


_BAD_STRENGTH = -1  # a value the fast path cannot accept: the slow path names its line


def _strength_codes(dtype: Any) -> pl.Expr:
    """The strength column as Int8 (1, 2 or null); _BAD_STRENGTH where a value is not one of them."""
    col = pl.col(STRENGTH)
    if dtype == pl.Null:
        return pl.lit(None, dtype=pl.Int8)
    if dtype == pl.String:  # CSV, or the names earlier arena-hard imports wrote
        text = col.str.strip_chars()
        known = {"1": 1, "2": 2, **STRENGTH_ALIASES}
        coded = text.replace_strict(known, default=_BAD_STRENGTH, return_dtype=pl.Int8)
        return pl.when(text.is_null() | (text == "")).then(None).otherwise(coded)
    if dtype.is_integer():
        return pl.when(col.is_null()).then(None).when(col.is_in(STRENGTH_VALUES)).then(col.cast(pl.Int8)) \
            .otherwise(pl.lit(_BAD_STRENGTH, dtype=pl.Int8))
    return pl.when(col.is_null()).then(None).otherwise(pl.lit(_BAD_STRENGTH, dtype=pl.Int8))


def _problems(frame: pl.DataFrame, pairs: PairTable, allow_unpaired: bool, *, text_numbers: bool = False) -> bool:
    """True when the vectorised checks find anything wrong (the slow path then says what and where)."""
    if frame.select(pl.any_horizontal(pl.col(c).is_null() | (pl.col(c) == "") for c in ("item", "first", "second"))
                    .any()).item():
        return True
    if frame.filter(pl.col("verdict").is_not_null() & ~pl.col("verdict").is_in(VERDICT_VALUES)).height:
        return True
    if STRENGTH in frame.columns and frame.filter(pl.col(STRENGTH).is_not_null() & (
            (pl.col(STRENGTH) == _BAD_STRENGTH) | pl.col("verdict").is_null() | (pl.col("verdict") == "tie"))).height:
        return True
    if _bad_probabilities(frame, text_numbers):
        return True
    counts = pairs.frame.select("n_xf", "n_yf")
    if counts.select((pl.col("n_xf") > 1) | (pl.col("n_yf") > 1)).to_series().any():
        return True
    probes = frame.filter(pl.col("first") == pl.col("second"))
    if probes.height and probes.select(pl.struct(list(KEY)).is_duplicated().any()).item():
        return True
    unpaired = counts.select((pl.col("n_xf") == 0) | (pl.col("n_yf") == 0)).to_series()
    if not unpaired.any() or allow_unpaired or unpaired.all():
        return False
    # an adaptive run's skipped swaps and a review's pairs shown once are expected; any other one-order pair is not
    if REGISTERED_ADAPTIVE not in frame.columns and REGISTERED_RESHOW not in frame.columns:
        return True
    return bool((_unpaired_mask(frame) & ~_single_by_design(frame)).any())


def _single_order(pairs: PairTable) -> bool:
    """No pair has a call in each order (single-order data by design)."""
    return pairs.frame.height > 0 and bool((pairs.frame.get_column("calls") == 1).all())


def _missing_verdict_keys(data: bytes, frame: pl.DataFrame, is_csv: bool) -> bool:
    """polars reads a missing `verdict` key as null. Inside JSON strings quotes are escaped, so the bytes
    `"verdict":` occur once per record exactly when every record has the key (the slow path checks otherwise)."""
    if is_csv:
        return False
    keys = data.count(b'"verdict":')
    if keys != frame.height:
        keys += data.count(b'"verdict" :')
    return keys != frame.height


# ---- slow path -------------------------------------------------------------------------------------------


def _slow_frame(data: bytes, path: str, is_csv: bool) -> pl.DataFrame:
    text = decode_text(data, path)
    rows = list(_csv_rows(text, path) if is_csv else _jsonl_rows(text, path))
    if not rows:
        raise InputError("no records", path=path)
    return _frame_from_rows(rows)


def _jsonl_rows(text: str, path: str) -> Iterable[dict[str, Any]]:
    for number, obj in json_lines(text, path):
        if not isinstance(obj, dict):
            raise InputError("a record must be a JSON object", path=path, line=number)
        yield parse_row(obj, path, number)


def _csv_rows(text: str, path: str) -> Iterable[dict[str, Any]]:
    for number, row in csv_rows(text, path, required=REQUIRED, delimiter=_separator(text.encode()[:4096])):
        obj = {k: (None if v == "" and k in ("verdict", "label", "round") else v) for k, v in row.items()}
        for name in PROBABILITY_SCHEMA:  # a CSV cell is text: a number in it is a number
            cell = obj.get(name)
            if isinstance(cell, str):
                obj[name] = _number_or_text(cell)
        yield parse_row(obj, path, number)


def _number_or_text(cell: str) -> float | str | None:
    try:
        return float(cell) if cell.strip() else None
    except ValueError:
        return cell


def _bad_probabilities(frame: pl.DataFrame, text_numbers: bool) -> bool:
    """True when a verdict probability column holds anything but null or a finite number in [0, 1]. A CSV's
    columns are text (`text_numbers`): there a cell counts when it does not read as such a number; elsewhere
    text is no probability."""
    for name in PROBABILITY_SCHEMA:
        dtype = frame.schema.get(name)
        if dtype is None or dtype == pl.Null:
            continue
        col = pl.col(name)
        if dtype == pl.String and text_numbers:
            text = col.str.strip_chars()
            value = text.cast(pl.Float64, strict=False)
            unread = text.is_not_null() & (text != "") & value.is_null()
        elif dtype.is_numeric():
            value, unread = col.cast(pl.Float64), pl.lit(False)
        else:
            return True
        bad = unread | value.is_nan() | (value < 0) | (value > 1)
        if frame.select(bad.fill_null(False).any()).item():
            return True
    return False


def _frame_from_rows(rows: list[dict[str, Any]]) -> pl.DataFrame:
    core = {name: [row.get(name) for row in rows] for name in CORE_SCHEMA}
    columns: dict[str, pl.Series] = {n: pl.Series(n, v, dtype=CORE_SCHEMA[n]) for n, v in core.items()}
    columns["_line"] = pl.Series("_line", [row["_line"] for row in rows], dtype=pl.Int64)
    extras = sorted({k for row in rows for k in row} - set(columns))
    for name in extras:
        values = [row.get(name) for row in rows]
        if name == STRENGTH:  # validated ints or None, typed as the fast path types them
            columns[name] = pl.Series(name, values, dtype=pl.Int8)
            continue
        try:
            columns[name] = pl.Series(name, values, strict=False)
        except Exception:  # mixed nested types: keep them as JSON text rather than lose them
            columns[name] = pl.Series(name, [None if v is None else json.dumps(v) for v in values])
    return pl.DataFrame(columns)


def _raise_problems(frame: pl.DataFrame, path: str, allow_unpaired: bool) -> None:
    """Frame-level checks that need more than one line: duplicate calls and pairs seen in one order only."""
    dup = frame.with_columns(pl.struct(list(KEY)).is_duplicated().alias("_dup")).filter(pl.col("_dup"))
    if dup.height:
        first_line, second_line = dup.get_column("_line").sort().to_list()[:2]
        row = dup.row(0, named=True)
        raise InputError(
            f"duplicate call (judge {row['judge'] or '-'!r}, round {row['round']}, item {row['item']!r}, "
            f"{row['first']!r} first) already on line {first_line}",
            path=path, line=second_line, field="item", more=max(0, dup.height - 2))
    if allow_unpaired:
        return
    lonely = frame.filter(_unpaired_mask(frame) & ~_single_by_design(frame))
    if lonely.height:
        row = lonely.sort("_line").row(0, named=True)
        raise InputError(
            f"pair judged in one order only: no record with {row['second']!r} first and {row['first']!r} second "
            f"for item {row['item']!r} (judge {row['judge'] or '-'!r}, round {row['round']}); "
            "pass {allow_unpaired} to count it as incomplete",
            path=path, line=row["_line"], field="second", more=lonely.height - 1, arguments=("allow_unpaired",))


def _unpaired_mask(frame: pl.DataFrame) -> pl.Series:
    """True for pair calls (first != second) whose swapped twin is absent."""
    calls = frame.select(list(KEY)).with_row_index("_row")
    swapped = calls.select(
        pl.col("judge"), pl.col("round"), pl.col("item"),
        pl.col("second").alias("first"), pl.col("first").alias("second"), pl.lit(True).alias("_twin"))
    joined = calls.join(swapped, on=list(KEY), how="left").sort("_row")
    return (joined.get_column("_twin").is_null() & (joined.get_column("first") != joined.get_column("second")))

