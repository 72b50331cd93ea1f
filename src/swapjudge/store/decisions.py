"""The decisions ledger: every `swapjudge decide` verdict, with the hash of the decision file it was made under.

A decision file is pre-registered: if its content changes after decisions were recorded under it, the next
decision says so. A decision file is known by its key (its path, relative to the working directory when it lies
below it, or "candidate vs incumbent" for a decision given as a mapping).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from swapjudge.store.schema import StoreFile, utc_now


@dataclass(frozen=True)
class RegistrationHistory:
    """Decisions recorded before this one under the same key: how many, and how many under another hash."""

    earlier: int
    other_hash: int
    other_hashes: tuple[str, ...]
    last_other_at: str | None

    @property
    def changed(self) -> bool:
        return self.other_hash > 0


def registration_history(store: StoreFile, key: str, decision_hash: str) -> RegistrationHistory:
    """What the ledger holds under `key` before this decision."""
    db = store._db
    earlier = db.execute("SELECT COUNT(*) FROM decisions WHERE decision_key=?", (key,)).fetchone()[0]
    rows = db.execute("SELECT decision_hash, COUNT(*), MAX(decided_at) FROM decisions WHERE decision_key=? AND "
                      "decision_hash<>? GROUP BY decision_hash ORDER BY MIN(id)", (key, decision_hash)).fetchall()
    return RegistrationHistory(int(earlier), sum(int(r[1]) for r in rows), tuple(str(r[0]) for r in rows),
                               max((str(r[2]) for r in rows), default=None))


def record_decision(store: StoreFile, *, key: str, decision_hash: str, decision: dict[str, Any], source: str,
                    run_id: int | None, verdict: str, items: int | None, result: dict[str, Any]) -> int:
    """Append one decision (one transaction); returns its id."""
    cur = store._db.execute(
        "INSERT INTO decisions (decided_at, decision_key, decision_hash, decision_json, source, run_id, verdict,"
        " items, result_json) VALUES (?,?,?,?,?,?,?,?,?)",
        (utc_now(), key, decision_hash, json.dumps(decision, sort_keys=True), source, run_id, verdict, items,
         json.dumps(result, sort_keys=True, allow_nan=False)))
    return int(cur.lastrowid or 0)


def decisions(store: StoreFile, key: str | None = None) -> list[dict[str, Any]]:
    """The recorded decisions, oldest first (only `key`'s when given)."""
    sql = ("SELECT id, decided_at, decision_key, decision_hash, source, run_id, verdict, items, result_json "
           "FROM decisions")
    args: tuple[Any, ...] = ()
    if key is not None:
        sql, args = sql + " WHERE decision_key=?", (key,)
    cur = store._db.execute(sql + " ORDER BY id", args)
    names = [d[0] for d in cur.description]
    out = []
    for row in cur:
        rec = dict(zip(names, row, strict=True))
        rec["result"] = store.json_value(rec.pop("result_json"), f"the result of decision {rec['id']}")
        out.append(rec)
    return out


def item_order(store: StoreFile, run_id: int) -> list[str]:
    """A run's items in the order their first call was stored: the stream a confidence sequence reads, which
    grows at its end as a run goes on (the read model lists calls sorted by item)."""
    rows = store._db.execute("SELECT item FROM calls WHERE run_id=? GROUP BY item ORDER BY MIN(rowid)",
                             (run_id,)).fetchall()
    return [str(r[0]) for r in rows]
