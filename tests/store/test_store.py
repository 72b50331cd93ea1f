"""The SQLite store: WAL, calls, cache across runs, resume keys, presentation records."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from swapjudge.errors import SwapjudgeError
from swapjudge.reading.records import records_from_dicts
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


def _schema_1_store(db: Path, config: dict[str, object]) -> None:
    """A store as swapjudge 1 left it: no provenance columns, one run."""
    import json

    from swapjudge.store.schema import _SCHEMA

    con = sqlite3.connect(db)
    con.executescript(_SCHEMA)
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.execute("INSERT INTO runs (config_hash, judge_hash, judge, config_json, config_path, pairs_digest, seed, "
                "orders, total_calls, started_at, status) VALUES ('c', 'j', 'openai:m', ?, NULL, 'd', 's', 'both', 2,"
                " '2026-01-01T00:00:00+00:00', 'done')", (json.dumps(config),))
    con.commit()
    con.close()


def test_provenance_is_filled_by_the_opener_that_can_compute_it(tmp_path: Path) -> None:
    """The store knows no prompt template or backend: opened bare it migrates the schema and leaves an old run's
    provenance unknown; opened with `provenance_of` it fills it in from the stored configuration, once."""
    db = tmp_path / "old.db"
    _schema_1_store(db, {"tie_policy": "exclude", "judge": {"model": "m"}})
    with Store(db) as st:
        (bare,) = st.runs()
    assert bare.rubric_hash is None and bare.tie_policy is None and bare.config["tie_policy"] == "exclude"
    con = sqlite3.connect(db)
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "4"
    con.close()
    seen: list[dict[str, object]] = []

    def derive(config: dict[str, object]) -> dict[str, object]:
        seen.append(config)
        judge = config.get("judge") or {}
        assert isinstance(judge, dict)
        return {"judge_model": judge.get("model"), "rubric_hash": "r", "tie_policy": config["tie_policy"]}

    with Store(db, provenance_of=derive) as st:
        (filled,) = st.runs()
        new = _run(st, "c2")  # registered without provenance: derived from its configuration too
        assert st.run(new).tie_policy == "exclude" and st.run(new).rubric_hash == "r"
    assert (filled.judge_model, filled.rubric_hash, filled.tie_policy) == ("m", "r", "exclude")
    assert len(seen) == 2
    with Store(db, provenance_of=derive) as st:  # nothing left to fill: not asked again
        assert [r.rubric_hash for r in st.runs()] == ["r", "r"]
    assert len(seen) == 2
    with Store(db) as st:
        assert st.run(_run(st, "c3")).rubric_hash is None  # bare: registered as given


def _open_at_once(path: str, barrier: object, results: object) -> None:
    from swapjudge.errors import SwapjudgeError
    from swapjudge.store import Store

    barrier.wait()  # type: ignore[attr-defined]
    try:
        Store(path).close()
        results.put("ok")  # type: ignore[attr-defined]
    except SwapjudgeError as err:
        results.put(str(err))  # type: ignore[attr-defined]


def test_processes_opening_a_new_store_at_once_all_get_it(tmp_path: Path) -> None:
    """Two `swapjudge run`s started together on a store that does not exist yet: each waits for the other's
    creation and migration instead of failing (switching to WAL does not wait for a lock by itself)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    said: list[str] = []
    for attempt in range(4):
        barrier, results = context.Barrier(4), context.Queue()
        workers = [context.Process(target=_open_at_once, args=(str(tmp_path / f"s{attempt}.db"), barrier, results))
                   for _ in range(4)]
        for w in workers:
            w.start()
        said += [results.get(timeout=60) for _ in workers]
        for w in workers:
            w.join(timeout=60)
    assert said == ["ok"] * 16
