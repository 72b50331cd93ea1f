"""The store's write path: registering runs, committing calls (each in its own transaction) and the reply cache.
Every text goes in valid UTF-8 (the connection replaces lone surrogates; `json_or_none` those inside JSON)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from swapjudge.store.schema import (
    BUSY_TIMEOUT_S,
    PROVENANCE_COLUMNS,
    CachedReply,
    CallRecord,
    StoreFile,
    json_or_none,
    utc_now,
)


class StoreWriter(StoreFile):
    """Writes: one transaction per committed call, so a kill at any point keeps every finished call."""

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
        configuration when the store was opened with `provenance_of` (the pair set's hash then stays unknown)."""
        prov = dict(provenance or {})
        if set(PROVENANCE_COLUMNS) - {"pair_set_hash"} - set(prov) and self._provenance_of is not None:
            prov = {**self._provenance_of(config), **prov}
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
                json_or_none(config),
                config_path,
                pairs_digest,
                seed,
                orders,
                total_calls,
                utc_now(),
                *(prov.get(c) for c in PROVENANCE_COLUMNS),
            ),
        )
        assert cur.lastrowid is not None
        return int(cur.lastrowid)

    def mark_running(self, run_id: int) -> None:
        self._db.execute("UPDATE runs SET status='running', ended_at=NULL WHERE id=?", (run_id,))

    def supersede_unparsed(self, run_id: int, judge_hash: str) -> int:
        """Set aside a run's calls whose reply had no parsable verdict, so that they are asked again: the old rows
        move to `superseded_calls` (kept for the audit) and their replies leave the cache. Returns how many."""
        where = ("run_id=? AND verdict IS NULL AND error IS NULL AND source != 'identical'"  # a listwise call: no pick
                 " AND (settings IS NULL OR json_extract(settings, '$.protocol') IS NOT 'listwise'"
                 " OR json_extract(settings, '$.pick') IS NULL)")
        with self.transaction() as db:
            hashes = [r[0] for r in db.execute(f"SELECT prompt_hash FROM calls WHERE {where}", (run_id,))]
            columns = ", ".join(r[1] for r in db.execute("PRAGMA table_info(calls)") if r[1] != "strength")
            db.execute(f"INSERT INTO superseded_calls ({columns}, superseded_at, strength) "
                       f"SELECT {columns}, ?, strength FROM calls WHERE {where}", (utc_now(), run_id))
            db.execute(f"DELETE FROM calls WHERE {where}", (run_id,))
            db.executemany("DELETE FROM cache WHERE judge_hash=? AND prompt_hash=?",
                           [(judge_hash, h) for h in hashes if h])
        return len(hashes)

    def finish_run(self, run_id: int, status: str) -> None:
        self._db.execute("UPDATE runs SET status=?, ended_at=? WHERE id=?", (status, utc_now(), run_id))

    def record_anchor_run(self, *, setup: dict[str, Any], result: dict[str, Any], flagged: bool,
                          scores: Iterable[tuple[str, bool, int | None, str | None, dict[str, float] | None]]
                          ) -> int:
        """Store one anchored scoring run with every score (item, is an exemplar, score, raw reply,
        probabilities) in one transaction. `setup` holds config_path, judge, judge_hash, judge_model,
        rubric_text, rubric_hash, reference_hash, pinned_path, tolerance; `result` the run's summary."""
        with self.transaction() as db:
            cur = db.execute(
                "INSERT INTO anchor_runs (started_at, config_path, judge, judge_hash, judge_model, rubric_text,"
                " rubric_hash, reference_hash, pinned_path, tolerance, flagged, result_json)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (utc_now(), setup.get("config_path"), setup["judge"], setup["judge_hash"], setup.get("judge_model"),
                 setup["rubric_text"], setup["rubric_hash"], setup["reference_hash"], setup.get("pinned_path"),
                 float(setup["tolerance"]), int(flagged), json_or_none(result)),
            )
            assert cur.lastrowid is not None
            run_id = int(cur.lastrowid)
            db.executemany("INSERT INTO anchor_scores VALUES (?,?,?,?,?,?)",
                           [(run_id, item, int(ex), score, raw, json_or_none(probs))
                            for item, ex, score, raw, probs in scores])
        return run_id

    def _call_row(self, run_id: int, c: CallRecord, now: str | None = None) -> tuple[Any, ...]:
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
            json_or_none(c.probabilities),
            json_or_none(c.settings),
            c.attempts,
            c.source,
            now or utc_now(),
            c.strength,
        )

    _CALL_INSERT = "INSERT OR REPLACE INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
    _CACHE_INSERT = "INSERT OR REPLACE INTO cache VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"

    def record_call(self, run_id: int, call: CallRecord, *, judge_hash: str | None = None) -> None:
        """Store one call (and, given `judge_hash` and no error, its reply in the cache) atomically."""
        self.record_calls(run_id, [call], judge_hash=judge_hash)

    def record_calls(self, run_id: int, calls: Iterable[CallRecord], *, judge_hash: str | None = None,
                     busy_timeout_s: float | None = None) -> None:
        """Store calls in one transaction. `busy_timeout_s` overrides how long to wait for another process's
        write lock (the runner waits briefly and retries without blocking its event loop)."""
        if busy_timeout_s is None:
            self._record_calls(run_id, calls, judge_hash)
            return
        self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
        try:
            self._record_calls(run_id, calls, judge_hash)
        finally:
            self._db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")

    def cache_reply(self, judge_hash: str, prompt_hash: str, reply: CachedReply) -> None:
        """Put one reply in the cache alone, in its own transaction (a probe's call: no run holds it), so a probe
        killed at any point keeps every reply it got and the same judge never pays for that prompt again."""
        row = (judge_hash, prompt_hash, reply.verdict, reply.raw, reply.input_tokens, reply.output_tokens,
               reply.cached_input_tokens, reply.latency_s, reply.cost_usd, json_or_none(reply.probabilities),
               json_or_none(reply.settings), utc_now(), reply.strength)
        with self.transaction():
            self._db.execute(self._CACHE_INSERT, row)

    def _record_calls(self, run_id: int, calls: Iterable[CallRecord], judge_hash: str | None) -> None:
        db = self._db
        calls = list(calls)
        now = utc_now()  # one timestamp per transaction; a batch commits thousands of rows at once
        rows = [self._call_row(run_id, c, now) for c in calls]
        cache_rows = [
            (judge_hash, c.prompt_hash, c.verdict, c.raw, c.input_tokens, c.output_tokens, c.cached_input_tokens,
             c.latency_s, c.cost_usd, json_or_none(c.probabilities), json_or_none(c.settings), now, c.strength)
            for c in calls
            if judge_hash is not None and c.error is None and c.prompt_hash and c.source == "api"
        ]
        with self.transaction():
            db.executemany(self._CALL_INSERT, rows)
            if cache_rows:
                db.executemany(self._CACHE_INSERT, cache_rows)
