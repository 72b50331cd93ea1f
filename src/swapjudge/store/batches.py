"""The store's batch ledger: which calls went into which provider batch, and where each batch stands.

A batch is money in flight. Its planned calls and its submission key are committed before anything is sent,
so a process killed at any step finds on resume what it may have submitted, and looks for it at the provider
before submitting anything again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from swapjudge.store.schema import StoreFile, utc_now

CallKey = tuple[int, str, str, str]  # (round, item, first, second)

# A submission is `planned` (stored, maybe sent), `submitted` (the provider's batch id is known), `collected`
# (every result stored or marked for a retry) or `gone` (the provider has no such batch: its calls are free again).
OPEN_STATUSES = ("planned", "submitted")


@dataclass(frozen=True)
class Submission:
    key: str
    run_id: int
    provider: str
    wave: int
    requests: int
    planned_at: float
    file_id: str | None
    batch_id: str | None
    status: str
    provider_status: str | None
    counts: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class BatchLedger(StoreFile):
    """Batch bookkeeping; every method is one transaction."""

    def plan_submission(self, *, run_id: int, key: str, provider: str, wave: int, planned_at: float,
                        rows: Sequence[tuple[str, CallKey]]) -> None:
        """Commit a submission and its calls (custom_id, call key) before anything is sent."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO batch_submissions (key, run_id, provider, wave, requests, planned_at, status, counts,"
                " updated_at) VALUES (?,?,?,?,?,?, 'planned', '{}', ?)",
                (key, run_id, provider, wave, len({cid for cid, _ in rows}), planned_at, utc_now()),
            )
            db.executemany("INSERT INTO batch_requests VALUES (?,?,?,?,?,?, 'open')",
                           [(key, cid, *call) for cid, call in rows])

    def update_submission(self, key: str, **fields: Any) -> None:
        allowed = {"file_id", "batch_id", "status", "provider_status", "counts"}
        if set(fields) - allowed:
            raise ValueError(f"unknown submission field(s): {sorted(set(fields) - allowed)}")
        values = [json.dumps(v, sort_keys=True) if k == "counts" else v for k, v in fields.items()]
        sets = ", ".join(f"{k}=?" for k in fields)
        self._db.execute(f"UPDATE batch_submissions SET {sets}, updated_at=? WHERE key=?", (*values, utc_now(), key))

    def submissions(self, run_id: int | None = None, statuses: Iterable[str] | None = None) -> list[Submission]:
        sql = ("SELECT key, run_id, provider, wave, requests, planned_at, file_id, batch_id, status, provider_status,"
               " counts FROM batch_submissions")
        where: list[str] = []
        args: list[Any] = []
        if run_id is not None:
            where.append("run_id=?")
            args.append(run_id)
        if statuses is not None:
            wanted = list(statuses)
            where.append(f"status IN ({','.join('?' * len(wanted))})")
            args += wanted
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = self._db.execute(sql + " ORDER BY planned_at, key", args).fetchall()
        return [Submission(key=r[0], run_id=int(r[1]), provider=r[2], wave=int(r[3]), requests=int(r[4]),
                           planned_at=float(r[5]), file_id=r[6], batch_id=r[7], status=r[8], provider_status=r[9],
                           counts=self.json_value(r[10], f"the counts of batch {r[0]}") or {}) for r in rows]

    def known_batch_ids(self) -> set[str]:
        return {r[0] for r in self._db.execute("SELECT batch_id FROM batch_submissions WHERE batch_id IS NOT NULL")}

    def in_flight(self, run_id: int) -> set[CallKey]:
        """Calls of this run in a submission not yet collected: they must not be submitted again."""
        rows = self._db.execute(
            "SELECT r.round, r.item, r.first, r.second FROM batch_requests r JOIN batch_submissions s ON s.key=r.key"
            f" WHERE s.run_id=? AND s.status IN ({','.join('?' * len(OPEN_STATUSES))})", (run_id, *OPEN_STATUSES))
        return {(int(r[0]), r[1], r[2], r[3]) for r in rows}

    def failure_counts(self, run_id: int) -> dict[CallKey, int]:
        """Call -> how many collected submissions of this run returned it failed (or without a result): the
        follow-ups a call has had, over every process that ran the run."""
        rows = self._db.execute(
            "SELECT r.round, r.item, r.first, r.second, COUNT(*) FROM batch_requests r JOIN batch_submissions s"
            " ON s.key=r.key WHERE s.run_id=? AND s.status='collected' AND r.state='retry'"
            " GROUP BY r.round, r.item, r.first, r.second", (run_id,))
        return {(int(r[0]), r[1], r[2], r[3]): int(r[4]) for r in rows}

    def requests_of(self, key: str) -> dict[str, list[CallKey]]:
        """custom_id -> the calls it answers (calls sharing one prompt share one request)."""
        out: dict[str, list[CallKey]] = {}
        for cid, rnd, item, first, second in self._db.execute(
            "SELECT custom_id, round, item, first, second FROM batch_requests WHERE key=?", (key,)
        ):
            out.setdefault(cid, []).append((int(rnd), item, first, second))
        return out

    def mark_requests(self, key: str, custom_ids: Iterable[str], state: str) -> None:
        with self.transaction() as db:
            db.executemany("UPDATE batch_requests SET state=? WHERE key=? AND custom_id=?",
                           [(state, key, cid) for cid in custom_ids])
