"""The run store's file: its SQLite schema, migrations, connection, and the rows it holds.

Every call is committed in its own transaction the moment its reply is in, so a `kill -9` at any point leaves
a consistent file in which every finished call is kept; the next run of the same configuration resumes the
unfinished run and makes only the missing calls. The cache is keyed by (judge hash, prompt hash): the same
judge configuration is never paid twice for the same prompt, across runs too.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

from swapjudge.errors import SwapjudgeError
from swapjudge.redact import unicode_safe
from swapjudge.store.connection import (
    SQLITE_MAGIC,
    StoreConnection,
    StoreDamagedError,
    StoreError,
    StoreReadOnlyError,
    check_problems,
    connect,
    damaged,
    describe_problems,
)

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


def utc_now() -> str:
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


def _safe_tree(value: Any) -> Any:
    """A JSON value with every text valid UTF-8 (lone surrogates replaced), keys included."""
    if isinstance(value, str):
        return unicode_safe(value)
    if isinstance(value, dict):
        return {_safe_tree(k): _safe_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_safe_tree(v) for v in value]
    return value


def json_or_none(value: Any) -> str | None:
    """A value as the JSON text the store keeps; a lone surrogate in it is replaced rather than kept as an escape
    (`\\udced`) that would come back as a text no file can hold. Escaped surrogates are rare (emoji), so the
    value is walked only when its JSON shows one."""
    if value is None:
        return None
    text = json.dumps(value, sort_keys=True)
    return json.dumps(_safe_tree(value), sort_keys=True) if "\\ud" in text else text




class StoreFile:
    """A SQLite store file. One connection, used from one thread (the runner's event loop). With `provenance_of`,
    runs registered without provenance get theirs derived from their stored configuration (at open, and when
    `create_run` is given none); without it they keep what they were registered with.

    `read_only` opens an existing store for reading and writes nothing to it (a store on a read-only file system
    or mount is read as well); a store of an older schema is upgraded first when its file can be written (in a
    copy in memory when it cannot), and provenance missing from old runs is derived in memory. Whatever the
    mode, the schema version is read before anything is written, so a store of a newer swapjudge is refused
    untouched."""

    def __init__(self, path: str | Path, *, provenance_of: ProvenanceOf | None = None,
                 read_only: bool = False) -> None:
        self.path = Path(path)
        self._provenance_of = provenance_of
        self.read_only = read_only
        if read_only:
            self._db = self._open_read_only()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise SwapjudgeError(f"{self.path}: cannot create the store's folder: {err.strerror}") from None
        if not self._writable():
            # SQLite would open it read-only without a word, and the first write would fail
            raise StoreReadOnlyError(f"{self.path}: store is read-only (its file or folder cannot be written); a "
                                     "command that writes needs a writable store: copy it to a writable place, or "
                                     "give {store} another path", arguments=("store",))
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            db: sqlite3.Connection | None = None
            try:
                self._refuse_newer()
                self._db = db = connect(self.path, timeout_s=BUSY_TIMEOUT_S)
                self._open()
                return
            except StoreError:
                if db is not None:
                    db.close()
                raise
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

    def _check_header(self) -> bool:
        """Whether the file holds anything yet; a file that is not an SQLite database is refused here."""
        try:
            with self.path.open("rb") as handle:
                head = handle.read(len(SQLITE_MAGIC))
        except FileNotFoundError:
            return False
        except OSError as err:
            raise StoreError(f"{self.path}: cannot read the store: {err.strerror}") from None
        if head and head != SQLITE_MAGIC:
            raise StoreError(f"{self.path}: not a usable swapjudge store (its first bytes are not an SQLite "
                             "database's: another kind of file, or a store damaged in its header)")
        return bool(head)

    def _reader(self) -> StoreConnection:
        """A connection that writes nothing. A store on a read-only file system whose write-ahead log was
        checkpointed (no -wal file) has no shared-memory file either and is opened as immutable."""
        db = connect(self.path, read_only=True, timeout_s=BUSY_TIMEOUT_S)
        try:
            db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone()
            return db
        except StoreError:
            db.close()
            if self._writable():
                raise
            wal, shm = (self.path.with_name(self.path.name + suffix) for suffix in ("-wal", "-shm"))
            if wal.exists() and wal.stat().st_size > 0:
                if shm.exists():
                    raise
                raise StoreReadOnlyError(
                    f"{self.path}: store is read-only and holds writes in its -wal file that cannot be read here "
                    "without its -shm file: copy the store with its -wal file to a writable place") from None
        # read-only and no write-ahead log to read: nothing but this file, which no one can change
        db = connect(self.path, immutable=True, timeout_s=BUSY_TIMEOUT_S)
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone()
        return db

    def _writable(self) -> bool:
        """Whether the store can be written: its folder (for the -wal and -shm files), and its file if it exists
        (a read-only file system says no even to root)."""
        folder = os.access(self.path.parent, os.W_OK)
        return folder and (os.access(self.path, os.W_OK) or not self.path.exists())

    @staticmethod
    def _version(db: sqlite3.Connection) -> str | None:
        """The schema version a store says it has (None: a file without one: new, or older than the meta table)."""
        if db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone() is None:
            return None
        row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return None if row is None else str(row[0])

    def _refuse_newer(self, version: str | None = None) -> None:
        """Refuse a store of a newer swapjudge before anything is written to it (read through a connection that
        writes nothing)."""
        if version is None:
            if not self._check_header():
                return
            reader = self._reader()
            try:
                version = self._version(reader)
            finally:
                reader.close()
        if version is not None and version not in (*OLDER_SCHEMAS, SCHEMA_VERSION):
            raise StoreError(f"{self.path}: store schema {version} is newer than this swapjudge ({SCHEMA_VERSION}): "
                             "upgrade swapjudge to read it (the store was left as it was)")

    def _open_read_only(self) -> StoreConnection:
        if not self.path.exists():
            raise StoreError(f"{self.path}: no run store here")
        if not self._check_header():
            # an empty file is an empty store (SQLite's own reading of it): its tables, empty, in memory
            empty = connect(Path(":memory:"), timeout_s=BUSY_TIMEOUT_S)
            empty.executescript(_SCHEMA)
            for column in PROVENANCE_COLUMNS:
                empty.execute(f"ALTER TABLE runs ADD COLUMN {column} TEXT")
            empty.execute("INSERT INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
            empty.path = self.path
            return empty
        db = self._reader()
        try:
            version = self._version(db)
            self._refuse_newer(version or SCHEMA_VERSION)
            have = {r[1] for r in db.execute("PRAGMA table_info(runs)")}
            if not have:
                raise StoreError(f"{self.path}: not a swapjudge run store (an SQLite file without its runs table)")
            if version == SCHEMA_VERSION and set(PROVENANCE_COLUMNS) <= have:
                return db
        except BaseException:
            db.close()
            raise
        if not self._writable():
            return self._upgraded_in_memory(db)
        db.close()
        # An older schema: upgraded by a writable open (one transaction), then read as any other.
        StoreFile(self.path, provenance_of=self._provenance_of).close()
        return self._reader()

    def _upgraded_in_memory(self, source: StoreConnection) -> StoreConnection:
        """A read-only store of an older schema, copied into memory and upgraded there: the file is never written
        (it cannot be), and the copy holds the whole store while it is open."""
        copy = connect(Path(":memory:"), timeout_s=BUSY_TIMEOUT_S)
        try:
            try:
                source.backup(copy)
            except (sqlite3.Error, UnicodeDecodeError) as err:
                raise source.failure(err) from None
            finally:
                source.close()
            copy.path = self.path
            self._db = copy
            copy.executescript(_SCHEMA)
            self._migrate()
        except BaseException:
            copy.close()
            raise
        return copy

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
        version = self._version(self._db)
        have = {r[1] for r in self._db.execute("PRAGMA table_info(runs)")}
        missing = [c for c in PROVENANCE_COLUMNS if c not in have]
        no_strength = [t for t in STRENGTH_TABLES
                       if "strength" not in {r[1] for r in self._db.execute(f"PRAGMA table_info({t})")}]
        # Runs registered by an older swapjudge in a current file still get their provenance filled in.
        unfilled = bool(self._provenance_of is not None and not missing
                        and self._db.execute("SELECT 1 FROM runs WHERE rubric_hash IS NULL LIMIT 1").fetchone())
        if not missing and not no_strength and not unfilled and version == SCHEMA_VERSION:
            return None
        self._refuse_newer(version or SCHEMA_VERSION)
        return version or SCHEMA_VERSION, missing, unfilled, no_strength

    def _migrate(self) -> None:
        """Bring a store of an older schema up to this one, in one transaction (a kill leaves the old file). What
        is missing is read again under the write lock: another process may have migrated the file meanwhile."""
        if self._to_migrate() is None:
            return
        with self.transaction() as db:
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
                prov = derive(self.json_value(config_json, f"the configuration of run {run_id}"))
                if not prov:
                    continue
                sets = ", ".join(f"{k}=?" for k in prov)
                db.execute(f"UPDATE runs SET {sets} WHERE id=?", (*prov.values(), run_id))
            db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[StoreConnection]:
        """One write transaction: committed when the block ends cleanly, rolled back otherwise. SQLite may have
        rolled back already (a full disk does that); the error that ended the block is the one raised."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error, StoreError):
                    sqlite3.Connection.execute(db, "ROLLBACK")
            raise

    def json_value(self, value: str | None, what: str | Callable[[], str]) -> Any:
        """A JSON cell read back (None stays None); one that does not parse is a damaged store, named by `what`
        (or what `what()` says: a row's name is made only when it is needed)."""
        if value is None:
            return None
        try:
            return json.loads(value)
        except ValueError:
            name = what if isinstance(what, str) else what()
            raise damaged(self.path, f"{name} is not valid JSON", self._db) from None

    def check(self, *, full: bool = True) -> list[str]:
        """The problems `PRAGMA integrity_check` finds in the file (`full`: every index compared with its table
        too), or `quick_check` (the structure only); [] when it is sound."""
        return check_problems(self._db, "integrity_check" if full else "quick_check")

    def raise_if_damaged(self) -> None:
        """`StoreDamagedError` when `PRAGMA quick_check` finds the file's structure damaged. A run checks before
        its first call: SQLite goes on writing through a damaged index without a word (and the run with it,
        paying again for calls it no longer finds)."""
        problems = self.check(full=False)
        if problems:
            raise StoreDamagedError(f"{self.path}: store is damaged: {describe_problems(problems)}; nothing was "
                                    "asked of the judge. Restore it from a copy, or recover what is readable with "
                                    "`sqlite3 FILE .recover`")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
