"""The SQLite store: WAL, calls, cache across runs, resume keys, presentation records."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from swapjudge.core.records import records_from_dicts
from swapjudge.errors import SwapjudgeError
from swapjudge.store import CallRecord, Store


def _run(store: Store, config_hash: str = "c1") -> int:
    return store.create_run(
        config_hash=config_hash,
        judge_hash="j1",
        judge="openai:m",
        config={"tie_policy": "exclude"},
        config_path="/x/run.yaml",
        pairs_digest="d1",
        seed="s",
        orders="both",
        total_calls=4,
    )


def _call(item: str, first: str, second: str, verdict: str | None, **kw: object) -> CallRecord:
    return CallRecord(
        item=item,
        first=first,
        second=second,
        order_index=0 if first == "a" else 1,
        verdict=verdict,
        source=kw.pop("source", "api"),
        prompt_hash=f"p-{item}-{first}",  # type: ignore[arg-type]
        label="a",
        **kw,
    )  # type: ignore[arg-type]


def test_wal_and_roundtrip(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with Store(db) as st:
        rid = _run(st)
        st.record_calls(
            rid,
            [
                _call(
                    "1",
                    "a",
                    "b",
                    "first",
                    cost_usd=0.01,
                    input_tokens=10,
                    output_tokens=2,
                    probabilities={"first": 0.9, "second": 0.1},
                ),
                _call("1", "b", "a", "second", cost_usd=0.02),
            ],
            judge_hash="j1",
        )
        recs = st.presentation_records(rid)
        info = st.run(rid)
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert [(r["first"], r["verdict"], r["label"]) for r in recs] == [
        ("a", "first", "a"),
        ("b", "second", "a"),
    ]
    assert recs[0]["p_first"] == 0.9 and recs[0]["judge"] == "openai:m"
    assert info.stored_calls == 2 and info.cost_usd == pytest.approx(0.03) and info.status == "running"
    # The records are valid presentation records for the analysis.
    core = [{k: r[k] for k in ("judge", "round", "item", "first", "second", "verdict", "label")} for r in recs]
    assert records_from_dicts(core).frame.height == 2


def test_cache_is_shared_across_runs_and_skips_errors(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as st:
        r1 = _run(st)
        st.record_calls(
            r1, [_call("1", "a", "b", "first"), _call("2", "a", "b", None, error="HTTP 500")], judge_hash="j1"
        )
        r2 = _run(st, "c2")
        hits = st.cached("j1", ["p-1-a", "p-2-a", "p-3-a"])
        assert set(hits) == {"p-1-a"} and hits["p-1-a"].verdict == "first"
        assert st.cached("other-judge", ["p-1-a"]) == {}
        assert r2 != r1


def test_resume_keys_exclude_failed_calls_and_replacing_keeps_one_row(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as st:
        rid = _run(st)
        st.record_calls(rid, [_call("1", "a", "b", "first"), _call("2", "a", "b", None, error="timeout")])
        assert st.done_keys(rid) == {(0, "1", "a", "b")}
        assert st.resumable_run("c1", "d1") == rid and st.resumable_run("c1", "other") is None
        st.record_call(rid, _call("2", "a", "b", "second"))
        assert st.done_keys(rid) == {(0, "1", "a", "b"), (0, "2", "a", "b")}
        assert len(list(st.calls(rid))) == 2
        st.finish_run(rid, "done")
        assert st.resumable_run("c1", "d1") is None and st.latest_run().status == "done"


def test_a_failed_transaction_leaves_nothing(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as st:
        rid = _run(st)
        bad = _call("2", "a", "b", "sideways")  # violates the verdict CHECK constraint
        with pytest.raises(sqlite3.IntegrityError):
            st.record_calls(rid, [_call("1", "a", "b", "first"), bad], judge_hash="j1")
        assert list(st.calls(rid)) == [] and st.cached("j1", ["p-1-a"]) == {}


def test_not_a_store(tmp_path: Path) -> None:
    bad = tmp_path / "junk.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(SwapjudgeError, match="not a usable swapjudge store"):
        Store(bad)
    with Store(tmp_path / "s.db") as st, pytest.raises(SwapjudgeError, match="no run 7"):
        st.run(7)
