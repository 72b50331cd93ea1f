"""Records files larger than memory: JSON Lines or Parquet reduced by DuckDB to the pair table and the counts of
`reading.reduce`, with every check of `reading.records` (docs/records.md) run on the way.

DuckDB reads the file in parallel within a memory limit and spills what does not fit to a temporary folder, so
memory stays bounded whatever the file's size. One pass groups the calls by pair key into the pair table (the
identical-answer calls by their own key beside them); the checks are aggregates over that table, and a problem
is located afterwards by a targeted query that names the line (JSON Lines) or the row and row group (Parquet)
with the words `reading.records` uses. DuckDB is the `scale` extra: `pip install 'swapjudge[scale]'`.
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import mmap
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from swapjudge.errors import InputError, SwapjudgeError
from swapjudge.reading.codes import FIRST, SECOND, TIE
from swapjudge.reading.reduce import (
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
from swapjudge.reading.rows import (
    REGISTERED_A,
    REGISTERED_ADAPTIVE,
    REGISTERED_B,
    REGISTERED_POLICY,
    REGISTERED_RESHOW,
    REQUIRED,
    STRENGTH,
    parse_row,
)
from swapjudge.reading.textfiles import decode_text

if TYPE_CHECKING:
    import polars as pl

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
        if carries_strength(path):
            raise SwapjudgeError(f"{path}: graded verdicts (`strength`) are analysed in memory only, not yet by the "
                                 "streaming engine: {engine} memory", arguments=("engine",))
        return True
    try:
        size = path.stat().st_size
    except OSError:
        return False  # the loader says what is wrong with it
    if suffix not in PARQUET_SUFFIXES and size < STREAM_ABOVE_BYTES:
        return False  # decided before asking for DuckDB: importing it costs more than reading a small file
    return available() and not carries_strength(path)


def carries_strength(path: Path) -> bool:
    """Whether a records file has a `strength` field (graded verdicts, which only the in-memory analysis reads):
    a Parquet column, or the key's bytes anywhere in a JSON Lines file (quotes inside strings are escaped)."""
    try:
        if path.suffix.lower() in PARQUET_SUFFIXES:
            import polars as pl
            return STRENGTH in pl.read_parquet_schema(path)
        return _key_occurs(str(path), STRENGTH, *_stamp(str(path)))
    except Exception:  # unreadable: the reader that follows names the problem
        return False


# ---- reading the file as normalised calls ------------------------------------------------------------------


def _quote(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def _json_fields(segment: str | None) -> list[str]:
    fields = ["judge", "round", "item", "first", "second", "verdict", "label", REGISTERED_ADAPTIVE,
              REGISTERED_RESHOW, *_REGISTERED_TEXT, "p_first", "p_second"]
    return [*fields, segment] if segment is not None and segment not in fields else fields


def _json_path(name: str) -> str:
    return "$." + json.dumps(name)  # a quoted member name: any key, dots and spaces included


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _is_text(raw: str) -> str:
    """Whether a JSON value, as DuckDB writes it back (minified), is a string: told by its opening quote."""
    return f"starts_with({raw}, '\"')"


def _json_text(raw: str) -> str:
    """A JSON string's text (`raw ->> '$'`), cut from its quotes when nothing in it is escaped."""
    return f"CASE WHEN contains({raw}, '\\') THEN {raw} ->> '$' ELSE ({raw}::VARCHAR)[2:-2] END"


def _json_value(raw: str, *, integer: bool = False, other: bool = False) -> str:
    """A field's text when its JSON type is allowed, else null: a string's text; with `integer`, an integer's
    digits; with `other`, any value but an object or array, as its JSON. Each value's type is told once, from
    the text DuckDB wrote (a string by its quote, the rare rest by its first character or its digits)."""
    cases = [f"WHEN {_is_text(raw)} THEN {_json_text(raw)}"]
    if integer:
        cases.append(f"WHEN regexp_full_match({raw}, '-?[0-9]+') THEN {raw}::VARCHAR")
    if other:
        cases.append(f"WHEN NOT (starts_with({raw}, '{{') OR starts_with({raw}, '[')) THEN {raw}::VARCHAR")
    return f"CASE {' '.join(cases)} END"


def _json_calls(path: str, segment: str | None, missing: str) -> str:
    """The SELECT reading a JSON Lines file as normalised calls, checked as `reading.records.parse_row` checks them
    (`bad`: any field it would refuse; a missing `verdict` key reads as null here, so the keys are counted apart,
    `_key_count`). The fields whose JSON type decides (text, or an integer for ids) are read as JSON and each
    turned into its value at once, null when the type is refused; the others as text, which a wrong type cannot
    pass (a number or a boolean verdict is no verdict name, a 1.5 round no integer, a probability is cast) and
    which reads fastest."""
    fields = _json_fields(segment)
    typed_fields = {"item", "first", "second", "judge", "label", "p_first", "p_second", *_REGISTERED_TEXT,
                    *([segment] if segment else [])}
    columns = "{" + ", ".join(f"{_quote(f)}: '{'JSON' if f in typed_fields else 'VARCHAR'}'" for f in fields) + "}"

    def raw(f: str) -> str:
        return _ident(f)

    def text_id(f: str) -> str:  # a non-empty string or an integer
        return f"nullif({_json_value(raw(f), integer=True)}, '')"

    verdict_ok = "verdict IS NULL OR verdict IN ('first', 'second', 'tie')"
    judge = (f"CASE WHEN {raw('judge')} IS NULL THEN '' WHEN {_is_text(raw('judge'))} "
             f"THEN {_json_text(raw('judge'))} END")
    round_text = "trim(round)"
    round_value = (f"CASE WHEN round IS NULL THEN 0 WHEN regexp_full_match({round_text}, '-?[0-9]+') "
                   f"THEN TRY_CAST({round_text} AS BIGINT) END")

    def number(f: str) -> str:  # a JSON number's value (a string is refused by `probability_ok`)
        return f"TRY_CAST({raw(f)} AS DOUBLE)"

    def probability_ok(f: str) -> str:
        # a JSON number in [0, 1] (NaN compares above every number here), or null, as `reading.records` says
        return (f"({raw(f)} IS NULL OR (NOT {_is_text(raw(f))} AND {raw(f)} NOT IN ('true', 'false') "
                f"AND {number(f)} BETWEEN 0 AND 1))")

    label_value = _json_value(raw("label"), integer=True)
    # a segment value is its text, or any other value's JSON (an object's too), as `raw ->> '$'` gives it
    seg = (f"coalesce(CASE WHEN {_is_text(raw(segment))} THEN {_json_text(raw(segment))} "
           f"ELSE {raw(segment)}::VARCHAR END, {_quote(missing)})" if segment is not None else "NULL::VARCHAR")
    return f"""
        SELECT ord,
               item IS NULL OR first IS NULL OR second IS NULL OR NOT ({verdict_ok}) OR judge IS NULL
                 OR round IS NULL OR NOT (label_absent OR label IS NOT NULL) OR NOT p_first_ok
                 OR NOT p_second_ok AS bad,
               judge, round, item, first, second, verdict, nullif(label, '') AS label,
               threshold_raw, reshow, reg_policy, reg_a, reg_b, p_first, p_second, segment
        FROM (SELECT ordinality AS ord, {judge} AS judge, {round_value} AS round, {text_id('item')} AS item,
                     {text_id('first')} AS first, {text_id('second')} AS second, verdict,
                     {label_value} AS label, {raw('label')} IS NULL AS label_absent,
                     TRY_CAST({_ident(REGISTERED_ADAPTIVE)} AS DOUBLE) AS threshold_raw,
                     TRY_CAST({_ident(REGISTERED_RESHOW)} AS DOUBLE) AS reshow,
                     {_json_value(raw(REGISTERED_POLICY), other=True)} AS reg_policy,
                     {_json_value(raw(REGISTERED_A), other=True)} AS reg_a,
                     {_json_value(raw(REGISTERED_B), other=True)} AS reg_b,
                     {number('p_first')} AS p_first, {number('p_second')} AS p_second,
                     {probability_ok('p_first')} AS p_first_ok, {probability_ok('p_second')} AS p_second_ok,
                     {seg} AS segment
              FROM read_json({_quote(path)}, format = 'newline_delimited', columns = {columns}) WITH ORDINALITY)
    """


# a key as it occurs in a JSON Lines record: quotes inside JSON strings are escaped, so these bytes are keys
def _key_bytes(key: str) -> tuple[bytes, bytes]:
    return f'"{key}":'.encode(), f'"{key}" :'.encode()


def _blocks(path: str, keep: int, chunk: int = 1 << 24) -> Iterator[bytes]:
    """The file in blocks, each starting with the previous block's last `keep` bytes (so a pattern of up to
    keep + 1 bytes straddling two blocks is whole in one of them)."""
    tail = b""
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            data = tail + block
            yield data
            tail = data[-keep:]


@functools.lru_cache(maxsize=8)
def _key_occurs(path: str, key: str, size: int, modified: int) -> bool:
    """Whether any record has this key: one search of the mapped file for the quoted name both forms start with,
    each hit then checked (cached by path, size and modification time)."""
    if not size:
        return False
    patterns = _key_bytes(key)
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        at = data.find(patterns[0][:-1])
        while at >= 0:
            if any(data[at:at + len(p)] == p for p in patterns):
                return True
            at = data.find(patterns[0][:-1], at + 1)
    return False


@functools.lru_cache(maxsize=8)
def _key_count(path: str, key: str, size: int, modified: int) -> int:
    """How many times the key occurs in the file (one occurrence straddling two blocks counted once)."""
    patterns = _key_bytes(key)
    keep = max(map(len, patterns)) - 1
    found, tail = 0, b""
    for data in _blocks(path, keep):
        # an occurrence within the last `keep` bytes is counted in the next block (or below, at the end)
        tail = data[-keep:]
        found += sum(data.count(p) - tail.count(p) for p in patterns)
    return found + sum(tail.count(p) for p in patterns)


def _stamp(path: str) -> tuple[int, int]:
    stat = os.stat(path)
    return stat.st_size, stat.st_mtime_ns


def _counted_beside(path: str, key: str) -> concurrent.futures.Future[int]:
    """`_key_count` run by a daemon thread while DuckDB reads the file (DuckDB leaves the GIL and part of a core):
    a daemon, so a command that fails meanwhile does not wait for the count of a large file at exit."""
    future: concurrent.futures.Future[int] = concurrent.futures.Future()

    def count() -> None:
        try:
            future.set_result(_key_count(path, key, *_stamp(path)))
        except BaseException as err:  # the caller's .result() raises it
            future.set_exception(err)

    threading.Thread(target=count, name="swapjudge-keys", daemon=True).start()
    return future


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

    for name in ("p_first", "p_second"):  # a number in [0, 1], or null
        if name in columns:
            numeric = columns[name] in ("FLOAT", "DOUBLE", *_INTEGER_TYPES) or columns[name].startswith("DECIMAL")
            # isnan apart: DuckDB folds a range test from the row groups' min and max, which leave NaN out
            bad.append(f"({col(name)} IS NOT NULL AND (isnan({number(name)}) OR NOT ({number(name)} BETWEEN 0 AND 1)))"
                       if numeric
                       else f"({col(name)} IS NOT NULL)")

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


# the optional fields whose aggregates the one pass carries only when a file has them (they cost time per row)
OPTIONAL = ("label", "threshold", "reshow", "registered", "probabilities", "segment")
_OPTIONAL_NONNULL = {
    "label": "label IS NOT NULL", "threshold": "threshold_raw IS NOT NULL", "reshow": "reshow IS NOT NULL",
    "registered": "reg_policy IS NOT NULL OR reg_a IS NOT NULL OR reg_b IS NOT NULL",
    "probabilities": "p_first IS NOT NULL OR p_second IS NOT NULL", "segment": "false",
}
_STATE = "CASE verdict WHEN 'first' THEN 1 WHEN 'second' THEN 2 WHEN 'tie' THEN 3 ELSE 4 END"
_SHARE = ("CASE WHEN p_first + p_second > 0 THEN greatest(least(p_first / (p_first + p_second), 1.0 - 1e-12), "
          "1e-12) END")


def _optional_aggs(present: frozenset[str]) -> list[str]:
    """The aggregates of the optional fields a file has, the same per pair and per item."""
    aggs = []
    if "label" in present:
        aggs.append("arg_min(label, ord) FILTER (WHERE label IS NOT NULL) AS label_first")
    if "threshold" in present:
        aggs += ["bool_or(threshold IS NOT NULL AND verdict IS NOT NULL) AS skippable",
                 "min(threshold) AS threshold_lo", "max(threshold) AS threshold_hi"]
    if "reshow" in present:
        aggs += ["min(reshow) AS reshow_lo", "max(reshow) AS reshow_hi"]
    if "threshold" in present or "reshow" in present:
        design = " OR ".join(f"{f} IS NOT NULL" for f in ("threshold", "reshow") if f in present)
        aggs.append(f"bool_or({design}) FILTER (WHERE verdict IS NOT NULL) AS by_design")
    if "registered" in present:
        aggs += [f"{fn}({col}) AS {name}_{end}" for col, name in (("reg_policy", "policy"), ("reg_a", "a"),
                                                                    ("reg_b", "b"))
                 for fn, end in (("min", "lo"), ("max", "hi"))]
    if "segment" in present:
        aggs += ["min(segment) AS segment", "max(segment) AS segment_hi"]
    absent = [_OPTIONAL_NONNULL[f] for f in OPTIONAL if f not in present and f != "segment"]
    if absent:  # a field the sample of a JSON Lines file missed: the pass is run again with it
        aggs.append(f"bool_or({' OR '.join(absent)}) AS unseen")
    return aggs


_CALLS = f"""
    SELECT *, least(first, second) AS x, greatest(first, second) AS y, first <= second AS xf, {_STATE} AS state,
           CASE WHEN threshold_raw > 0.5 AND threshold_raw <= 1.0 THEN threshold_raw END AS threshold,
           p_first IS NOT NULL AND p_second IS NOT NULL AS has_p, {_SHARE} AS share
    FROM source"""


def _groups_sql(present: frozenset[str], only_complex: bool = False) -> str:
    """The pass that groups calls by pair key (identical-answer calls by their own key, x = y), with what every
    check and count needs; `only_complex`: the calls of the items the first pass could not read as one pair.
    `e` holds both calls' verdict states (1-4, the x-first call's in the units, the other's times 8): valid data
    has at most one call per order, which `n` and `n_xf` check."""
    # `ord`: the group's first call in file order (the review queue lists pairs in that order)
    aggs = ["count(*) AS n", "sum(xf::INTEGER) AS n_xf", "sum(CASE WHEN xf THEN state ELSE 8 * state END) AS e",
            "sum(bad::INTEGER) AS bad", "min(ord) AS ord", *_optional_aggs(present)]
    if "probabilities" in present:
        aggs += ["min(share) FILTER (WHERE xf AND has_p) AS qx", "min(share) FILTER (WHERE NOT xf AND has_p) AS qy",
                 "bool_or(has_p) FILTER (WHERE xf) AS hx", "bool_or(has_p) FILTER (WHERE NOT xf) AS hy"]
    where = ("WHERE EXISTS (SELECT 1 FROM complex c WHERE c.judge = calls.judge AND c.item = calls.item)"
             if only_complex else "")
    return f"""
    CREATE TABLE groups AS
    WITH calls AS ({_CALLS})
    SELECT judge, round, item, x, y, {', '.join(aggs)}
    FROM calls {where} GROUP BY judge, round, item, x, y
    """


# one call's contribution to its item's packed sum: the x-first call's state (1-4) and a count of 64, the
# y-first call's state times 8, an identical-answer call 4096, a bad record 2^40 (an item of at most two calls
# cannot carry from one field into the next)
_PACKED = (f"CASE WHEN first < second THEN {_STATE} + 64 WHEN first > second THEN 8 * {_STATE} ELSE 4096 END "
           "+ 1099511627776 * bad::BIGINT")


def _items_sql(present: frozenset[str]) -> str:
    """The first pass: calls grouped by (judge, item). An item whose calls are the one or two calls of one pair
    (no identical-answer call, one round, at most one call per order) is read as that pair at once, and all
    such items are counted by (system pair, pair type, round): `simple` rows. Every other item is listed
    (`complex`) for the pass by pair key."""
    aggs = ["count(*) AS n", "min(first) AS f_lo", "max(first) AS f_hi", "min(second) AS s_lo",
            "max(second) AS s_hi", "min(round) AS r_lo", "max(round) AS r_hi", f"sum({_PACKED}) AS p",
            *_optional_aggs(present)]
    label = (f"CASE WHEN label_first = x THEN {LABEL_X} WHEN label_first = y THEN {LABEL_Y} "
             f"WHEN label_first = '{TIE_LABEL}' THEN {LABEL_TIE} ELSE {LABEL_NONE} END"
             if "label" in present else str(LABEL_NONE))
    skipped = "(n = 1 AND coalesce(skippable, false))" if "threshold" in present else "false"
    by_design = "coalesce(by_design, false)" if {"threshold", "reshow"} & present else "false"
    extra = []
    if "threshold" in present:
        extra += ["min(threshold_lo) AS threshold_lo", "max(threshold_hi) AS threshold_hi"]
    if "reshow" in present:
        extra += ["min(reshow_lo) AS reshow_lo", "max(reshow_hi) AS reshow_hi"]
    if "registered" in present:
        extra += [f"{fn}({name}_{end}) AS {name}_{end}" for name in ("policy", "a", "b")
                  for fn, end in (("min", "lo"), ("max", "hi"))]
    if "segment" in present:
        extra.append("count(*) FILTER (WHERE simple AND segment <> segment_hi) AS segment_conflicts")
    if "unseen" in " ".join(aggs):
        extra.append("bool_or(unseen) AS unseen")
    segment = "CASE WHEN simple THEN segment END" if "segment" in present else "NULL::VARCHAR"
    return f"""
    CREATE TABLE summary AS
    WITH calls AS ({_CALLS}),
    items AS (SELECT judge, item, {', '.join(aggs)} FROM calls GROUP BY judge, item),
    decoded AS (
        SELECT *, (p // 64) % 64 AS n_xf, (p // 4096) % 256 AS n_probe, p // 1099511627776 AS bad,
               CASE WHEN n = 1 THEN least(f_lo, s_lo) ELSE f_lo END AS x,
               CASE WHEN n = 1 THEN greatest(f_lo, s_lo) ELSE f_hi END AS y
        FROM items),
    typed AS (
        SELECT *, coalesce(n <= 2 AND n_probe = 0 AND r_lo = r_hi AND x IS NOT NULL AND y IS NOT NULL
                           AND (n = 1 OR (f_lo = s_lo AND f_hi = s_hi AND n_xf = 1)), false) AS simple
        FROM decoded)
    SELECT GROUPING(judge, ck) AS level, judge, simple, sx AS x, sy AS y, ptype, sr AS round, sseg AS segment,
           ck AS item, count(*) AS items, sum(n) AS calls, sum(bad) AS bad,
           count(*) FILTER (WHERE simple AND n = 1) AS lonely,
           count(*) FILTER (WHERE simple AND n = 1 AND NOT {by_design}) AS lonely_not_by_design
           {''.join(', ' + e for e in extra)}
    FROM (SELECT *, CASE WHEN simple THEN x END AS sx, CASE WHEN simple THEN y END AS sy,
                 CASE WHEN simple THEN ((CASE WHEN n_xf = 1 THEN p % 8 - 1 ELSE {ABSENT} END * 5
                                         + CASE WHEN n - n_xf = 1 THEN (p // 8) % 8 - 1 ELSE {ABSENT} END) * 4
                                        + {label}) * 2 + {skipped}::INTEGER END AS ptype,
                 CASE WHEN simple THEN r_lo END AS sr, {segment} AS sseg,
                 CASE WHEN NOT simple THEN item END AS ck
          FROM typed)
    GROUP BY GROUPING SETS ((judge, simple, sx, sy, ptype, sr, sseg), (judge, ck))
    """


def _views_sql(present: frozenset[str]) -> list[str]:
    """The pair-level and probe-level views of the groups, in `reading.reduce`'s terms (absent fields as nulls)."""

    def have(column: str, field: str, kind: str = "VARCHAR") -> str:
        return column if field in present else f"NULL::{kind} AS {column}"

    label = (f"CASE WHEN label_first = x THEN {LABEL_X} WHEN label_first = y THEN {LABEL_Y} "
             f"WHEN label_first = '{TIE_LABEL}' THEN {LABEL_TIE} ELSE {LABEL_NONE} END"
             if "label" in present else str(LABEL_NONE))
    skipped = "(n = 1 AND coalesce(skippable, false))" if "threshold" in present else "false"
    has_p = "coalesce(hx, false) AND coalesce(hy, false)" if "probabilities" in present else "false"
    n_yf = "n - n_xf"
    return [f"""
    CREATE VIEW pairs AS
    SELECT judge, round, item, x, y, {have('segment', 'segment')},
           {have('qx', 'probabilities', 'DOUBLE')}, {have('qy', 'probabilities', 'DOUBLE')},
           CASE WHEN n_xf = 1 THEN e % 8 - 1 ELSE {ABSENT} END AS vx,
           CASE WHEN {n_yf} = 1 THEN e // 8 - 1 ELSE {ABSENT} END AS vy,
           {label} AS label, {skipped} AS skipped, {has_p} AS has_p,
           {have('reshow_lo', 'reshow', 'DOUBLE')}, {have('reshow_hi', 'reshow', 'DOUBLE')},
           {have('label_first', 'label')}, ord
    FROM groups WHERE x <> y
    """, f"""
    CREATE VIEW probes AS
    SELECT judge, x AS system, {have('segment', 'segment')}, {have('reshow_lo', 'reshow', 'DOUBLE')},
           CASE WHEN n = 1 THEN e % 8 - 1 ELSE {NULL} END AS code,
           {'qx' if 'probabilities' in present else 'NULL::DOUBLE'} AS share,
           {has_p.replace(' AND coalesce(hy, false)', '')} AS has_p, {have('ord', 'probabilities', 'BIGINT')}
    FROM groups WHERE x = y
    """]


def _json_head(path: str, segment: str | None, limit: int = 1 << 18) -> tuple[frozenset[str], bool]:
    """What the first lines of a JSON Lines file say before the pass: the optional fields they carry (the pass
    checks the rest: `unseen`), and whether most of their items are one pair each (`_mostly_one_pair`)."""
    with open(path, "rb") as handle:
        head = handle.read(limit)
    keys: set[str] = set()
    records = []
    for raw in head.split(b"\n")[:-1] or [head]:
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict):
            keys.update(k for k, v in obj.items() if v is not None)
            records.append(obj)
    return _present(keys, segment), _mostly_one_pair(records)


def _mostly_one_pair(records: Sequence[dict[str, Any]]) -> bool:
    """Whether most items of these records (by judge and item) are one call, or the two orders of one pair in
    one round: the first pass's fast case. Only the choice of passes rests on it, never a figure."""
    items: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for r in records:
        call = (str(r.get("first")), str(r.get("second")), str(r.get("round")))
        items.setdefault((str(r.get("judge")), str(r.get("item"))), []).append(call)
    simple = sum(len(calls) == 1 or (len(calls) == 2 and calls[0][0] != calls[0][1]
                                     and calls[1] == (calls[0][1], calls[0][0], calls[0][2]))
                 for calls in items.values())
    return not items or simple * 2 >= len(items)


def _present(names: set[str] | dict[str, str], segment: str | None) -> frozenset[str]:
    found = {"label": "label" in names, "threshold": REGISTERED_ADAPTIVE in names,
             "reshow": REGISTERED_RESHOW in names,
             "registered": any(c in names for c in _REGISTERED_TEXT),
             "probabilities": "p_first" in names and "p_second" in names, "segment": segment is not None}
    return frozenset(k for k, v in found.items() if v)


def _address_space_left() -> int | None:
    """Bytes of address space the process may still map under an RLIMIT_AS ceiling (`ulimit -v`); None without
    one (Linux's /proc tells what is mapped already)."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/status") as status:
            mapped = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        return None
    return max(soft - mapped, 0)


def _memory_limit() -> str:
    """DuckDB's memory limit: SWAPJUDGE_MEMORY_LIMIT, else 1GB, or under an address-space ceiling half of the
    address space left (DuckDB maps more than it holds), so a `ulimit -v` run spills instead of failing."""
    value = os.environ.get("SWAPJUDGE_MEMORY_LIMIT")
    if value is None:
        left = _address_space_left()
        if left is None or left // 2 >= 2**30:
            return DEFAULT_MEMORY_LIMIT
        return f"{max(left // 2 // 2**20, 64)}MB"
    value = value.strip()
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?\s*[KMGT]i?B", value, flags=re.IGNORECASE):
        raise SwapjudgeError(f"SWAPJUDGE_MEMORY_LIMIT must be a size such as 4GB or 512MB, got {value!r}")
    return value


def _duckdb_error(path: str, err: Exception) -> InputError:
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return InputError(f"cannot be read: {first}", path=path)


@dataclass
class StreamingSource:
    """A JSON Lines or Parquet records file as a `reading.reduce.PairSource`, reduced by DuckDB within its memory
    limit. Validation is `reading.records`'s: the first problem raises `InputError` naming the line (or row and
    row group) and field. Close it (or use it as a context manager) to drop its temporary files."""

    path: str
    allow_unpaired: bool = False
    segment: str | None = None
    missing_segment: str = "(missing)"
    # read items that are one pair in a first pass (True), or every item by pair key (False); None: by a sample
    split: bool | None = None
    source: str = field(init=False)
    single_order: bool = field(init=False, default=False)
    _con: Any = field(init=False, default=None, repr=False)
    _tmp: str | None = field(init=False, default=None, repr=False)
    _facts: dict[str, Any] = field(init=False, default_factory=dict, repr=False)
    _verdict_count: concurrent.futures.Future[int] | None = field(init=False, default=None, repr=False)

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
        self._con = duckdb.connect(":memory:")
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
            present = _present(columns, self.segment)
        else:
            if self.segment is not None:
                self._check_json_segment()
            select = _json_calls(self.path, self.segment, self.missing_segment)
            present, one_pair = _json_head(self.path, self.segment)
            # a Python read of the head decides the passes sooner than DuckDB's sample of the file
            self.split = one_pair if self.split is None else self.split
            # the verdict keys are counted by a thread while DuckDB reads (it leaves the GIL and part of a core)
            self._verdict_count = _counted_beside(self.path, "verdict")
        try:
            self._con.execute(f"CREATE VIEW source AS {select}")
            present = self._passes(present)
        except duckdb.Error as err:
            if parquet:
                raise _duckdb_error(self.path, err) from None
            self._json_line_error()  # the line polars or Python cannot read either: named exactly
            raise _duckdb_error(self.path, err) from None
        self.present = present
        self.split = bool(self._sql("SELECT count(*) FROM summary")[0][0])
        for view in _views_sql(present):
            self._con.execute(view)
        self._check()

    def _passes(self, present: frozenset[str]) -> frozenset[str]:
        """Run the passes (again with every optional field when a JSON Lines file's sample missed one): items
        that are one pair are counted in the first pass, the others grouped by pair key in a second one. Data
        where most items hold several pairs (or with verdict probabilities) goes to the second pass at once."""
        for _ in range(2):
            split = "probabilities" not in present and (self._mostly_simple() if self.split is None else self.split)
            unseen = False
            if split:
                self._con.execute(_items_sql(present))
                unseen = "unseen" in self._columns("summary") and bool(
                    self._sql("SELECT bool_or(unseen) FROM summary")[0][0])
            if not unseen:
                if split:
                    self._con.execute("CREATE TABLE complex AS SELECT judge, item FROM summary "
                                      "WHERE level = 0 AND item IS NOT NULL")
                    if self._sql("SELECT count(*) FROM complex")[0][0]:
                        self._con.execute(_groups_sql(present, only_complex=True))
                    else:
                        self._con.execute(_groups_sql(present) + " LIMIT 0")
                else:
                    self._con.execute(_groups_sql(present))
                    self._con.execute(_items_sql(present).replace("FROM calls GROUP BY judge, item",
                                                                 "FROM calls WHERE false GROUP BY judge, item"))
                unseen = "unseen" in self._columns("groups") and bool(
                    self._sql("SELECT bool_or(unseen) FROM groups")[0][0])
            if not unseen:
                return present
            for table in ("summary", "complex", "groups"):
                self._con.execute(f"DROP TABLE IF EXISTS {table}")
            present = frozenset(OPTIONAL) if self.segment is not None else frozenset(OPTIONAL) - {"segment"}
        return present

    def _mostly_simple(self, sample: int = 20_000) -> bool:
        """Whether most items of the file's first records are one pair each (the first pass's fast case)."""
        simple, items = self._sql(f"""
            SELECT count(*) FILTER (WHERE n = 1 OR (n = 2 AND lo = hi AND f_lo = s_lo AND f_hi = s_hi
                                                   AND f_lo <> f_hi)), count(*)
            FROM (SELECT count(*) AS n, min(k) AS lo, max(k) AS hi, min(first) AS f_lo, max(first) AS f_hi,
                         min(second) AS s_lo, max(second) AS s_hi
                  FROM (SELECT *, least(first, second) || '|' || greatest(first, second) || '|'
                                  || CAST(round AS VARCHAR) AS k FROM (SELECT * FROM source LIMIT {sample}))
                  GROUP BY judge, item)""")[0]
        return bool(items == 0 or simple * 2 >= items)

    def _columns(self, table: str) -> list[str]:
        return [str(row[0]) for row in self._sql(f"DESCRIBE {table}")]

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
        """Every check of `reading.records` as aggregates over the two passes' tables; a problem is then located."""
        by_design = "coalesce(by_design, false)" if {"threshold", "reshow"} & self.present else "false"
        segment = ("count(*) FILTER (WHERE segment <> segment_hi)" if "segment" in self.present else "0")
        (total, bad, dup, pairs, lonely, lonely_not_by_design, conflicts) = self._sql(f"""
            SELECT coalesce(sum(n), 0), coalesce(sum(bad), 0),
                   count(*) FILTER (WHERE (x <> y AND (n_xf > 1 OR n - n_xf > 1)) OR (x = y AND n > 1)),
                   count(*) FILTER (WHERE x <> y),
                   count(*) FILTER (WHERE x <> y AND (n_xf = 0 OR n_xf = n)),
                   count(*) FILTER (WHERE x <> y AND (n_xf = 0 OR n_xf = n) AND NOT {by_design}),
                   {segment}
            FROM groups""")[0]
        summary_conflicts = "sum(segment_conflicts)" if "segment" in self.present else "0"
        (s_calls, s_bad, s_pairs, s_lonely, s_lonely_nd, s_conflicts) = self._sql(f"""
            SELECT coalesce(sum(calls) FILTER (WHERE simple), 0), coalesce(sum(bad), 0),
                   coalesce(sum(items) FILTER (WHERE simple), 0), coalesce(sum(lonely), 0),
                   coalesce(sum(lonely_not_by_design), 0), coalesce({summary_conflicts}, 0)
            FROM summary WHERE level = 1""")[0]
        total, pairs, lonely = total + s_calls, pairs + s_pairs, lonely + s_lonely
        lonely_not_by_design += s_lonely_nd
        if total == 0:
            raise InputError("no records", path=self.path)
        bad = s_bad if self._sql("SELECT count(*) FROM summary")[0][0] else bad
        # every record has a `verdict` key when the key's bytes occur once per record (`reading.records` counts so)
        keys = self._verdict_count.result() if self._verdict_count is not None else total
        if not bad and not is_parquet(self.path) and keys != total:
            self._json_line_error()  # a record without a verdict key: `parse_row` names it
        if bad:
            self._row_error()
        if dup:
            self._duplicate_error()
        self.single_order = pairs > 0 and lonely == pairs
        if lonely_not_by_design and not (self.allow_unpaired or self.single_order):
            self._lonely_error(int(lonely_not_by_design))
        if conflicts or s_conflicts:
            self._segment_error()
        judges = {str(j) for (j,) in self._sql("SELECT DISTINCT judge FROM groups UNION "
                                                "SELECT DISTINCT judge FROM summary WHERE simple")}
        self._facts["judges"] = sorted(judges)
        systems: dict[str, set[str]] = {}
        for judge, x, y in self._sql("SELECT DISTINCT judge, x, y FROM groups WHERE x <> y UNION "
                                     "SELECT DISTINCT judge, x, y FROM summary WHERE simple"):
            systems.setdefault(str(judge), set()).update((str(x), str(y)))
        self._facts["systems"] = {j: sorted(v) for j, v in systems.items()}

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
            import polars as pl
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
        """The first record with a bad field, in `reading.records`'s words."""
        ordinal = int(self._sql("SELECT min(ord) FROM source WHERE bad")[0][0])
        path, line = self._place(ordinal)
        record = self._row_record(ordinal)
        try:
            parse_row(record, path, line if line is not None else ordinal)
        except InputError as err:
            if line is not None:
                raise
            raise InputError(err.message, path=path, field=err.field) from None
        raise InputError("a field cannot be read", path=path, line=line)  # a check DuckDB and Python disagree on

    def _duplicate_error(self) -> None:
        """`reading.records`'s duplicate-call error: the first duplicated call and where it is repeated."""
        rows = self._sql("""
            WITH keyed AS (SELECT ord, judge, round, item, first, second FROM source),
                 dup AS (SELECT judge, round, item, first, second FROM keyed GROUP BY ALL HAVING count(*) > 1)
            SELECT k.ord, k.judge, k.round, k.item, k.first FROM keyed k SEMI JOIN dup d
              ON k.judge = d.judge AND k.round = d.round AND k.item = d.item AND k.first = d.first
             AND k.second = d.second
            ORDER BY k.ord""")
        (o1, judge, round_, item, first), (o2, *_) = rows[0], rows[1]
        _, line1 = self._place(int(o1))
        path, line2 = self._place(int(o2))
        raise InputError(
            f"duplicate call (judge {judge or '-'!r}, round {round_}, item {item!r}, "
            f"{first!r} first) already on line {line1 if line1 is not None else o1}",
            path=path, line=line2, field="item", more=max(0, len(rows) - 2))

    def _lonely_error(self, count: int) -> None:
        """`reading.records`'s error for the first call whose swapped twin is missing (and not missing by design)."""
        by_design = ("(verdict IS NOT NULL AND ((threshold_raw > 0.5 AND threshold_raw <= 1.0) OR reshow IS NOT NULL))"
                     if {"threshold", "reshow"} & self.present else "false")
        ordinal, judge, round_, item, first, second = self._sql(f"""
            WITH keyed AS (SELECT ord, judge, round, item, first, second, {by_design} AS by_design FROM source
                           WHERE first <> second)
            SELECT k.ord, k.judge, k.round, k.item, k.first, k.second FROM keyed k ANTI JOIN keyed t
              ON t.judge = k.judge AND t.round = k.round AND t.item = k.item AND t.first = k.second
             AND t.second = k.first
            WHERE NOT k.by_design ORDER BY k.ord LIMIT 1""")[0]
        path, line = self._place(int(ordinal))
        raise InputError(
            f"pair judged in one order only: no record with {second!r} first and {first!r} second "
            f"for item {item!r} (judge {judge or '-'!r}, round {round_}); "
            "pass {allow_unpaired} to count it as incomplete",
            path=path, line=line, field="second", more=count - 1, arguments=("allow_unpaired",))

    def _segment_error(self) -> None:
        item, x, y, lo, hi = self._sql("""
            SELECT item, least(first, second) AS x, greatest(first, second) AS y, min(segment), max(segment)
            FROM source WHERE first <> second GROUP BY judge, round, item, x, y HAVING min(segment) <> max(segment)
            ORDER BY item, x, y LIMIT 1""")[0]
        raise SwapjudgeError(
            f"field {self.segment!r} differs between the calls of a pair (item {item!r}, {x!r} vs {y!r}: "
            f"{lo!r}, {hi!r}); segments need a field fixed per pair")

    def _json_line_error(self) -> None:
        """A file DuckDB cannot read: the first line that is not a JSON object, in `reading.records`'s words."""
        from swapjudge.reading.textfiles import json_lines

        for number, obj in _json_lines_streamed(self.path, json_lines):
            if not isinstance(obj, dict):
                raise InputError("a record must be a JSON object", path=self.path, line=number)
            parse_row(obj, self.path, number)

    # -- PairSource --------------------------------------------------------------------------------------------

    def judges(self) -> list[str]:
        judges: list[str] = self._facts["judges"]
        return judges

    def systems(self, judge: str) -> list[str]:
        systems: list[str] = self._facts["systems"].get(judge, [])
        return systems

    def _both(self, column: str, where: str = "", params: Sequence[Any] = ()) -> list[Any]:
        """The distinct non-null values of a lo/hi column pair over the groups and the summary."""
        rows = self._sql(f"""
            SELECT DISTINCT v FROM (SELECT {column}_lo AS v FROM groups {where} UNION ALL
                                    SELECT {column}_hi FROM groups {where} UNION ALL
                                    SELECT {column}_lo FROM summary {where} UNION ALL
                                    SELECT {column}_hi FROM summary {where}) WHERE v IS NOT NULL""",
                         [*params, *params, *params, *params])
        return [v for (v,) in rows]

    def thresholds(self, judge: str, *, segment: str | None = None,
                   pair: tuple[str, str] | None = None) -> list[float]:
        """The adaptive thresholds of one judge's calls (of one segment, and of the calls between the two systems
        of `pair` and their identical-answer calls, when given: those need `split=False`)."""
        if "threshold" not in self.present:
            return []
        where, params = "WHERE judge = ?", [judge]
        if segment is not None or pair is not None:
            self._by_pair_key("thresholds of a segment or pair")
        if segment is not None:
            where, params = where + " AND segment = ?", [*params, segment]
        if pair is not None:
            lo, hi = sorted(pair)
            where += " AND ((x = ? AND y = ?) OR (x = y AND x IN (?, ?)))"
            params += [lo, hi, lo, hi]
        return sorted(float(v) for v in self._both("threshold", where, params))

    def _by_pair_key(self, what: str) -> None:
        if self.split:
            raise ValueError(f"{what} needs a source opened with split=False")

    def segment_pairs(self, segment: str, judge: str | None = None) -> dict[str, set[tuple[str, str]]]:
        """Per judge, the (x, y) of the pairs and identical-answer calls (x = y) one segment holds."""
        self._by_pair_key("segment_pairs")
        where, params = ("AND judge = ?", [segment, judge]) if judge is not None else ("", [segment])
        found: dict[str, set[tuple[str, str]]] = {}
        for name, x, y in self._sql(f"SELECT DISTINCT judge, x, y FROM groups WHERE segment = ? {where}", params):
            found.setdefault(str(name), set()).add((str(x), str(y)))
        return found

    def registered(self, column: str) -> list[str]:
        if "registered" not in self.present:
            return []
        name = {REGISTERED_POLICY: "policy", REGISTERED_A: "a", REGISTERED_B: "b"}[column]
        return sorted(str(v) for v in self._both(name))

    def segment_values(self, judge: str | None = None) -> list[str]:
        if "segment" not in self.present:
            return []
        where, params = ("AND judge = ?", [judge]) if judge is not None else ("", [])
        rows = self._sql(f"SELECT DISTINCT segment FROM groups WHERE true {where} UNION "
                         f"SELECT DISTINCT segment FROM summary WHERE simple {where}", [*params, *params])
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
        ptype = f"((vx * 5 + vy) * {LABEL_STATES} + label) * 2 + skipped::INTEGER"
        reshow = "min(reshow_lo), max(reshow_hi)" if "reshow" in self.present else "NULL, NULL"
        rows = self._sql(f"""
            SELECT x, y, {ptype} AS ptype, round, count(*) AS n, min(reshow_lo), max(reshow_hi)
            FROM pairs WHERE {cond} GROUP BY ALL
            UNION ALL
            SELECT x, y, ptype, round, sum(items), {reshow} FROM summary WHERE simple AND {cond} GROUP BY ALL""",
                         [*params, *params])
        by_pair: dict[tuple[str, str, int], int] = {}
        simple: dict[int, int] = {}
        rounds, reshows = set(), []
        for x, y, t, r, n, lo_, hi_ in rows:
            by_pair[(x, y, int(t))] = by_pair.get((x, y, int(t)), 0) + int(n)
            rounds.add(r)
            reshows += [lo_, hi_]
        for t, n in self._sql(f"SELECT ptype, sum(items) FROM summary WHERE simple AND {cond} GROUP BY ptype",
                              params):
            simple[int(t)] = int(n)
        codes: dict[int, int] = {}
        for code, value, n in self._sql(f"SELECT code, reshow_lo, count(*) FROM probes WHERE {probe_cond} "
                                        "GROUP BY ALL", probe_params):
            codes[int(code)] = codes.get(int(code), 0) + int(n)
            reshows.append(value)
        return PairCounts(
            pairs=tuple((x, y, t, n) for (x, y, t), n in sorted(by_pair.items())),
            kinds=self._kinds(ptype, cond, params, simple), rounds=len(rounds),
            probes=(codes.get(FIRST, 0), codes.get(SECOND, 0), codes.get(TIE, 0), codes.get(NULL, 0)),
            reshow=one_value(reshows),
            debias=self._debias(cond, params, probe_cond, probe_params) if "probabilities" in self.present else None)

    def pair_verdicts(self, judge: str, systems: Sequence[str]) -> dict[str, np.ndarray]:
        """One judge's pairs counted by (item, x, y, vx, vy, label): what a ranking, and agreement, work from.
        `item` numbers the items in the order of their names (the order `np.unique` sorts them in: by code
        point), `x` and `y` are indices into `systems`, `vx` and `vy` the pair table's verdict states, `label`
        its label code (`reading.reduce.LABEL_*`), `n` how many pairs. Needs every pair by key (`split=False`):
        the first pass of a split reduction counts simple items without them."""
        self._by_pair_key("pair_verdicts")
        frame = self._con.execute("""
            SELECT (dense_rank() OVER (ORDER BY item) - 1)::BIGINT AS item_index,
                   (list_position(?::VARCHAR[], x) - 1)::INTEGER AS x_index,
                   (list_position(?::VARCHAR[], y) - 1)::INTEGER AS y_index, vx::TINYINT AS vx_state,
                   vy::TINYINT AS vy_state, label::TINYINT AS label_code, n
            FROM (SELECT item, x, y, vx, vy, label, count(*)::BIGINT AS n FROM pairs WHERE judge = ? GROUP BY ALL)""",
                                  [list(systems), list(systems), judge]).fetchnumpy()
        # fetched narrow (the result DuckDB holds beside the arrays is a third of the size), widened column by column
        names = {"item": "item_index", "x": "x_index", "y": "y_index", "vx": "vx_state", "vy": "vy_state",
                 "label": "label_code", "n": "n"}
        out = {name: np.asarray(frame[column], dtype=np.int64) for name, column in names.items()}
        if out["x"].size and (out["x"].min() < 0 or out["y"].min() < 0):
            raise ValueError("systems must list every system of the judge's pairs")
        return out

    def pair_calls(self, judge: str, pair: tuple[str, str]) -> pl.DataFrame:
        """One judge's calls between the two systems of `pair`, in either order and file order, as `reading.records`
        normalises them (judge, round, item, first, second, verdict): one compared pair's rows read back from
        the file, never the whole file's."""
        a, b = pair
        rows = self._sql("SELECT judge, round, item, first, second, verdict FROM source WHERE judge = ? AND "
                         "((first = ? AND second = ?) OR (first = ? AND second = ?)) ORDER BY ord",
                         [judge, a, b, b, a])
        import polars as pl
        schema = {"judge": pl.String, "round": pl.Int64, "item": pl.String, "first": pl.String,
                  "second": pl.String, "verdict": pl.String}
        return pl.DataFrame(rows, schema=schema, orient="row")

    def _kinds(self, ptype: str, cond: str, params: list[Any], simple: dict[int, int]) -> Kinds:
        """The selection's items by multiset of pair types: an item of the first pass is one pair (`simple`:
        items by type); of the others, an item of one or two pairs is known by its count, least and greatest
        type (cheap to group), and the lists of the rest are gathered only when there are any."""
        found: dict[tuple[int, ...], int] = {(t,): n for t, n in simple.items()}

        def add(types: tuple[int, ...], n: int) -> None:
            found[types] = found.get(types, 0) + n

        small = self._sql(f"""
            SELECT c, lo, hi, count(*) FROM (SELECT count(*) AS c, min({ptype}) AS lo, max({ptype}) AS hi
                                             FROM pairs WHERE {cond} GROUP BY item) GROUP BY ALL""", params)
        large = False
        for c, lo, hi, n in small:
            if c <= 2:
                add((int(lo),) if c == 1 else (int(lo), int(hi)), int(n))
            else:
                large = True
        if large:
            for types, n in self._sql(f"""
                    SELECT types, count(*) FROM (SELECT list_sort(list({ptype})) AS types FROM pairs WHERE {cond}
                                                 GROUP BY item HAVING count(*) > 2) GROUP BY types""", params):
                add(tuple(int(t) for t in types), int(n))
        if not found:
            return Kinds.empty()
        ordered = sorted(found)
        return Kinds.from_lists([list(t) for t in ordered], [found[t] for t in ordered])

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

    # -- what a report reads besides the counts (`workflows.streamed_report`) ------------------------------------

    def verdict_states(self, judge: str | None = None, pair: tuple[str, str] | None = None) -> list[tuple[int, ...]]:
        """(vx, vy, pairs) of the pair table (one judge's, and of one system pair, when given): how many pairs
        have each combination of verdict states. Needs every pair by key (`split=False`)."""
        self._by_pair_key("verdict_states")
        cond, params = self._pair_filter(judge, pair)
        return [(int(vx), int(vy), int(n)) for vx, vy, n in
                self._sql(f"SELECT vx, vy, count(*) FROM pairs WHERE {cond} GROUP BY ALL ORDER BY ALL", params)]

    def _pair_filter(self, judge: str | None, pair: tuple[str, str] | None) -> tuple[str, list[Any]]:
        where, params = ["true"], []
        if judge is not None:
            where.append("judge = ?")
            params.append(judge)
        if pair is not None:
            where += ["x = ?", "y = ?"]
            params += sorted(pair)
        return " AND ".join(where), params

    def first_pairs(self, states: Sequence[int], limit: int, judge: str | None = None,
                    pair: tuple[str, str] | None = None) -> list[dict[str, Any]]:
        """The first `limit` pairs in file order (by their first call) whose `vx * 5 + vy` is one of `states`:
        judge, round, item, x, y, vx, vy, label (the first label given, as the pair table of `reading.pairs` has
        it) and the ordinals of the call that showed x first (`ord_xf`) and y first (`ord_yf`). A second read
        of the file, joined to the chosen pairs only."""
        self._by_pair_key("first_pairs")
        if limit <= 0 or not states:
            return []
        cond, params = self._pair_filter(judge, pair)
        # the first `limit` pairs by their first call (a top-N over the pair table), then one scan of the file
        # joined to those alone for the ordinal of each order's call
        rows = self._con.execute(f"""
            WITH chosen AS (SELECT judge, round, item, x, y, vx, vy, label_first AS label, ord FROM pairs
                            WHERE {cond} AND vx * 5 + vy IN (SELECT unnest(?::BIGINT[])) ORDER BY ord LIMIT ?),
                 placed AS (SELECT c.judge, c.round, c.item, c.x, c.y,
                                   min(s.ord) FILTER (WHERE s.first = c.x) AS ord_xf,
                                   min(s.ord) FILTER (WHERE s.first = c.y) AS ord_yf
                            FROM source s JOIN chosen c
                              ON s.judge = c.judge AND s.round = c.round AND s.item = c.item
                             AND s.first <> s.second AND least(s.first, s.second) = c.x
                             AND greatest(s.first, s.second) = c.y
                            GROUP BY ALL)
            SELECT c.judge, c.round, c.item, c.x, c.y, c.vx, c.vy, c.label, p.ord_xf, p.ord_yf
            FROM chosen c JOIN placed p USING (judge, round, item, x, y)
            ORDER BY c.ord""", [*params, list(states), limit]).fetchall()
        names = ("judge", "round", "item", "x", "y", "vx", "vy", "label", "ord_xf", "ord_yf")
        return [dict(zip(names, row, strict=True)) for row in rows]

    def record_values(self, ordinals: Sequence[int], names: Sequence[str]) -> dict[int, dict[str, Any]]:
        """The fields `names` of the records at these ordinals (1-based, as `first_pairs` gives them), as the
        file holds them (a field a record lacks is None): a few records' texts, never a column of the file."""
        import duckdb

        wanted = sorted({int(o) for o in ordinals})
        if not wanted or not names:
            return {o: dict.fromkeys(names) for o in wanted}
        try:
            if is_parquet(self.path):
                columns = ", ".join(_ident(n) for n in names)
                rows = self._sql(f"SELECT ordinality, {columns} FROM read_parquet({_quote(self.path)}) WITH ORDINALITY "
                                 "WHERE ordinality IN (SELECT unnest(?::BIGINT[]))", [wanted])
                return {int(o): dict(zip(names, values, strict=True)) for o, *values in rows}
            found = self._sql(f"SELECT ordinality, json FROM read_ndjson_objects({_quote(self.path)}) WITH ORDINALITY "
                              "WHERE ordinality IN (SELECT unnest(?::BIGINT[]))", [wanted])
        except duckdb.Error as err:
            raise _duckdb_error(self.path, err) from None
        out = {}
        for o, text in found:
            obj = json.loads(text)
            out[int(o)] = {n: obj.get(n) for n in names}
        return out

    def record_totals(self, numeric: Sequence[str], distinct: Sequence[str]) -> dict[str, Any]:
        """Facts about the whole file for a report's provenance: `calls`, `systems` (every system named, the
        identical-answer calls' included), the sum of each `numeric` field whose values are all numbers (ints
        summed as ints; a field with any other value is left out, as is one with no value), and the number of
        distinct values of each `distinct` field (a missing value counts as one, as polars counts it)."""
        import duckdb

        (calls,) = self._sql("SELECT coalesce(sum(n), 0) FROM groups")[0]
        (simple,) = self._sql("SELECT coalesce(sum(calls) FILTER (WHERE simple), 0) FROM summary "
                              "WHERE level = 1")[0]
        (systems,) = self._sql("""
            SELECT count(DISTINCT s) FROM (SELECT x AS s FROM groups UNION ALL SELECT y FROM groups UNION ALL
                                           SELECT x FROM summary WHERE simple UNION ALL
                                           SELECT y FROM summary WHERE simple) WHERE s IS NOT NULL""")[0]
        out: dict[str, Any] = {"calls": int(calls) + int(simple), "systems": int(systems)}
        parquet = is_parquet(self.path)
        # every field's aggregates in one scan of the file: (field, kind, number of aggregates) in select order
        aggs: list[str] = []
        read: list[tuple[str, str, int]] = []
        if parquet:
            kinds = self._parquet_columns()
            table = f"read_parquet({_quote(self.path)})"
            for name in numeric:
                kind = kinds.get(name, "")
                if kind in ("FLOAT", "DOUBLE", *_INTEGER_TYPES) or kind.startswith("DECIMAL"):
                    aggs += [f"sum({_ident(name)})", f"count({_ident(name)})"]
                    read.append((name, "int" if kind in _INTEGER_TYPES else "float", 2))
        else:
            values = [*numeric, *distinct]
            table = ("(SELECT " + ", ".join(
                f"json_type({_json_of(n)}) AS {_ident(f't{k}')}, {_json_of(n)} ->> '$' AS {_ident(f'v{k}')}"
                for k, n in enumerate(values)) + f" FROM read_ndjson_objects({_quote(self.path)}))")
            for k, name in enumerate(numeric):
                t, v = _ident(f"t{k}"), _ident(f"v{k}")
                aggs += [f"count(*) FILTER (WHERE {t} NOT IN ('BIGINT', 'UBIGINT', 'DOUBLE', 'NULL'))",
                         f"count(*) FILTER (WHERE {t} = 'DOUBLE')",
                         f"count(*) FILTER (WHERE {t} IN ('BIGINT', 'UBIGINT'))",
                         f"sum(CAST({v} AS DOUBLE)) FILTER (WHERE {t} IN ('BIGINT', 'UBIGINT', 'DOUBLE'))",
                         f"sum(CAST({v} AS HUGEINT)) FILTER (WHERE {t} IN ('BIGINT', 'UBIGINT'))"]
                read.append((name, "json", 5))
        for k, name in enumerate(distinct):
            expr = f"CAST({_ident(name)} AS VARCHAR)" if parquet else _ident(f"v{len(numeric) + k}")
            aggs += [f"count(DISTINCT {expr})", f"bool_or({expr} IS NULL)"]
            read.append((name, "distinct", 2))
        if not aggs:
            return out
        try:
            row = list(self._sql(f"SELECT {', '.join(aggs)} FROM {table}")[0])
        except duckdb.Error as err:
            raise _duckdb_error(self.path, err) from None
        for name, kind, width in read:
            got, row = row[:width], row[width:]
            if kind == "distinct":
                out[name] = int(got[0]) + int(bool(got[1]))
            elif kind == "json":
                other, floats, ints, total_f, total_i = got
                if not other and (floats or ints):
                    out[name] = float(total_f) if floats else int(total_i)
            elif got[1]:
                out[name] = int(got[0]) if kind == "int" else float(got[0])
        return out


def _json_of(name: str) -> str:
    """A field of a `read_ndjson_objects` row, as JSON (SQL null when the record lacks it)."""
    return f"json_extract(json, {_quote(_json_path(name))})"


def _json_lines_streamed(path: str, json_lines: Any) -> Iterator[tuple[int, Any]]:
    """`reading.textfiles.json_lines` one line at a time (the whole file never in memory); the first line that is
    not UTF-8 is named by its byte offset, as `decode_text` names it."""
    offset = 0
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as err:
                raise InputError(f"not UTF-8 text (byte {offset + err.start})", path=path) from None
            offset += len(raw)
            try:
                found = list(json_lines(text, path))
            except InputError as err:  # json_lines counts lines from the one it was given: name the file's line
                raise InputError(err.message, path=path, line=number, field=err.field) from None
            for _, value in found:
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


def parquet_rows(path: str | Path) -> int | None:
    """How many records a Parquet file holds, from its footer (None for another file, or one that cannot be
    read: the reader that follows names the problem)."""
    if not is_parquet(path):
        return None
    try:
        import polars as pl
        return int(pl.scan_parquet(path).select(pl.len()).collect().item())
    except Exception:
        return None


def record_fields(path: str | Path) -> list[str]:
    """The fields of a records file as the in-memory loader's frame has them: the record format's columns, then
    the others in the file's order (a Parquet file's schema; a JSON Lines file's keys by first appearance)."""
    import duckdb

    from swapjudge.reading.records import CORE_SCHEMA

    path = str(path)
    try:
        if is_parquet(path):
            import polars as pl
            names = list(pl.read_parquet_schema(path))
        else:
            with duckdb.connect(":memory:") as con:
                names = [str(k) for (k,) in con.execute(f"""
                    SELECT k FROM (SELECT ordinality AS r, unnest(json_keys(json)) AS k,
                                          generate_subscripts(json_keys(json), 1) AS i
                                   FROM read_ndjson_objects({_quote(path)}) WITH ORDINALITY)
                    GROUP BY k ORDER BY min(r * 100000 + i)""").fetchall()]
    except (duckdb.Error, OSError) as err:
        raise _duckdb_error(path, err) from None
    return [*CORE_SCHEMA, *(n for n in names if n not in CORE_SCHEMA and n != STRENGTH)]


def open_source(path: str | Path, *, allow_unpaired: bool = False, segment: str | None = None,
                missing_segment: str = "(missing)", split: bool | None = None) -> StreamingSource:
    """The streaming `PairSource` of a records file (JSON Lines or Parquet)."""
    return StreamingSource(str(path), allow_unpaired=allow_unpaired, segment=segment,
                           missing_segment=missing_segment, split=split)
