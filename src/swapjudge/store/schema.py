"""The run store's file: its SQLite schema, migrations, connection, and the rows it holds.

Every call is committed in its own transaction the moment its reply is in, so a `kill -9` at any point leaves
a consistent file in which every finished call is kept; the next run of the same configuration resumes the
unfinished run and makes only the missing calls. The cache is keyed by (judge hash, prompt hash): the same
judge configuration is never paid twice for the same prompt, across runs too.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

from swapjudge.errors import SwapjudgeError

SCHEMA_VERSION = "4"
# Schema 3 adds the batch tables (created empty in an older file; nothing else changes). The decisions ledger
# (`swapjudge decide`) is created the same way in any schema-3 file: additive, no version change. Schema 4 adds a
# graded verdict's `strength` to calls, superseded calls and the cache (null in an older file's rows).
OLDER_SCHEMAS = ("1", "2", "3")
# appended last in each table, in a new file as by ALTER TABLE in an older one, so the column order is the same
STRENGTH_TABLES = ("calls", "superseded_calls", "cache")
BUSY_TIMEOUT_S = 30.0  # how long a write waits for another process's write lock

# Run provenance added in schema 2 (run history): what makes two runs comparable. Added to a store made by
# schema 1 with ALTER TABLE and filled from each run's stored configuration (pair_set_hash stays unknown there).
PROVENANCE_COLUMNS: tuple[str, ...] = (
    "judge_model",
    "judge_version",
    "rubric_text",
    "rubric_hash",
    "template_hash",
    "schema",
    "tie_policy",
    "pair_set_hash",
)
# A run's provenance from its stored configuration (all columns but pair_set_hash), supplied by whoever opens
# the store for use (`runner.provenance.stored_provenance`): the store knows no prompt template or backend.
ProvenanceOf = Callable[[dict[str, Any]], dict[str, Any]]

# The columns of a stored call, in one order for `calls` and `superseded_calls` (each followed by its own, and
# `strength` last); only `calls` checks the verdict.
_CALL_COLUMNS = """\
    run_id INTEGER NOT NULL REFERENCES runs(id),
    round INTEGER NOT NULL DEFAULT 0,
    item TEXT NOT NULL,
    first TEXT NOT NULL,
    second TEXT NOT NULL,
    order_index INTEGER NOT NULL,
    label TEXT,
    prompt_hash TEXT,
    verdict TEXT{verdict_check},
    raw TEXT,
    input_tokens INTEGER,
    output_tokens INTEGER,
    cached_input_tokens INTEGER,
    latency_s REAL,
    cost_usd REAL,
    error TEXT,
    probabilities TEXT,
    settings TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    source TEXT NOT NULL,
    created_at TEXT NOT NULL"""
_VERDICT_CHECK = " CHECK (verdict IN ('first', 'second', 'tie') OR verdict IS NULL)"

_SCHEMA_TEMPLATE = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    config_hash TEXT NOT NULL,
    judge_hash TEXT NOT NULL,
    judge TEXT NOT NULL,
    config_json TEXT NOT NULL,
    config_path TEXT,
    pairs_digest TEXT NOT NULL,
    seed TEXT NOT NULL,
    orders TEXT NOT NULL,
    total_calls INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    ended_at TEXT,
    status TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_hash ON runs (config_hash, pairs_digest);
CREATE TABLE IF NOT EXISTS calls (
{calls_columns},
    strength INTEGER CHECK (strength IN (1, 2) OR strength IS NULL),
    PRIMARY KEY (run_id, round, item, first, second)
);
CREATE TABLE IF NOT EXISTS superseded_calls (
{superseded_columns},
    superseded_at TEXT NOT NULL,
    strength INTEGER
);
CREATE TABLE IF NOT EXISTS cache (
    judge_hash TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    verdict TEXT,
    raw TEXT,
    input_tokens INTEGER,
    output_tokens INTEGER,
    cached_input_tokens INTEGER,
    latency_s REAL,
    cost_usd REAL,
    probabilities TEXT,
    settings TEXT,
    created_at TEXT NOT NULL,
    strength INTEGER,
    PRIMARY KEY (judge_hash, prompt_hash)
);
CREATE TABLE IF NOT EXISTS anchor_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at TEXT NOT NULL,
    config_path TEXT,
    judge TEXT NOT NULL,
    judge_hash TEXT NOT NULL,
    judge_model TEXT,
    rubric_text TEXT NOT NULL,
    rubric_hash TEXT NOT NULL,
    reference_hash TEXT NOT NULL,
    pinned_path TEXT,
    tolerance REAL NOT NULL,
    flagged INTEGER NOT NULL,
    result_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_submissions (
    key TEXT PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    provider TEXT NOT NULL,
    wave INTEGER NOT NULL,
    requests INTEGER NOT NULL,
    planned_at REAL NOT NULL,
    file_id TEXT,
    batch_id TEXT,
    status TEXT NOT NULL,
    provider_status TEXT,
    counts TEXT,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS batch_submissions_by_run ON batch_submissions (run_id, status);
CREATE TABLE IF NOT EXISTS batch_requests (
    key TEXT NOT NULL REFERENCES batch_submissions(key),
    custom_id TEXT NOT NULL,
    round INTEGER NOT NULL,
    item TEXT NOT NULL,
    first TEXT NOT NULL,
    second TEXT NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (key, round, item, first, second)
);
CREATE INDEX IF NOT EXISTS batch_requests_by_id ON batch_requests (key, custom_id);
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    decided_at TEXT NOT NULL,
    decision_key TEXT NOT NULL,
    decision_hash TEXT NOT NULL,
    decision_json TEXT NOT NULL,
    source TEXT NOT NULL,
    run_id INTEGER,
    verdict TEXT NOT NULL,
    items INTEGER,
    result_json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS decisions_by_key ON decisions (decision_key, id);
CREATE TABLE IF NOT EXISTS anchor_scores (
    run_id INTEGER NOT NULL REFERENCES anchor_runs(id),
    item TEXT NOT NULL,
    exemplar INTEGER NOT NULL,
    score INTEGER,
    raw TEXT,
    probabilities TEXT,
    PRIMARY KEY (run_id, item)
);
"""
_SCHEMA = _SCHEMA_TEMPLATE.format(calls_columns=_CALL_COLUMNS.format(verdict_check=_VERDICT_CHECK),
                                  superseded_columns=_CALL_COLUMNS.format(verdict_check=""))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class CallRecord:
    """One stored judge call (a presentation record plus provenance)."""

    item: str
    first: str
    second: str
    order_index: int
    verdict: str | None
    source: str  # api | cache | identical | replay
    round: int = 0
    label: str | None = None
    prompt_hash: str | None = None
    raw: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    latency_s: float | None = None
    cost_usd: float | None = None
    error: str | None = None
    probabilities: dict[str, float] | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    attempts: int = 0
    strength: int | None = None  # a graded verdict's: 1 slightly, 2 much better (docs/records.md)


@dataclass(frozen=True)
class CachedReply:
    verdict: str | None
    raw: str | None
    input_tokens: int | None
    output_tokens: int | None
    cached_input_tokens: int | None
    latency_s: float | None
    cost_usd: float | None
    probabilities: dict[str, float] | None
    settings: dict[str, Any]
    strength: int | None = None


@dataclass(frozen=True)
class RunInfo:
    id: int
    config_hash: str
    judge_hash: str
    judge: str
    config: dict[str, Any]
    config_path: str | None
    pairs_digest: str
    seed: str
    orders: str
    total_calls: int
    started_at: str
    ended_at: str | None
    status: str
    stored_calls: int = 0
    failed_calls: int = 0
    cost_usd: float = 0.0
    judge_model: str | None = None
    judge_version: str | None = None
    rubric_text: str | None = None
    rubric_hash: str | None = None
    template_hash: str | None = None
    schema: str | None = None
    tie_policy: str | None = None
    pair_set_hash: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True)


def _loads(value: str | None) -> Any:
    return None if value is None else json.loads(value)


class StoreFile:
    """A SQLite store file. One connection, used from one thread (the runner's event loop). With `provenance_of`,
    runs registered without provenance get theirs derived from their stored configuration (at open, and when
    `create_run` is given none); without it they keep what they were registered with."""

    def __init__(self, path: str | Path, *, provenance_of: ProvenanceOf | None = None) -> None:
        self.path = Path(path)
        self._provenance_of = provenance_of
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise SwapjudgeError(f"{self.path}: cannot create the store's folder: {err.strerror}") from None
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            db: sqlite3.Connection | None = None
            try:
                self._db = db = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
                self._open()
                return
            except sqlite3.DatabaseError as err:
                if db is not None:
                    db.close()
                if "locked" in str(err) and time.monotonic() < deadline:
                    # Another process is creating or migrating the file; switching to WAL does not wait for it.
                    time.sleep(0.05)
                    continue
                if "locked" in str(err):
                    raise SwapjudgeError(f"{self.path}: the store is locked by another process ({err}) for more "
                                         f"than {BUSY_TIMEOUT_S:g} s; run again when it is free") from None
                raise SwapjudgeError(f"{self.path}: not a usable swapjudge store ({err})") from None

    def _open(self) -> None:
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a committed transaction survives a killed process (not a power cut).
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(_SCHEMA)
        self._migrate()

    def _to_migrate(self) -> tuple[str, list[str], bool, list[str]] | None:
        """What this file lacks: (its schema version, provenance columns missing, runs to fill, tables without a
        `strength` column), or None."""
        row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = SCHEMA_VERSION if row is None else row[0]
        have = {r[1] for r in self._db.execute("PRAGMA table_info(runs)")}
        missing = [c for c in PROVENANCE_COLUMNS if c not in have]
        no_strength = [t for t in STRENGTH_TABLES
                       if "strength" not in {r[1] for r in self._db.execute(f"PRAGMA table_info({t})")}]
        # Runs registered by an older swapjudge in a current file still get their provenance filled in.
        unfilled = bool(self._provenance_of is not None and not missing
                        and self._db.execute("SELECT 1 FROM runs WHERE rubric_hash IS NULL LIMIT 1").fetchone())
        if not missing and not no_strength and not unfilled and row is not None and version == SCHEMA_VERSION:
            return None
        if version not in (*OLDER_SCHEMAS, SCHEMA_VERSION):
            raise SwapjudgeError(f"{self.path}: store schema {version} is newer than this swapjudge ({SCHEMA_VERSION})")
        return version, missing, unfilled, no_strength

    def _migrate(self) -> None:
        """Bring a store of an older schema up to this one, in one transaction (a kill leaves the old file). What
        is missing is read again under the write lock: another process may have migrated the file meanwhile."""
        if self._to_migrate() is None:
            return
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            todo = self._to_migrate()
            for col in [] if todo is None else todo[1]:
                db.execute(f"ALTER TABLE runs ADD COLUMN {col} TEXT")
            for table in [] if todo is None else todo[3]:  # last, as in a new file, so rows keep their order
                db.execute(f"ALTER TABLE {table} ADD COLUMN strength INTEGER")
            derive = self._provenance_of
            rows = [] if derive is None or todo is None else db.execute(
                "SELECT id, config_json FROM runs WHERE rubric_hash IS NULL").fetchall()
            for run_id, config_json in rows:
                assert derive is not None
                prov = derive(json.loads(config_json))
                if not prov:
                    continue
                sets = ", ".join(f"{k}=?" for k in prov)
                db.execute(f"UPDATE runs SET {sets} WHERE id=?", (*prov.values(), run_id))
            db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

