"""The run store: one SQLite file (WAL) holding runs, their calls, and a cache of judge replies.

Every call is committed in its own transaction the moment its reply is in, so a `kill -9` at any point leaves
a consistent file in which every finished call is kept; the next run of the same configuration resumes the
unfinished run and makes only the missing calls. The cache is keyed by (judge hash, prompt hash): the same
judge configuration is never paid twice for the same prompt, across runs too.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from swapjudge.errors import SwapjudgeError

SCHEMA_VERSION = "2"

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

_SCHEMA = """
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
    run_id INTEGER NOT NULL REFERENCES runs(id),
    round INTEGER NOT NULL DEFAULT 0,
    item TEXT NOT NULL,
    first TEXT NOT NULL,
    second TEXT NOT NULL,
    order_index INTEGER NOT NULL,
    label TEXT,
    prompt_hash TEXT,
    verdict TEXT CHECK (verdict IN ('first', 'second', 'tie') OR verdict IS NULL),
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
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, round, item, first, second)
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


def _provenance_of_stored(config: dict[str, Any]) -> dict[str, Any]:
    """Provenance derived from a stored configuration; whether the verdict was asked for as JSON follows the
    backend's support, as the runner decides it (plain text when the backend cannot be loaded here)."""
    from swapjudge.config import run_provenance

    if not config:
        return {}
    judge = config.get("judge") or {}
    structured = False
    if judge.get("structured_output", True) and judge.get("backend"):
        from swapjudge.errors import ConfigError
        from swapjudge.judges.registry import supports_structured

        try:
            structured = supports_structured(str(judge["backend"]))
        except ConfigError:
            structured = False
    return run_provenance(config, structured=structured)


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True)


def _loads(value: str | None) -> Any:
    return None if value is None else json.loads(value)


class Store:
    """A SQLite store. One connection, used from one thread (the runner's event loop)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode: a committed transaction survives a killed process (not a power cut).
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.executescript(_SCHEMA)
            self._migrate()
        except sqlite3.DatabaseError as err:
            raise SwapjudgeError(f"{self.path}: not a usable swapjudge store ({err})") from None

    def _migrate(self) -> None:
        """Bring a store of an older schema up to this one, in one transaction (a kill leaves the old file)."""
        row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = SCHEMA_VERSION if row is None else row[0]
        have = {r[1] for r in self._db.execute("PRAGMA table_info(runs)")}
        missing = [c for c in PROVENANCE_COLUMNS if c not in have]
        # Runs registered by an older swapjudge in a current file still get their provenance filled in.
        unfilled = not missing and self._db.execute("SELECT 1 FROM runs WHERE rubric_hash IS NULL LIMIT 1").fetchone()
        if not missing and not unfilled and row is not None and version == SCHEMA_VERSION:
            return
        if version not in ("1", SCHEMA_VERSION):
            raise SwapjudgeError(f"{self.path}: store schema {version} is newer than this swapjudge ({SCHEMA_VERSION})")
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for col in missing:
                db.execute(f"ALTER TABLE runs ADD COLUMN {col} TEXT")
            todo = db.execute("SELECT id, config_json FROM runs WHERE rubric_hash IS NULL").fetchall()
            for run_id, config_json in todo:
                prov = _provenance_of_stored(json.loads(config_json))
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

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- runs --------------------------------------------------------------------------------------------

    def create_run(
        self,
        *,
        config_hash: str,
        judge_hash: str,
        judge: str,
        config: dict[str, Any],
        config_path: str | None,
        pairs_digest: str,
        seed: str,
        orders: str,
        total_calls: int,
        provenance: dict[str, Any] | None = None,
    ) -> int:
        """Register a run. `provenance` holds PROVENANCE_COLUMNS values; those left out are derived from the
        configuration (the pair set's hash then stays unknown)."""
        prov = dict(provenance or {})
        if set(PROVENANCE_COLUMNS) - {"pair_set_hash"} - set(prov):
            prov = {**_provenance_of_stored(config), **prov}
        unknown = set(prov) - set(PROVENANCE_COLUMNS)
        if unknown:
            raise ValueError(f"unknown provenance field(s): {', '.join(sorted(unknown))}")
        cols = ", ".join(PROVENANCE_COLUMNS)
        marks = ",".join("?" * len(PROVENANCE_COLUMNS))
        cur = self._db.execute(
            "INSERT INTO runs (config_hash, judge_hash, judge, config_json, config_path, pairs_digest, seed,"
            f" orders, total_calls, started_at, status, {cols}) VALUES (?,?,?,?,?,?,?,?,?,?, 'running', {marks})",
            (
                config_hash,
                judge_hash,
                judge,
                json.dumps(config, sort_keys=True),
                config_path,
                pairs_digest,
                seed,
                orders,
                total_calls,
                _now(),
                *(prov.get(c) for c in PROVENANCE_COLUMNS),
            ),
        )
        assert cur.lastrowid is not None
        return int(cur.lastrowid)

    def resumable_run(self, config_hash: str, pairs_digest: str) -> int | None:
        """The latest unfinished run of this exact configuration and pairs file (killed or interrupted)."""
        row = self._db.execute(
            "SELECT id FROM runs WHERE config_hash=? AND pairs_digest=? AND status != 'done' ORDER BY id DESC LIMIT 1",
            (config_hash, pairs_digest),
        ).fetchone()
        return None if row is None else int(row[0])

    def mark_running(self, run_id: int) -> None:
        self._db.execute("UPDATE runs SET status='running', ended_at=NULL WHERE id=?", (run_id,))

    def finish_run(self, run_id: int, status: str) -> None:
        self._db.execute("UPDATE runs SET status=?, ended_at=? WHERE id=?", (status, _now(), run_id))

    def _run_from_row(self, row: Sequence[Any]) -> RunInfo:
        return RunInfo(
            id=row[0],
            config_hash=row[1],
            judge_hash=row[2],
            judge=row[3],
            config=json.loads(row[4]),
            config_path=row[5],
            pairs_digest=row[6],
            seed=row[7],
            orders=row[8],
            total_calls=row[9],
            started_at=row[10],
            ended_at=row[11],
            status=row[12],
            stored_calls=row[13] or 0,
            failed_calls=row[14] or 0,
            cost_usd=row[15] or 0.0,
            **dict(zip(PROVENANCE_COLUMNS, row[16:], strict=True)),
        )

    _RUN_SELECT = (
        "SELECT r.id, r.config_hash, r.judge_hash, r.judge, r.config_json, r.config_path, r.pairs_digest,"
        " r.seed, r.orders, r.total_calls, r.started_at, r.ended_at, r.status,"
        " (SELECT COUNT(*) FROM calls c WHERE c.run_id=r.id AND c.error IS NULL),"
        " (SELECT COUNT(*) FROM calls c WHERE c.run_id=r.id AND c.error IS NOT NULL),"
        " (SELECT SUM(c.cost_usd) FROM calls c WHERE c.run_id=r.id AND c.source='api'), "
        + ", ".join(f"r.{c}" for c in PROVENANCE_COLUMNS)
        + " FROM runs r"
    )

    def runs(self) -> list[RunInfo]:
        return [self._run_from_row(r) for r in self._db.execute(self._RUN_SELECT + " ORDER BY r.id")]

    def run(self, run_id: int) -> RunInfo:
        row = self._db.execute(self._RUN_SELECT + " WHERE r.id=?", (run_id,)).fetchone()
        if row is None:
            raise SwapjudgeError(f"{self.path}: no run {run_id}")
        return self._run_from_row(row)

    def latest_run(self) -> RunInfo:
        row = self._db.execute(self._RUN_SELECT + " ORDER BY r.id DESC LIMIT 1").fetchone()
        if row is None:
            raise SwapjudgeError(f"{self.path}: the store holds no runs")
        return self._run_from_row(row)

    # ---- anchored scoring runs ---------------------------------------------------------------------------

    def record_anchor_run(self, *, setup: dict[str, Any], result: dict[str, Any], flagged: bool,
                          scores: Iterable[tuple[str, bool, int | None, str | None, dict[str, float] | None]]
                          ) -> int:
        """Store one anchored scoring run with every score (item, is an exemplar, score, raw reply,
        probabilities) in one transaction. `setup` holds config_path, judge, judge_hash, judge_model,
        rubric_text, rubric_hash, reference_hash, pinned_path, tolerance; `result` the run's summary."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            cur = db.execute(
                "INSERT INTO anchor_runs (started_at, config_path, judge, judge_hash, judge_model, rubric_text,"
                " rubric_hash, reference_hash, pinned_path, tolerance, flagged, result_json)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (_now(), setup.get("config_path"), setup["judge"], setup["judge_hash"], setup.get("judge_model"),
                 setup["rubric_text"], setup["rubric_hash"], setup["reference_hash"], setup.get("pinned_path"),
                 float(setup["tolerance"]), int(flagged), json.dumps(result, sort_keys=True)),
            )
            assert cur.lastrowid is not None
            run_id = int(cur.lastrowid)
            db.executemany("INSERT INTO anchor_scores VALUES (?,?,?,?,?,?)",
                           [(run_id, item, int(ex), score, raw, _dumps(probs))
                            for item, ex, score, raw, probs in scores])
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return run_id

    def anchor_runs(self) -> list[dict[str, Any]]:
        """Every anchored scoring run, oldest first, with its setup, flag and stored summary."""
        cur = self._db.execute(
            "SELECT id, started_at, config_path, judge, judge_hash, judge_model, rubric_hash, reference_hash,"
            " pinned_path, tolerance, flagged, result_json FROM anchor_runs ORDER BY id")
        names = [d[0] for d in cur.description]
        out = []
        for row in cur:
            rec = dict(zip(names, row, strict=True))
            rec["flagged"] = bool(rec["flagged"])
            rec["result"] = json.loads(rec.pop("result_json"))
            out.append(rec)
        return out

    def anchor_scores(self, run_id: int) -> dict[str, int | None]:
        """The reference items' scores of one anchored run (exemplars left out), e.g. to pin them."""
        rows = self._db.execute("SELECT item, score FROM anchor_scores WHERE run_id=? AND exemplar=0 ORDER BY item",
                                (run_id,))
        return {str(r[0]): r[1] for r in rows}

    # ---- calls -------------------------------------------------------------------------------------------

    def done_keys(self, run_id: int) -> set[tuple[int, str, str, str]]:
        """(round, item, first, second) of the calls already stored without a transport error."""
        rows = self._db.execute(
            "SELECT round, item, first, second FROM calls WHERE run_id=? AND error IS NULL", (run_id,)
        )
        return {(int(r[0]), r[1], r[2], r[3]) for r in rows}

    def _call_row(self, run_id: int, c: CallRecord) -> tuple[Any, ...]:
        return (
            run_id,
            c.round,
            c.item,
            c.first,
            c.second,
            c.order_index,
            c.label,
            c.prompt_hash,
            c.verdict,
            c.raw,
            c.input_tokens,
            c.output_tokens,
            c.cached_input_tokens,
            c.latency_s,
            c.cost_usd,
            c.error,
            _dumps(c.probabilities),
            _dumps(c.settings),
            c.attempts,
            c.source,
            _now(),
        )

    _CALL_INSERT = "INSERT OR REPLACE INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
    _CACHE_INSERT = "INSERT OR REPLACE INTO cache VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"

    def record_call(self, run_id: int, call: CallRecord, *, judge_hash: str | None = None) -> None:
        """Store one call (and, given `judge_hash` and no error, its reply in the cache) atomically."""
        self.record_calls(run_id, [call], judge_hash=judge_hash)

    def record_calls(self, run_id: int, calls: Iterable[CallRecord], *, judge_hash: str | None = None) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for c in calls:
                db.execute(self._CALL_INSERT, self._call_row(run_id, c))
                if judge_hash is not None and c.error is None and c.prompt_hash and c.source == "api":
                    db.execute(
                        self._CACHE_INSERT,
                        (
                            judge_hash,
                            c.prompt_hash,
                            c.verdict,
                            c.raw,
                            c.input_tokens,
                            c.output_tokens,
                            c.cached_input_tokens,
                            c.latency_s,
                            c.cost_usd,
                            _dumps(c.probabilities),
                            _dumps(c.settings),
                            _now(),
                        ),
                    )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def cached(self, judge_hash: str, prompt_hashes: Iterable[str]) -> dict[str, CachedReply]:
        wanted = list(dict.fromkeys(prompt_hashes))
        out: dict[str, CachedReply] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                "SELECT prompt_hash, verdict, raw, input_tokens, output_tokens, cached_input_tokens,"
                " latency_s, cost_usd, probabilities, settings FROM cache"
                f" WHERE judge_hash=? AND prompt_hash IN ({marks})",
                (judge_hash, *chunk),
            )
            for r in rows:
                out[r[0]] = CachedReply(
                    verdict=r[1],
                    raw=r[2],
                    input_tokens=r[3],
                    output_tokens=r[4],
                    cached_input_tokens=r[5],
                    latency_s=r[6],
                    cost_usd=r[7],
                    probabilities=_loads(r[8]),
                    settings=_loads(r[9]) or {},
                )
        return out

    def calls(self, run_id: int) -> Iterator[dict[str, Any]]:
        cur = self._db.execute(
            "SELECT round, item, first, second, order_index, label, prompt_hash, verdict, raw, input_tokens,"
            " output_tokens, cached_input_tokens, latency_s, cost_usd, error, probabilities, settings,"
            " attempts, source FROM calls WHERE run_id=? ORDER BY item, round, first, second",
            (run_id,),
        )
        names = [d[0] for d in cur.description]
        for row in cur:
            rec = dict(zip(names, row, strict=True))
            rec["probabilities"] = _loads(rec["probabilities"])
            rec["settings"] = _loads(rec["settings"])
            yield rec

    def presentation_records(self, run_id: int) -> list[dict[str, Any]]:
        """The run's calls as DESIGN 3.1 presentation records (labels included when the pairs carry them)."""
        info = self.run(run_id)
        out: list[dict[str, Any]] = []
        for c in self.calls(run_id):
            rec: dict[str, Any] = {
                "judge": info.judge,
                "round": c["round"],
                "item": c["item"],
                "first": c["first"],
                "second": c["second"],
                "verdict": c["verdict"],
            }
            if c["label"] is not None:
                rec["label"] = c["label"]
            rec.update(
                {
                    "raw": c["raw"],
                    "latency_s": c["latency_s"],
                    "input_tokens": c["input_tokens"],
                    "output_tokens": c["output_tokens"],
                    "cost_usd": c["cost_usd"],
                    "prompt_hash": c["prompt_hash"],
                    "order_index": c["order_index"],
                    "source": c["source"],
                    "error": c["error"],
                }
            )
            probs = c["probabilities"] or {}
            for slot in ("first", "second", "tie"):
                if slot in probs:
                    rec[f"p_{slot}"] = probs[slot]
            out.append(rec)
        return out
