"""The store's SQLite connection: every failure of the file said in words, and every text it writes valid UTF-8.

SQLite's own errors say what broke, not what to do: `database or disk is full`, `attempt to write a readonly
database`, `database disk image is malformed`, a UTF-8 decoding error in a damaged cell or in the schema itself.
Every statement of the store goes through `StoreConnection`, which turns them into one-line `StoreError`s naming
the file: disk full (`StoreFullError`), read-only (`StoreReadOnlyError`), damaged (`StoreDamagedError`, with
what `PRAGMA quick_check` finds). A lock held by another process stays the `sqlite3.OperationalError` it is:
the runner waits for it and retries.

Every text bound to a statement has its lone surrogates replaced (`redact.unicode_safe`): a judge's reply whose
JSON carries `\\udced` is stored, and nothing the store writes makes the encoder fail.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

from swapjudge.errors import SwapjudgeError
from swapjudge.redact import unicode_safe

Connection = TypeVar("Connection", bound=sqlite3.Connection)  # what `connect` returns: the factory given

CHECK_LIMIT = 10  # problems a check lists at most (quick_check stops counting there)


class StoreError(SwapjudgeError):
    """A run store that cannot be used as it is (exit 2)."""


class StoreFullError(StoreError):
    """The disk (or the file system's quota) is full: the write was not made; what was committed before is kept."""

    def __init__(self, path: Path, unstored: int | None = None) -> None:
        self.path, self.unstored = path, unstored
        counted = "" if unstored is None else f" ({unstored:,} {'reply' if unstored == 1 else 'replies'} not stored)"
        super().__init__(f"{path}: disk full{counted}; every call stored before is kept: free space and run the "
                         "same command again to make only the calls that are missing")

    def counting(self, unstored: int) -> StoreFullError:
        """The same error, saying how many paid replies could not be stored."""
        return StoreFullError(self.path, unstored)


class StoreReadOnlyError(StoreError):
    """The store's file or folder cannot be written (a read-only file system or mount, or permissions)."""


class StoreDamagedError(StoreError):
    """The file's structure or a value in it is damaged; says what `PRAGMA quick_check` found."""


def _text(value: Any) -> Any:
    return unicode_safe(value) if isinstance(value, str) else value


def safe_params(params: Any) -> Any:
    """Statement parameters with every text valid UTF-8 (lone surrogates replaced)."""
    if isinstance(params, Mapping):
        return {k: _text(v) for k, v in params.items()}
    if isinstance(params, list | tuple):
        return tuple(_text(v) for v in params)
    return params


def check_problems(db: sqlite3.Connection, pragma: str = "quick_check") -> list[str]:
    """What `PRAGMA quick_check` (or `integrity_check`) finds, one problem a line; [] when the file is sound. A
    file too damaged to check gives the error the check raised."""
    try:
        rows = sqlite3.Connection.execute(db, f"PRAGMA {pragma}({CHECK_LIMIT})").fetchall()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
        return [f"{pragma} could not run ({err})"]
    lines = [line for (text,) in rows for line in str(text).splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("*** in database")]
    return [] if lines == ["ok"] else lines


def describe_problems(problems: Sequence[str], pragma: str = "quick_check") -> str:
    if not problems:
        return f"PRAGMA {pragma} finds the file's structure sound, so the damage is in a stored value"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"PRAGMA {pragma}: {problems[0]}{more}"


class StoreConnection(sqlite3.Connection):
    """A connection whose statements raise `StoreError`s (see the module) and bind only valid UTF-8 text."""

    path: Path = Path()

    def failure(self, err: Exception) -> Exception:
        """The error to raise for `err`, which a statement on this store raised."""
        return store_failure(self.path, err, self)

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        try:
            return StoreCursor(self).execute(sql, parameters)
        except (sqlite3.Error, UnicodeDecodeError) as err:
            raise self.failure(err) from None

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        try:
            return StoreCursor(self).executemany(sql, parameters)
        except (sqlite3.Error, UnicodeDecodeError) as err:
            raise self.failure(err) from None

    def executescript(self, sql_script: str, /) -> sqlite3.Cursor:
        try:
            return super().executescript(sql_script)
        except (sqlite3.Error, UnicodeDecodeError) as err:
            raise self.failure(err) from None


class StoreCursor(sqlite3.Cursor):
    """A cursor of a `StoreConnection`: binds valid text, and reading a damaged page raises StoreDamagedError."""

    connection: StoreConnection

    def execute(self, sql: str, parameters: Any = (), /) -> StoreCursor:
        try:
            super().execute(sql, safe_params(parameters))
        except (sqlite3.Error, UnicodeDecodeError) as err:
            raise self.connection.failure(err) from None
        return self

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /) -> StoreCursor:
        try:
            super().executemany(sql, (safe_params(p) for p in seq_of_parameters))
        except (sqlite3.Error, UnicodeDecodeError) as err:
            raise self.connection.failure(err) from None
        return self

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except (sqlite3.Error, UnicodeDecodeError) as err:
            raise self.connection.failure(err) from None

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except (sqlite3.Error, UnicodeDecodeError) as err:
            raise self.connection.failure(err) from None

    def __iter__(self) -> StoreCursor:
        return self

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except (sqlite3.Error, UnicodeDecodeError) as err:
            raise self.connection.failure(err) from None


_LOCKED = ("SQLITE_BUSY", "SQLITE_LOCKED")
_DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


def store_failure(path: Path, err: Exception, db: sqlite3.Connection | None = None) -> Exception:
    """The `StoreError` for an error a statement on the store at `path` raised; a lock held by another process,
    a constraint and a programming error come back as they are."""
    name = str(getattr(err, "sqlite_errorname", "") or "")
    if name.startswith(_LOCKED) or isinstance(err, sqlite3.IntegrityError | sqlite3.ProgrammingError):
        return err
    if name.startswith("SQLITE_FULL"):
        return StoreFullError(path)
    if name.startswith("SQLITE_READONLY"):
        return StoreReadOnlyError(f"{path}: store is read-only ({err}); a command that writes needs a writable "
                                  "store: copy it to a writable place, or give --store another path")
    if name.startswith("SQLITE_CANTOPEN"):
        return StoreError(f"{path}: cannot open the store ({err})")
    if name.startswith("SQLITE_IOERR"):
        return StoreError(f"{path}: the store cannot be read or written ({err}): is its disk full or failing?")
    decoding = isinstance(err, UnicodeDecodeError) or "decode" in str(err).lower()
    if name.startswith(_DAMAGED) or decoding or "malformed" in str(err):
        detail = "a text that is not valid UTF-8" if isinstance(err, UnicodeDecodeError) else str(err)
        return damaged(path, detail, db)
    return err


def damaged(path: Path, detail: str, db: sqlite3.Connection | None) -> StoreDamagedError:
    """The one-line error for a damaged store, with what `PRAGMA quick_check` finds in it."""
    checked = describe_problems(check_problems(db)) if db is not None else "not checked"
    return StoreDamagedError(f"{path}: store is damaged: {detail}; {checked}. Restore it from a copy, or recover "
                             "what is readable with `sqlite3 FILE .recover`")


SQLITE_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database


def is_sqlite_file(path: str | Path) -> bool:
    """Whether the file at `path` is an SQLite database (a run store or a review store) rather than a records
    file: the one test every command uses. False for anything unreadable, which the reader that follows names."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


@overload
def connect(path: Path, *, read_only: bool = ..., immutable: bool = ..., timeout_s: float,
            check_same_thread: bool = ...) -> StoreConnection: ...
@overload
def connect(path: Path, *, read_only: bool = ..., immutable: bool = ..., timeout_s: float,
            check_same_thread: bool = ..., factory: type[Connection]) -> Connection: ...
def connect(path: Path, *, read_only: bool = False, immutable: bool = False, timeout_s: float,
            check_same_thread: bool = True, factory: type[sqlite3.Connection] = StoreConnection) -> Any:
    """A connection to the SQLite file at `path` (autocommit: the store opens its own transactions), the one
    place a database is opened. `read_only` opens it so that nothing is written; `immutable` also tells SQLite
    that no other process writes the file (a file on a read-only file system, with no write-ahead log to read).
    `factory`: `StoreConnection` (a run store: every failure a one-line `StoreError`), or `sqlite3.Connection` for
    a store that names its own errors (the review store)."""
    if read_only or immutable:
        mode = "immutable=1" if immutable else "mode=ro"
        target: str | Path = f"{path.resolve().as_uri()}?{mode}"
    else:
        target = path
    db = sqlite3.connect(target, isolation_level=None, timeout=timeout_s, uri=read_only or immutable,
                         check_same_thread=check_same_thread, factory=factory)
    if isinstance(db, StoreConnection):
        db.path = path
    return db
