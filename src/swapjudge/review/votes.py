"""The review store: one SQLite file holding a live review's plan, its tokens and every vote.

Every vote is committed (WAL, synchronous=FULL) before the server acknowledges it, so a crash, Ctrl-C or kill -9
loses no acknowledged vote; a task has at most one live vote (a unique index), so a vote sent again after a
crash is recognised, never stored twice. An undo marks a vote undone and keeps it, so the store is a full log.
The plan is written once, at the first start; a restart reads it back and refuses options that would change it.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swapjudge.errors import ArgumentError, InputError, SwapjudgeError
from swapjudge.review.assign import ReviewPlan
from swapjudge.store.connection import connect

SCHEMA_VERSION = "1"
CHOICES = ("1", "2", "tie", "both_bad")
OWNER = "owner"
BUSY_TIMEOUT_S = 30.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS principals (
    name TEXT NOT NULL, role TEXT NOT NULL CHECK (role IN ('reviewer', 'owner')), token TEXT NOT NULL UNIQUE,
    PRIMARY KEY (role, name));
CREATE TABLE IF NOT EXISTS pairs (
    pair INTEGER PRIMARY KEY, item TEXT NOT NULL, x TEXT NOT NULL, y TEXT NOT NULL, prompt TEXT NOT NULL,
    text_x TEXT NOT NULL, text_y TEXT NOT NULL, label TEXT,
    origin TEXT NOT NULL CHECK (origin IN ('sample', 'queue')), UNIQUE (item, x, y));
CREATE TABLE IF NOT EXISTS tasks (
    task TEXT PRIMARY KEY, reviewer TEXT NOT NULL, position INTEGER NOT NULL,
    pair INTEGER NOT NULL REFERENCES pairs (pair), first TEXT NOT NULL, second TEXT NOT NULL,
    reshow_of TEXT REFERENCES tasks (task), UNIQUE (reviewer, position));
CREATE TABLE IF NOT EXISTS votes (
    vote INTEGER PRIMARY KEY AUTOINCREMENT, task TEXT NOT NULL REFERENCES tasks (task), reviewer TEXT NOT NULL,
    choice TEXT NOT NULL CHECK (choice IN ('1', '2', 'tie', 'both_bad')), voted_at REAL NOT NULL,
    seconds REAL, undone_at REAL);
CREATE UNIQUE INDEX IF NOT EXISTS one_live_vote ON votes (task) WHERE undone_at IS NULL;
CREATE INDEX IF NOT EXISTS votes_of_reviewer ON votes (reviewer, undone_at);
CREATE TABLE IF NOT EXISTS draws (
    pair INTEGER PRIMARY KEY REFERENCES pairs (pair), pi REAL NOT NULL CHECK (pi > 0 AND pi <= 1),
    design TEXT NOT NULL);
"""
# `draws`: the probability the sampling design drew each sample pair's item (stores made before it have none)


class ReviewStoreError(InputError):
    """The review store cannot be used as asked (not a review store, made with other options)."""


class NoSuchTask(SwapjudgeError):
    """The task is not one of this reviewer's (or does not exist: the two are not told apart)."""


class AlreadyVoted(SwapjudgeError):
    """The task already has a live vote with another choice: undo it first."""


@dataclass(frozen=True)
class Principal:
    name: str
    role: str  # reviewer | owner


@dataclass(frozen=True)
class Progress:
    done: int
    total: int

    def to_dict(self) -> dict[str, int]:
        return {"done": self.done, "total": self.total}


@dataclass(frozen=True)
class TaskView:
    """What a reviewer is shown: no system name, no item id."""

    task: str
    prompt: str
    response_1: str
    response_2: str
    progress: Progress

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "prompt": self.prompt, "response_1": self.response_1,
                "response_2": self.response_2, "progress": self.progress.to_dict()}


@dataclass(frozen=True)
class VoteResult:
    vote: int
    task: str
    choice: str
    repeated: bool  # the same vote was already stored (a retry): nothing new was written
    progress: Progress

    def to_dict(self) -> dict[str, Any]:
        return {"ok": True, "vote": self.vote, "task": self.task, "choice": self.choice,
                "repeated": self.repeated, "progress": self.progress.to_dict()}


def _connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    try:
        db = connect(path, read_only=readonly, timeout_s=BUSY_TIMEOUT_S, check_same_thread=False,
                     factory=sqlite3.Connection)
        if not readonly:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # a vote is a person's work: survive a power cut, not just a kill
        db.execute("PRAGMA foreign_keys=ON")
        db.row_factory = sqlite3.Row
        return db
    except sqlite3.DatabaseError as err:
        raise ReviewStoreError(f"cannot open as a review store: {err}", path=str(path)) from None


class ReviewStore:
    """A review store opened for serving (one connection, used by one thread at a time)."""

    def __init__(self, path: str | Path, db: sqlite3.Connection) -> None:
        self.path = Path(path)
        self._db = db
        self._totals: dict[str, int] = {}
        self._tokens: dict[bytes, Principal] = {}
        self._served: dict[str, float] = {}  # task -> when it was first shown (the vote's `seconds`)
        for row in db.execute("SELECT name, role, token FROM principals"):
            self._tokens[_digest(row["token"])] = Principal(row["name"], row["role"])
        for row in db.execute("SELECT reviewer, COUNT(*) AS n FROM tasks GROUP BY reviewer"):
            self._totals[row["reviewer"]] = int(row["n"])

    # ---- opening -------------------------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path) -> ReviewStore:
        """An existing review store."""
        path = Path(path)
        if not path.is_file():
            raise ReviewStoreError("no such review store", path=str(path))
        db = _connect(path)
        _check_is_review_store(db, path)
        return cls(path, db)

    @classmethod
    def create_or_resume(cls, path: str | Path, make_plan: Callable[[], ReviewPlan],
                         config: Mapping[str, Any]) -> tuple[ReviewStore, bool]:
        """(store, resumed): a new store with the plan `make_plan()` draws, or an existing one resumed when it
        was made with the same `config` (else a ReviewStoreError names the first option that differs). A `seed`
        of None in `config` takes the plan's seed."""
        path = Path(path)
        if path.exists() and path.stat().st_size > 0:
            store = cls.open(path)
            store.check_config(config)
            return store, True
        plan = make_plan()
        config = {**config, "seed": plan.seed}
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)  # it holds the tokens: the owner's eyes only
        os.close(fd)
        db = _connect(path)
        with _transaction(db):
            # statement by statement: executescript would commit half a store
            for statement in filter(None, (s.strip() for s in _SCHEMA.split(";"))):
                db.execute(statement)
            meta = {"schema_version": SCHEMA_VERSION, "config": json.dumps(dict(config), sort_keys=True),
                    "seed": str(plan.seed), "created_at": str(time.time())}
            db.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta.items())
            reviewers = list(dict.fromkeys(t.reviewer for t in plan.tasks))
            for name in reviewers:
                db.execute("INSERT INTO principals VALUES (?, 'reviewer', ?)", (name, secrets.token_urlsafe(32)))
            db.execute("INSERT INTO principals VALUES (?, 'owner', ?)", (OWNER, secrets.token_urlsafe(32)))
            db.executemany("INSERT INTO pairs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           [(i, p.item, p.x, p.y, p.prompt, p.text_x, p.text_y, p.label, p.origin)
                            for i, p in enumerate(plan.pairs)])
            db.executemany("INSERT INTO draws VALUES (?, ?, ?)",
                           [(i, p.pi, plan.design or ("simple_random" if p.pi < 1.0 else "all"))
                            for i, p in enumerate(plan.pairs) if p.pi is not None])
            db.executemany("INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?)",
                           [(t.task, t.reviewer, t.position, t.pair, t.first, t.second, t.reshow_of)
                            for t in sorted(plan.tasks, key=lambda t: t.reshow_of is not None)])
        return cls(path, db), False

    def close(self) -> None:
        self._db.close()

    def meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row["value"])

    @property
    def config(self) -> dict[str, Any]:
        return dict(json.loads(self.meta("config") or "{}"))

    def check_config(self, config: Mapping[str, Any]) -> None:
        stored = self.config
        for key, value in config.items():
            if key == "seed" and value is None:
                continue  # no seed asked for: the stored one is kept
            if stored.get(key) == value:
                continue
            fix = "start with the same options to resume, or make a new store"
            if key.endswith("_sha256"):
                what = key.removesuffix("_sha256")
                raise ReviewStoreError(f"the {what} file is not the one this review store was made with: {fix}",
                                       path=str(self.path))
            raise ReviewStoreError(
                f"this review store was made with {{{key}}} {json.dumps(stored.get(key))}, this start asks for "
                f"{json.dumps(value)}: {fix}", path=str(self.path), arguments=(key,))

    # ---- tokens --------------------------------------------------------------------------------------------

    def principal(self, token: str | None) -> Principal | None:
        if not token:
            return None
        return self._tokens.get(_digest(token))

    def tokens(self) -> list[tuple[Principal, str]]:
        """(principal, token) of every reviewer in plan order, then the owner."""
        rows = self._db.execute("SELECT p.name, p.role, p.token FROM principals p LEFT JOIN "
                                "(SELECT reviewer, MIN(rowid) AS r FROM tasks GROUP BY reviewer) t "
                                "ON t.reviewer = p.name ORDER BY p.role = 'owner', t.r").fetchall()
        return [(Principal(r["name"], r["role"]), r["token"]) for r in rows]

    @property
    def reviewers(self) -> list[str]:
        return [p.name for p, _ in self.tokens() if p.role == "reviewer"]

    # ---- reviewing -----------------------------------------------------------------------------------------

    def progress(self, reviewer: str) -> Progress:
        done = self._db.execute("SELECT COUNT(*) FROM votes WHERE reviewer = ? AND undone_at IS NULL",
                                (reviewer,)).fetchone()[0]
        return Progress(int(done), self._totals.get(reviewer, 0))

    def next_task(self, reviewer: str) -> TaskView | None:
        """The reviewer's first task without a live vote (None when all are done); its clock starts now."""
        row = self._db.execute(
            "SELECT t.task, t.first, t.second, p.prompt, p.x, p.text_x, p.text_y FROM tasks t "
            "JOIN pairs p ON p.pair = t.pair WHERE t.reviewer = ? AND NOT EXISTS (SELECT 1 FROM votes v "
            "WHERE v.task = t.task AND v.undone_at IS NULL) ORDER BY t.position LIMIT 1", (reviewer,)).fetchone()
        if row is None:
            return None
        # kept in memory, not written: serving a task costs no commit (a restart only loses the clock)
        self._served.setdefault(row["task"], time.time())
        first_text = row["text_x"] if row["first"] == row["x"] else row["text_y"]
        second_text = row["text_x"] if row["second"] == row["x"] else row["text_y"]
        return TaskView(row["task"], row["prompt"], first_text, second_text, self.progress(reviewer))

    def vote(self, reviewer: str, task: str, choice: str) -> VoteResult:
        """Store a vote and commit it before returning. The same vote sent again is recognised (`repeated`);
        another choice on a task already voted is AlreadyVoted; a task not the reviewer's is NoSuchTask."""
        if choice not in CHOICES:
            raise ArgumentError(f"{{choice}} must be one of {', '.join(repr(c) for c in CHOICES)}, got {choice!r}",
                                "choice")
        row = self._db.execute("SELECT 1 FROM tasks WHERE task = ? AND reviewer = ?", (task, reviewer)).fetchone()
        if row is None:
            raise NoSuchTask("no such task for this reviewer")
        now = time.time()
        served = self._served.get(task)
        seconds = None if served is None else max(0.0, now - served)
        try:
            with _transaction(self._db):
                cursor = self._db.execute(
                    "INSERT INTO votes (task, reviewer, choice, voted_at, seconds) VALUES (?, ?, ?, ?, ?)",
                    (task, reviewer, choice, now, seconds))
            vote_id = int(cursor.lastrowid or 0)
            repeated = False
            self._served.pop(task, None)
        except sqlite3.IntegrityError:
            live = self._db.execute("SELECT vote, choice FROM votes WHERE task = ? AND undone_at IS NULL",
                                    (task,)).fetchone()
            if live is None:  # pragma: no cover - the unique index is the only constraint a valid vote can break
                raise
            if live["choice"] != choice:
                raise AlreadyVoted(f"this task already has the vote {live['choice']!r}: undo it first") from None
            vote_id, repeated = int(live["vote"]), True
        return VoteResult(vote_id, task, choice, repeated, self.progress(reviewer))

    def undo(self, reviewer: str) -> str | None:
        """Undo the reviewer's latest live vote; its task is shown again next. None when there is none."""
        with _transaction(self._db):
            row = self._db.execute("SELECT vote, task FROM votes WHERE reviewer = ? AND undone_at IS NULL "
                                   "ORDER BY vote DESC LIMIT 1", (reviewer,)).fetchone()
            if row is None:
                return None
            self._db.execute("UPDATE votes SET undone_at = ? WHERE vote = ?", (time.time(), row["vote"]))
        return str(row["task"])

    def summary(self) -> dict[str, int]:
        votes = self._db.execute("SELECT COUNT(*) FROM votes WHERE undone_at IS NULL").fetchone()[0]
        return {"tasks": sum(self._totals.values()), "votes": int(votes)}

    def draws(self) -> dict[str, Any] | None:
        """The sampling design's draw: its name, the pairs it drew and their expected count (sum of pi); None
        for stores made before designs were recorded."""
        if self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'draws'").fetchone() is None:
            return None
        row = self._db.execute("SELECT MIN(design), COUNT(*), SUM(pi), MIN(pi), MAX(pi) FROM draws").fetchone()
        return {"design": row[0], "drawn": int(row[1]), "expected": row[2], "pi_min": row[3], "pi_max": row[4]}

    def systems(self) -> list[tuple[str, str]]:
        """The distinct (x, y) system pairs under review."""
        return [(r[0], r[1]) for r in self._db.execute("SELECT DISTINCT x, y FROM pairs ORDER BY x, y")]

    def vote_count(self) -> tuple[int, int]:
        """(highest vote id, undone votes): changes whenever the votes do."""
        row = self._db.execute("SELECT COALESCE(MAX(vote), 0), COUNT(undone_at) FROM votes").fetchone()
        return int(row[0]), int(row[1])


def _digest(token: str) -> bytes:
    """Tokens are looked up by their hash: the lookup's timing says nothing about a token's characters."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def _check_is_review_store(db: sqlite3.Connection, path: Path) -> None:
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.DatabaseError:
        row = None
    if row is None:
        db.close()
        raise ReviewStoreError("not a review store (made by `swapjudge review serve`)", path=str(path))
    if row[0] != SCHEMA_VERSION:
        db.close()
        raise ReviewStoreError(f"review store schema {row[0]}, this swapjudge reads {SCHEMA_VERSION}",
                               path=str(path))


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


# ---- reading the votes (export, status) ------------------------------------------------------------------

VOTE_QUERY = """
SELECT v.vote, v.task, v.reviewer, v.choice, v.voted_at, v.seconds, t.position, t.first, t.second, t.reshow_of,
       p.item, p.x, p.y, p.prompt, p.text_x, p.text_y, p.label, p.origin
FROM votes v JOIN tasks t ON t.task = v.task JOIN pairs p ON p.pair = t.pair
WHERE v.undone_at IS NULL ORDER BY v.vote
"""


# the same with each pair's drawing probability and design, for stores that record them
VOTE_QUERY_DRAWS = VOTE_QUERY.replace(", p.origin\n", ", p.origin, d.pi, d.design\n").replace(
    "JOIN pairs p ON p.pair = t.pair", "JOIN pairs p ON p.pair = t.pair LEFT JOIN draws d ON d.pair = p.pair")


def live_votes(path: str | Path) -> list[dict[str, Any]]:
    """Every live (not undone) vote with its task and pair, in the order they were cast, and the review's re-show
    share (`reshow_share`); read-only."""
    path = Path(path)
    if not path.is_file():
        raise ReviewStoreError("no such review store", path=str(path))
    db = _connect(path, readonly=True)
    try:
        _check_is_review_store(db, path)
        row = db.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()
        share = json.loads(row["value"] if row is not None else "{}").get("reshow")
        if share is None:  # a store made from a plan alone: re-shown tasks per first showing
            counted = db.execute("SELECT SUM(reshow_of IS NOT NULL), SUM(reshow_of IS NULL) FROM tasks").fetchone()
            share = round(counted[0] / counted[1], 6) if counted[1] else None
        seed = db.execute("SELECT value FROM meta WHERE key = 'seed'").fetchone()
        has_draws = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'draws'").fetchone()
        query = VOTE_QUERY_DRAWS if has_draws else VOTE_QUERY
        extra = {"reshow_share": share, "seed": int(seed["value"]) if seed is not None else None}
        return [{"pi": None, "design": None, **dict(vote), **extra} for vote in db.execute(query)]
    finally:
        db.close()


def store_summary(path: str | Path) -> dict[str, Any]:
    """Counts of a review store: tasks and live votes per reviewer, undone votes."""
    db = _connect(Path(path), readonly=True)
    try:
        _check_is_review_store(db, Path(path))
        tasks = {r[0]: int(r[1]) for r in db.execute("SELECT reviewer, COUNT(*) FROM tasks GROUP BY reviewer")}
        votes = {r[0]: int(r[1]) for r in db.execute(
            "SELECT reviewer, COUNT(*) FROM votes WHERE undone_at IS NULL GROUP BY reviewer")}
        undone = int(db.execute("SELECT COUNT(*) FROM votes WHERE undone_at IS NOT NULL").fetchone()[0])
        return {"tasks": tasks, "votes": votes, "undone": undone}
    finally:
        db.close()


def reviewer_names(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return list(dict.fromkeys(str(r["reviewer"]) for r in rows))
