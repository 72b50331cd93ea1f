"""Records files larger than memory: JSON Lines or Parquet reduced by DuckDB to the pair table and the counts of
`core.reduce`, with every check of `core.records` (docs/records.md) run on the way.

DuckDB reads the file in parallel within a memory limit and spills what does not fit to a temporary folder, so
memory stays bounded whatever the file's size. One pass groups the calls by pair key into the pair table (the
identical-answer calls by their own key beside them); the checks are aggregates over that table, and a problem
is located afterwards by a targeted query that names the line (JSON Lines) or the row and row group (Parquet)
with the words `core.records` uses. DuckDB is the `scale` extra: `pip install 'swapjudge[scale]'`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from swapjudge.core.codes import FIRST, SECOND, TIE
from swapjudge.core.records import (
    REGISTERED_A,
    REGISTERED_ADAPTIVE,
    REGISTERED_B,
    REGISTERED_POLICY,
    REGISTERED_RESHOW,
    REQUIRED,
    _parse_row,
)
from swapjudge.core.reduce import (
    ABSENT,
    LABEL_NONE,
    LABEL_STATES,
    LABEL_TIE,
    LABEL_X,
    LABEL_Y,
    NULL,
    TIE_LABEL,
    DebiasCounts,
    Kinds,
    PairCounts,
    one_value,
)
from swapjudge.core.textfiles import decode_text
from swapjudge.errors import InputError, SwapjudgeError

# files at least this large are streamed by `analyze` and its kin when DuckDB is installed (Parquet always)
STREAM_ABOVE_BYTES = 32 * 2**20
# DuckDB's memory limit unless SWAPJUDGE_MEMORY_LIMIT says otherwise ("4GB", "512MB"); the process's peak adds
# Python and the reader's buffers to it
DEFAULT_MEMORY_LIMIT = "1GB"
JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")
PARQUET_SUFFIXES = (".parquet", ".pq")
_REGISTERED_TEXT = (REGISTERED_POLICY, REGISTERED_A, REGISTERED_B)
_ALLOWED_TEXT = "VARCHAR"
_INTEGER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                  "UBIGINT", "UHUGEINT")


def available() -> bool:
    """True when DuckDB (the `scale` extra) is installed."""
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return False
    return True


def is_parquet(path: str | Path) -> bool:
    return Path(path).suffix.lower() in PARQUET_SUFFIXES


def should_stream(source: Any, engine: str = "auto") -> bool:
    """Whether `source` is read by the streaming reduction: `engine` "streaming" always (a records file), "memory"
    never, "auto" for Parquet files and JSON Lines files of STREAM_ABOVE_BYTES or more, when DuckDB is there."""
    if engine not in ("auto", "memory", "streaming"):
        from swapjudge.errors import ArgumentError

        raise ArgumentError(f"{{engine}} must be auto, memory or streaming, got {engine!r}", "engine")
    if engine == "memory" or not isinstance(source, str | Path) or str(source) == "-":
        return False
    path = Path(source)
    suffix = path.suffix.lower()
    if suffix not in (*JSON_SUFFIXES, *PARQUET_SUFFIXES):
        return False
    if engine == "streaming":
        if not available():
            raise SwapjudgeError("the streaming reduction needs DuckDB: pip install 'swapjudge[scale]'")
        return True
    if not available():
        return False
    try:
        size = path.stat().st_size
    except OSError:
        return False  # the loader says what is wrong with it
    return suffix in PARQUET_SUFFIXES or size >= STREAM_ABOVE_BYTES


# ---- reading the file as normalised calls ------------------------------------------------------------------


def _quote(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def _json_fields(segment: str | None) -> list[str]:
    fields = ["judge", "round", "item", "first", "second", "verdict", "label", REGISTERED_ADAPTIVE,
              REGISTERED_RESHOW, *_REGISTERED_TEXT, "p_first", "p_second"]
    return [*fields, segment] if segment is not None and segment not in fields else fields


def _json_path(name: str) -> str:
    return "$." + json.dumps(name)  # a quoted member name: any key, dots and spaces included


def _json_calls(path: str, segment: str | None, missing: str) -> tuple[str, list[str]]:
    """The SELECT reading a JSON Lines file as normalised calls (see `_normalised`), and its field order."""
    fields = _json_fields(segment)
    paths = ", ".join(_quote(_json_path(f)) for f in fields)
    e = {f: f"e[{i + 1}]" for i, f in enumerate(fields)}

    def kind(f: str) -> str:
        return f"json_type({e[f]})"

    def text(f: str) -> str:
        return f"({e[f]} ->> '$')"

    ids = {f: f"CASE WHEN {kind(f)} IN ('BIGINT', 'UBIGINT') OR ({kind(f)} = 'VARCHAR' AND {text(f)} <> '') "
              f"THEN {text(f)} END" for f in ("item", "first", "second")}
    bad_ids = " OR ".join(f"{e[f]} IS NULL OR {ids[f]} IS NULL" for f in ("item", "first", "second"))
    verdict = f"CASE WHEN {kind('verdict')} = 'VARCHAR' THEN {text('verdict')} END"
    bad_verdict = (f"{e['verdict']} IS NULL OR ({kind('verdict')} <> 'NULL' AND (verdict_text IS NULL OR "
                   "verdict_text NOT IN ('first', 'second', 'tie')))")
    round_text = f"trim({text('round')})"
    round_value = (f"CASE WHEN {e['round']} IS NULL OR {kind('round')} = 'NULL' THEN 0 "
                   f"WHEN {kind('round')} IN ('BIGINT', 'UBIGINT') THEN TRY_CAST({text('round')} AS BIGINT) "
                   f"WHEN {kind('round')} = 'VARCHAR' AND regexp_full_match({round_text}, '-?[0-9]+') "
                   f"THEN TRY_CAST({round_text} AS BIGINT) END")
    judge = (f"CASE WHEN {e['judge']} IS NULL OR {kind('judge')} = 'NULL' THEN '' "
             f"WHEN {kind('judge')} = 'VARCHAR' THEN {text('judge')} END")
    label_ok = f"{e['label']} IS NULL OR {kind('label')} IN ('NULL', 'VARCHAR', 'BIGINT', 'UBIGINT')"
    label = f"CASE WHEN {kind('label')} IN ('VARCHAR', 'BIGINT', 'UBIGINT') AND {text('label')} <> '' " \
            f"THEN {text('label')} END"
    number = {f: f"TRY_CAST({text(f)} AS DOUBLE)" for f in (REGISTERED_ADAPTIVE, REGISTERED_RESHOW, "p_first",
                                                          "p_second")}
    registered = {f: f"CASE WHEN {kind(f)} NOT IN ('NULL', 'OBJECT', 'ARRAY') THEN {text(f)} END"
                  for f in _REGISTERED_TEXT}
    seg = (f"coalesce(CASE WHEN {kind(segment)} <> 'NULL' THEN {text(segment)} END, {_quote(missing)})"
           if segment is not None else "NULL::VARCHAR")
    select = f"""
        SELECT ordinality AS ord,
               json_type(json) <> 'OBJECT' OR {bad_ids} OR ({bad_verdict}) OR judge IS NULL OR round IS NULL
                 OR NOT ({label_ok}) AS bad,
               judge, round, item, first, second, verdict_text AS verdict, label,
               {number[REGISTERED_ADAPTIVE]} AS threshold_raw, {number[REGISTERED_RESHOW]} AS reshow,
               {registered[REGISTERED_POLICY]} AS reg_policy, {registered[REGISTERED_A]} AS reg_a,
               {registered[REGISTERED_B]} AS reg_b,
               {number['p_first']} AS p_first, {number['p_second']} AS p_second, {seg} AS segment
        FROM (SELECT *, {verdict} AS verdict_text, {judge} AS judge, {round_value} AS round,
                     {ids['item']} AS item, {ids['first']} AS first, {ids['second']} AS second, {label} AS label
              FROM (SELECT json, ordinality, json_extract(json, [{paths}]) AS e
                    FROM read_ndjson_objects({_quote(path)}) WITH ORDINALITY))
    """
    return select, fields


def _parquet_calls(path: str, columns: dict[str, str], segment: str | None, missing: str) -> str:
    """The SELECT reading a Parquet file as normalised calls; `columns` are the file's (name: DuckDB type)."""

    def col(name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    def text_of(name: str, allow_int: bool) -> tuple[str, str]:
        """(value, bad) for a text column: VARCHAR as is, integers as their digits, anything else bad."""
        kind = columns.get(name)
        if kind is None:
            return "NULL::VARCHAR", "false"
        if kind == _ALLOWED_TEXT:
            return col(name), "false"
        if allow_int and kind in _INTEGER_TYPES:
            return f"CAST({col(name)} AS VARCHAR)", "false"
        if kind == '"NULL"':
            return "NULL::VARCHAR", "false"
        return "NULL::VARCHAR", f"{col(name)} IS NOT NULL"

    ids, bad = {}, []
    for name in ("item", "first", "second"):
        value, wrong = text_of(name, True)
        ids[name] = f"CASE WHEN {value} <> '' THEN {value} END"
        bad.append(f"({wrong}) OR {ids[name]} IS NULL")
    verdict, wrong = text_of("verdict", False)
    bad.append(f"({wrong}) OR ({verdict} IS NOT NULL AND {verdict} NOT IN ('first', 'second', 'tie'))")
    judge, wrong = text_of("judge", False)
    bad.append(f"({wrong})")
    label, wrong = text_of("label", True)
    bad.append(f"({wrong})")
    kind = columns.get("round")
    if kind is None:
        round_value = "0::BIGINT"
    elif kind in _INTEGER_TYPES:
        round_value = f"coalesce(CAST({col('round')} AS BIGINT), 0)"
    elif kind == _ALLOWED_TEXT:
        text = f"trim({col('round')})"
        round_value = (f"CASE WHEN {col('round')} IS NULL THEN 0 WHEN regexp_full_match({text}, '-?[0-9]+') "
                       f"THEN TRY_CAST({text} AS BIGINT) END")
    else:
        round_value = f"CASE WHEN {col('round')} IS NULL THEN 0 END"
    bad.append(f"({round_value}) IS NULL")

    def number(name: str) -> str:
        return f"TRY_CAST({col(name)} AS DOUBLE)" if name in columns else "NULL::DOUBLE"

    def registered(name: str) -> str:
        return f"CAST({col(name)} AS VARCHAR)" if name in columns else "NULL::VARCHAR"

    seg = (f"coalesce(CAST({col(segment)} AS VARCHAR), {_quote(missing)})"
           if segment is not None and segment in columns else
           (_quote(missing) if segment is not None else "NULL::VARCHAR"))
    return f"""
        SELECT ordinality AS ord, {' OR '.join(bad)} AS bad,
               coalesce({judge}, '') AS judge, {round_value} AS round, {ids['item']} AS item,
               {ids['first']} AS first, {ids['second']} AS second, {verdict} AS verdict,
               CASE WHEN {label} <> '' THEN {label} END AS label,
               {number(REGISTERED_ADAPTIVE)} AS threshold_raw, {number(REGISTERED_RESHOW)} AS reshow,
               {registered(REGISTERED_POLICY)} AS reg_policy, {registered(REGISTERED_A)} AS reg_a,
               {registered(REGISTERED_B)} AS reg_b, {number('p_first')} AS p_first, {number('p_second')} AS p_second,
               {seg} AS segment
        FROM read_parquet({_quote(path)}) WITH ORDINALITY
    """


# the one pass: calls grouped by pair key (identical-answer calls by their own key, x = y), with what every
# check and every count needs; a pair's two calls are told apart by which one showed x first
_STATE = ("CASE verdict WHEN 'first' THEN 0 WHEN 'second' THEN 1 WHEN 'tie' THEN 2 ELSE 3 END")
_SHARE = ("CASE WHEN p_first + p_second > 0 THEN greatest(least(p_first / (p_first + p_second), 1.0 - 1e-12), "
          "1e-12) END")
_GROUPS = f"""
    CREATE TABLE groups AS
    WITH calls AS (
        SELECT *, least(first, second) AS x, greatest(first, second) AS y, first <= second AS xf,
               {_STATE} AS state,
               CASE WHEN threshold_raw > 0.5 AND threshold_raw <= 1.0 THEN threshold_raw END AS threshold,
               p_first IS NOT NULL AND p_second IS NOT NULL AS has_p, {_SHARE} AS share
        FROM source)
    SELECT judge, round, item, x, y,
           count(*) FILTER (WHERE xf AND x <> y) AS n_xf, count(*) FILTER (WHERE NOT xf) AS n_yf,
           count(*) FILTER (WHERE x = y) AS n_probe,
           min(state) FILTER (WHERE xf) AS vx, min(state) FILTER (WHERE NOT xf) AS vy,
           arg_min(label, ord) FILTER (WHERE label IS NOT NULL) AS label_first,
           bool_or(threshold IS NOT NULL AND verdict IS NOT NULL) AS skippable,
           bool_or(threshold IS NOT NULL OR reshow IS NOT NULL) FILTER (WHERE verdict IS NOT NULL) AS by_design,
           min(threshold) AS threshold_lo, max(threshold) AS threshold_hi,
           min(reshow) AS reshow_lo, max(reshow) AS reshow_hi,
           min(reg_policy) AS policy_lo, max(reg_policy) AS policy_hi,
           min(reg_a) AS a_lo, max(reg_a) AS a_hi, min(reg_b) AS b_lo, max(reg_b) AS b_hi,
           min(segment) AS segment, max(segment) AS segment_hi,
           min(share) FILTER (WHERE xf AND has_p) AS qx, min(share) FILTER (WHERE NOT xf AND has_p) AS qy,
           bool_or(has_p) FILTER (WHERE xf) AS hx, bool_or(has_p) FILTER (WHERE NOT xf) AS hy,
           min(ord) AS ord, count(*) FILTER (WHERE bad) AS bad, min(ord) FILTER (WHERE bad) AS bad_ord
    FROM calls GROUP BY judge, round, item, x, y
"""
# pair-level columns of a group, as `core.reduce` defines them
_PAIR_VIEW = f"""
    CREATE VIEW pairs AS
    SELECT judge, round, item, x, y, segment, qx, qy,
           coalesce(vx, {ABSENT}) AS vx, coalesce(vy, {ABSENT}) AS vy,
           CASE WHEN label_first = x THEN {LABEL_X} WHEN label_first = y THEN {LABEL_Y}
                WHEN label_first = '{TIE_LABEL}' THEN {LABEL_TIE} ELSE {LABEL_NONE} END AS label,
           (n_xf + n_yf = 1 AND coalesce(skippable, false)) AS skipped,
           coalesce(hx, false) AND coalesce(hy, false) AS has_p, reshow_lo, reshow_hi
    FROM groups WHERE x <> y
"""
_PROBE_VIEW = """
    CREATE VIEW probes AS
    SELECT judge, x AS system, segment, reshow_lo AS reshow, coalesce(vx, 3) AS code, qx AS share,
           coalesce(hx, false) AS has_p, ord
    FROM groups WHERE x = y
"""


def _memory_limit() -> str:
    value = os.environ.get("SWAPJUDGE_MEMORY_LIMIT", DEFAULT_MEMORY_LIMIT).strip()
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?\s*[KMGT]i?B", value, flags=re.IGNORECASE):
        raise SwapjudgeError(f"SWAPJUDGE_MEMORY_LIMIT must be a size such as 4GB or 512MB, got {value!r}")
    return value


def _duckdb_error(path: str, err: Exception) -> InputError:
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return InputError(f"cannot be read: {first}", path=path)


@dataclass
class StreamingSource:
    """A JSON Lines or Parquet records file as a `core.reduce.PairSource`, reduced by DuckDB within its memory
    limit. Validation is `core.records`'s: the first problem raises `InputError` naming the line (or row and
    row group) and field. Close it (or use it as a context manager) to drop its temporary files."""

    path: str
    allow_unpaired: bool = False
    segment: str | None = None
    missing_segment: str = "(missing)"
    source: str = field(init=False)
    single_order: bool = field(init=False, default=False)
    _con: Any = field(init=False, default=None, repr=False)
    _tmp: str | None = field(init=False, default=None, repr=False)
    _facts: dict[str, Any] = field(init=False, default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.path = str(self.path)
        self.source = self.path
        if not Path(self.path).exists():
            raise InputError("no such file", path=self.path)
        if not os.access(self.path, os.R_OK):
            raise InputError("cannot read: Permission denied", path=self.path)
        try:
            self._open()
            self._reduce()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> StreamingSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    # -- reduction ---------------------------------------------------------------------------------------

    def _open(self) -> None:
        import duckdb

        self._tmp = tempfile.mkdtemp(prefix="swapjudge-reduce-", dir=os.environ.get("SWAPJUDGE_TMPDIR"))
        self._con = duckdb.connect(str(Path(self._tmp) / "reduce.duckdb"))
        self._con.execute(f"SET memory_limit = '{_memory_limit()}'")
        self._con.execute(f"SET temp_directory = {_quote(str(Path(self._tmp) / 'spill'))}")
        self._con.execute("SET preserve_insertion_order = false")

    def _sql(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._con.execute(query, list(params)).fetchall()
        return rows

    def _reduce(self) -> None:
        import duckdb

        parquet = is_parquet(self.path)
        if parquet:
            columns = self._parquet_columns()
            missing = [name for name in REQUIRED if name not in columns]
            if missing:
                raise InputError("missing column", path=self.path, field=missing[0], more=len(missing) - 1)
            if self.segment is not None and self.segment not in columns:
                self._no_segment(list(columns))
            select = _parquet_calls(self.path, columns, self.segment, self.missing_segment)
        else:
            if self.segment is not None:
                self._check_json_segment()
            select, _ = _json_calls(self.path, self.segment, self.missing_segment)
        try:
            self._con.execute(f"CREATE VIEW source AS {select}")
            self._con.execute(_GROUPS)
        except duckdb.Error as err:
            if parquet:
                raise _duckdb_error(self.path, err) from None
            self._json_line_error()  # the line polars or Python cannot read either: named exactly
            raise _duckdb_error(self.path, err) from None
        self._con.execute(_PAIR_VIEW)
        self._con.execute(_PROBE_VIEW)
        self._check()

    def _parquet_columns(self) -> dict[str, str]:
        import duckdb

        try:
            described = self._sql(f"DESCRIBE SELECT * FROM read_parquet({_quote(self.path)})")
        except duckdb.Error as err:
            raise _duckdb_error(self.path, err) from None
        return {str(name): str(kind) for name, kind, *_ in described}

    def _no_segment(self, columns: list[str]) -> None:
        extras = [c for c in columns if c not in ("first", "second", "verdict")]
        raise SwapjudgeError(f"no field {self.segment!r} in the records; fields: " + ", ".join(extras))

    def _check_json_segment(self) -> None:
        """A segment field no record carries: the error `probes.segments` gives, naming the fields there are."""
        found = self._sql(f"SELECT count(*) FILTER (WHERE json_exists(json, ?)) FROM "
                          f"read_ndjson_objects({_quote(self.path)})", [_json_path(str(self.segment))])
        if found and found[0][0]:
            return
        keys = self._sql(f"SELECT DISTINCT unnest(json_keys(json)) AS k FROM read_ndjson_objects({_quote(self.path)})"
                         " ORDER BY k")
        self._no_segment([str(k) for (k,) in keys])

    def _check(self) -> None:
        """Every check of `core.records` as one aggregate over the groups; a problem is then located."""
        (total, bad, dup, probe_dup, pairs, lonely, lonely_not_by_design, segment_conflict,
         judges) = self._sql("""
            SELECT coalesce(sum(n_xf + n_yf + n_probe), 0), coalesce(sum(bad), 0),
                   count(*) FILTER (WHERE x <> y AND (n_xf > 1 OR n_yf > 1)),
                   count(*) FILTER (WHERE x = y AND n_probe > 1),
                   count(*) FILTER (WHERE x <> y),
                   count(*) FILTER (WHERE x <> y AND (n_xf = 0 OR n_yf = 0)),
                   count(*) FILTER (WHERE x <> y AND (n_xf = 0 OR n_yf = 0) AND NOT coalesce(by_design, false)),
                   count(*) FILTER (WHERE segment <> segment_hi),
                   list(DISTINCT judge ORDER BY judge)
            FROM groups""")[0]
        if total == 0:
            raise InputError("no records", path=self.path)
        if bad:
            self._row_error()
        if dup or probe_dup:
            self._duplicate_error()
        self.single_order = pairs > 0 and lonely == pairs
        if lonely_not_by_design and not (self.allow_unpaired or self.single_order):
            self._lonely_error(lonely_not_by_design)
        if segment_conflict:
            self._segment_error()
        self._facts["judges"] = [str(j) for j in judges]

    # -- locating a problem ---------------------------------------------------------------------------------

    def _place(self, ordinal: int) -> tuple[str, int | None]:
        """(path, line) of the record at this ordinal (1-based): the line of a JSON Lines file (blank lines
        count), or the row and row group of a Parquet file."""
        if is_parquet(self.path):
            groups = self._sql(f"SELECT row_group_id, any_value(row_group_num_rows) FROM "
                               f"parquet_metadata({_quote(self.path)}) GROUP BY row_group_id ORDER BY row_group_id")
            seen = 0
            group = 0
            for group_id, rows in groups:
                if ordinal <= seen + int(rows):
                    group = int(group_id)
                    break
                seen += int(rows)
            return f"{self.path} row {ordinal} (row group {group})", None
        return self.path, _line_of_record(self.path, ordinal)

    def _row_record(self, ordinal: int) -> dict[str, Any]:
        """The record at this ordinal as Python reads it (the value a message quotes)."""
        if is_parquet(self.path):
            row = pl.scan_parquet(self.path).slice(ordinal - 1, 1).collect().to_dicts()[0]
            return {k: v for k, v in row.items() if v is not None or k in REQUIRED}
        line = self._place(ordinal)[1]
        assert line is not None
        with open(self.path, "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if number == line:
                    obj = json.loads(decode_text(raw, self.path))
                    if not isinstance(obj, dict):
                        raise InputError("a record must be a JSON object", path=self.path, line=line)
                    return obj
        raise InputError("record vanished while being read", path=self.path, line=line)

    def _row_error(self) -> None:
        """The first record with a bad field, in `core.records`'s words."""
        ordinal = int(self._sql("SELECT min(bad_ord) FROM groups")[0][0])
        path, line = self._place(ordinal)
        record = self._row_record(ordinal)
        try:
            _parse_row(record, path, line if line is not None else ordinal)
        except InputError as err:
            if line is not None:
                raise
            raise InputError(err.message, path=path, field=err.field) from None
        raise InputError("a field cannot be read", path=path, line=line)  # a check DuckDB and Python disagree on

    def _duplicate_error(self) -> None:
        """`core.records`'s duplicate-call error: the first duplicated call and where it is repeated."""
        rows = self._sql("""
            WITH dup AS (SELECT judge, round, item, x, y, x = y AS probe, n_xf > 1 AS in_x, n_yf > 1 AS in_y
                         FROM groups WHERE (x <> y AND (n_xf > 1 OR n_yf > 1)) OR (x = y AND n_probe > 1))
            SELECT s.ord, s.judge, s.round, s.item, s.first FROM source s JOIN dup d
              ON s.judge = d.judge AND s.round = d.round AND s.item = d.item
             AND least(s.first, s.second) = d.x AND greatest(s.first, s.second) = d.y
             AND (d.probe OR (s.first <= s.second AND d.in_x) OR (s.first > s.second AND d.in_y))
            ORDER BY s.ord""")
        (o1, judge, round_, item, first), (o2, *_) = rows[0], rows[1]
        _, line1 = self._place(int(o1))
        path, line2 = self._place(int(o2))
        raise InputError(
            f"duplicate call (judge {judge or '-'!r}, round {round_}, item {item!r}, "
            f"{first!r} first) already on line {line1 if line1 is not None else o1}",
            path=path, line=line2, field="item", more=max(0, len(rows) - 2))

    def _lonely_error(self, count: int) -> None:
        row = self._sql("""
            SELECT ord, judge, round, item, x, y, n_xf FROM groups
            WHERE x <> y AND (n_xf = 0 OR n_yf = 0) AND NOT coalesce(by_design, false) ORDER BY ord LIMIT 1""")[0]
        ordinal, judge, round_, item, x, y, n_xf = row
        first, second = (x, y) if n_xf else (y, x)
        path, line = self._place(int(ordinal))
        raise InputError(
            f"pair judged in one order only: no record with {second!r} first and {first!r} second "
            f"for item {item!r} (judge {judge or '-'!r}, round {round_}); "
            "pass {allow_unpaired} to count it as incomplete",
            path=path, line=line, field="second", more=count - 1, arguments=("allow_unpaired",))

    def _segment_error(self) -> None:
        item, x, y, lo, hi = self._sql("""
            SELECT item, x, y, segment, segment_hi FROM groups WHERE segment <> segment_hi ORDER BY ord LIMIT 1""")[0]
        raise SwapjudgeError(
            f"field {self.segment!r} differs between the calls of a pair (item {item!r}, {x!r} vs {y!r}: "
            f"{lo!r}, {hi!r}); segments need a field fixed per pair")

    def _json_line_error(self) -> None:
        """A file DuckDB cannot read: the first line that is not a JSON object, in `core.records`'s words."""
        from swapjudge.core.textfiles import json_lines

        for number, obj in _json_lines_streamed(self.path, json_lines):
            if not isinstance(obj, dict):
                raise InputError("a record must be a JSON object", path=self.path, line=number)
            _parse_row(obj, self.path, number)

    # -- PairSource --------------------------------------------------------------------------------------------

    def judges(self) -> list[str]:
        judges: list[str] = self._facts["judges"]
        return judges

    def systems(self, judge: str) -> list[str]:
        key = f"systems:{judge}"
        if key not in self._facts:
            rows = self._sql("SELECT DISTINCT x FROM pairs WHERE judge = ? UNION SELECT DISTINCT y FROM pairs "
                             "WHERE judge = ?", [judge, judge])
            self._facts[key] = sorted(str(s) for (s,) in rows)
        systems: list[str] = self._facts[key]
        return systems

    def thresholds(self, judge: str) -> list[float]:
        rows = self._sql("""
            SELECT DISTINCT v FROM (SELECT threshold_lo AS v FROM groups WHERE judge = ?
                                    UNION ALL SELECT threshold_hi FROM groups WHERE judge = ?) WHERE v IS NOT NULL""",
                         [judge, judge])
        return sorted(float(v) for (v,) in rows)

    def registered(self, column: str) -> list[str]:
        names = {REGISTERED_POLICY: "policy", REGISTERED_A: "a", REGISTERED_B: "b"}
        name = names[column]
        rows = self._sql(f"""
            SELECT DISTINCT v FROM (SELECT {name}_lo AS v FROM groups UNION ALL SELECT {name}_hi FROM groups)
            WHERE v IS NOT NULL""")
        return sorted(str(v) for (v,) in rows)

    def segment_values(self, judge: str | None = None) -> list[str]:
        where, params = ("WHERE judge = ?", [judge]) if judge is not None else ("", [])
        rows = self._sql(f"SELECT DISTINCT segment FROM groups {where}", params)
        return sorted(str(v) for (v,) in rows if v is not None)

    def counts(self, judge: str, pair: tuple[str, str] | None = None, *,
               segment: str | None = None) -> PairCounts:
        where, params = ["judge = ?"], [judge]
        probe_where, probe_params = ["judge = ?"], [judge]
        if pair is not None:
            lo, hi = sorted(pair)
            where += ["x = ?", "y = ?"]
            params += [lo, hi]
            probe_where.append("system IN (?, ?)")
            probe_params += [lo, hi]
        if segment is not None:
            where.append("segment = ?")
            params.append(segment)
            probe_where.append("segment = ?")
            probe_params.append(segment)
        cond, probe_cond = " AND ".join(where), " AND ".join(probe_where)
        typed = f"""SELECT *, ((vx * 5 + vy) * {LABEL_STATES} + label) * 2 + skipped::INTEGER AS ptype
                    FROM pairs WHERE {cond}"""
        by_pair = self._sql(f"SELECT x, y, ptype, count(*) AS n FROM ({typed}) GROUP BY ALL ORDER BY x, y, ptype",
                            params)
        frame = pl.DataFrame(by_pair, schema={"x": pl.String, "y": pl.String, "ptype": pl.Int64, "n": pl.Int64},
                             orient="row")
        kinds_rows = self._sql(f"""
            SELECT types, count(*) FROM (SELECT list_sort(list(ptype)) AS types FROM ({typed}) GROUP BY item)
            GROUP BY types""", params)
        kinds = (Kinds.from_lists([list(t) for t, _ in kinds_rows], [int(n) for _, n in kinds_rows])
                 if kinds_rows else Kinds.empty())
        (rounds,) = self._sql(f"SELECT count(DISTINCT round) FROM pairs WHERE {cond}", params)[0]
        codes = dict(self._sql(f"SELECT code, count(*) FROM probes WHERE {probe_cond} GROUP BY code", probe_params))
        reshows = [v for (v,) in self._sql(f"""
            SELECT DISTINCT v FROM (SELECT reshow_lo AS v FROM pairs WHERE {cond}
                                    UNION ALL SELECT reshow_hi FROM pairs WHERE {cond}
                                    UNION ALL SELECT reshow FROM probes WHERE {probe_cond})""",
                                              [*params, *params, *probe_params])]
        return PairCounts(
            pairs=frame, kinds=kinds, rounds=int(rounds),
            probes=(int(codes.get(FIRST, 0)), int(codes.get(SECOND, 0)), int(codes.get(TIE, 0)),
                    int(codes.get(NULL, 0))),
            reshow=one_value(reshows), debias=self._debias(cond, params, probe_cond, probe_params))

    def _debias(self, cond: str, params: list[Any], probe_cond: str, probe_params: list[Any]) -> DebiasCounts | None:
        (usable,) = self._sql(f"SELECT count(*) FROM pairs WHERE {cond} AND has_p", params)[0]
        if not usable:
            return None
        # the prior is the mean of the probes' shares in file order, as numpy takes it from the rows
        shares = self._con.execute(f"SELECT share FROM probes WHERE {probe_cond} AND has_p ORDER BY ord",
                                   probe_params).fetchnumpy()["share"]
        shares = np.asarray(np.ma.filled(shares.astype(float), np.nan) if np.ma.isMaskedArray(shares) else shares,
                            dtype=float)
        prior = float(np.nanmean(shares)) if shares.size else None
        prior_sql = "NULL::DOUBLE" if prior is None else repr(prior)

        def calibrated(share: str) -> str:
            if prior is None:
                return str(NULL)
            return (f"CASE WHEN {share} IS NULL OR isnan({share}) THEN {NULL} WHEN {share} > {prior_sql} THEN "
                    f"{FIRST} WHEN {share} < {prior_sql} THEN {SECOND} ELSE {TIE} END")

        rows = self._sql(f"""
            SELECT CASE WHEN avg > 0.5 THEN 0 WHEN avg < 0.5 THEN 1 ELSE 2 END AS klass, cx, cy, label, count(*)
            FROM (SELECT 0.5 * (qx + (1.0 - qy)) AS avg, {calibrated('qx')} AS cx, {calibrated('qy')} AS cy, label
                  FROM pairs WHERE {cond} AND has_p)
            GROUP BY ALL""", params)
        table = np.zeros((3, 4, 4, LABEL_STATES), dtype=np.int64)
        for klass, cx, cy, label, n in rows:
            table[int(klass), int(cx), int(cy), int(label)] += int(n)
        return DebiasCounts(table, prior, int(shares.size))


def _json_lines_streamed(path: str, json_lines: Any) -> Iterator[tuple[int, Any]]:
    """`core.textfiles.json_lines` one line at a time (the whole file never in memory); the first line that is
    not UTF-8 is named by its byte offset, as `decode_text` names it."""
    offset = 0
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as err:
                raise InputError(f"not UTF-8 text (byte {offset + err.start})", path=path) from None
            offset += len(raw)
            for _, value in json_lines(text, path):
                yield number, value


def _line_of_record(path: str, ordinal: int) -> int:
    """The line number of the ordinal-th non-blank line (the record DuckDB numbered), read as a stream."""
    seen = 0
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                seen += 1
                if seen == ordinal:
                    return number
    return ordinal


def open_source(path: str | Path, *, allow_unpaired: bool = False, segment: str | None = None,
                missing_segment: str = "(missing)") -> StreamingSource:
    """The streaming `PairSource` of a records file (JSON Lines or Parquet)."""
    return StreamingSource(str(path), allow_unpaired=allow_unpaired, segment=segment,
                           missing_segment=missing_segment)
