"""`decide` on a run store: a real run through the replay backend, its calls in SQLite, the decisions ledger."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import swapjudge
from decision_streams import DECISION, stream, write
from swapjudge.errors import SwapjudgeError
from swapjudge.store import Store
from swapjudge.store.decisions import decisions, item_order


def replay_run(tmp: Path, n: int, win: float, loss: float, *, seed: int = 0, name: str = "oracle") -> Path:
    """Judge `n` items of v2 and v1 in both orders with a replay judge answering as `stream` says."""
    calls = stream(n, win, loss, seed=seed)
    pairs = [{"item": f"q{i}", "prompt": f"question {i}", "answers": {"v1": f"old {i}", "v2": f"new {i}"}}
             for i in range(n)]
    (tmp / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    write(tmp / f"{name}.jsonl", calls)
    config = {"judge": {"backend": "replay", "path": str(tmp / f"{name}.jsonl"), "name": name},
              "pairs": {"path": str(tmp / "pairs.jsonl"), "a": "v2", "b": "v1"}, "store": str(tmp / "runs.db")}
    swapjudge.run(config)
    return tmp / "runs.db"


def test_decide_on_a_store_reads_its_latest_run_and_records_the_verdict(tmp_path):
    db = replay_run(tmp_path, 400, 0.5, 0.25, seed=1)
    verdict = swapjudge.decide(db, {**DECISION})
    assert verdict.verdict == "ship" and verdict.judge == "oracle" and verdict.source.endswith("runs.db run 1")
    same = swapjudge.decide(write(tmp_path / "export.jsonl", stream(400, 0.5, 0.25, seed=1)), {**DECISION})
    assert same.bound is not None and verdict.bound is not None
    assert (same.bound.value, same.bound.low) == (verdict.bound.value, verdict.bound.low)
    with Store(db) as store:
        ledger = decisions(store)
        assert [(d["verdict"], d["run_id"], d["items"]) for d in ledger] == [("ship", 1, 400)]
        assert ledger[0]["decision_hash"] == verdict.decision_hash and ledger[0]["decision_key"] == "v2 vs v1"
        assert len(item_order(store, 1)) == 400
    with pytest.raises(SwapjudgeError, match="no run 7"):
        swapjudge.decide(db, {**DECISION}, run=7)


def test_an_interrupted_run_keeps_until_its_calls_are_made(tmp_path):
    db = replay_run(tmp_path, 40, 0.6, 0.2, seed=2)
    con = sqlite3.connect(db)
    con.execute("DELETE FROM calls WHERE item IN ('q3', 'q4') AND order_index = 1")  # as if killed before them
    con.commit()
    con.close()
    decision = {**DECISION, "items": 40}
    verdict = swapjudge.decide(db, decision)
    assert verdict.verdict == "keep" and verdict.counts.missing_calls == 4  # 2 absent twins + 2 never made
    assert "missing or have no verdict" in verdict.headline


def test_the_stream_order_of_a_store_is_the_order_its_calls_were_stored(tmp_path):
    db = replay_run(tmp_path, 30, 0.6, 0.2, seed=3)
    with Store(db) as store:
        order = item_order(store, 1)
        stored = [r["item"] for r in store.calls(1)]
    # the read model lists calls sorted by item (q0, q0, q1, q1, q10, ...); the stream is the order of the run
    assert stored[:6] == ["q0", "q0", "q1", "q1", "q10", "q10"]
    assert order == [f"q{i}" for i in range(30)]


def test_an_older_store_gets_the_ledger_without_losing_anything(tmp_path):
    db = replay_run(tmp_path, 20, 0.6, 0.2, seed=4)
    con = sqlite3.connect(db)
    con.execute("DROP TABLE decisions")  # a store written before the ledger existed
    con.commit()
    calls_before = con.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    con.close()
    swapjudge.decide(db, {**DECISION, "items": 20})
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == calls_before
    assert con.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == 1
    con.close()


def test_several_judges_need_the_decision_to_name_one(tmp_path):
    rows = stream(50, 0.6, 0.2, judge="a", seed=5) + stream(50, 0.2, 0.6, judge="b", seed=6)
    with pytest.raises(SwapjudgeError, match="field `judge`: the records hold 2 judges"):
        swapjudge.decide(rows, {**DECISION, "items": 50})
    assert swapjudge.decide(rows, {**DECISION, "items": 50, "judge": "a"}).verdict == "ship"
    assert swapjudge.decide(rows, {**DECISION, "items": 50, "judge": "b"}).verdict == "keep"
    with pytest.raises(SwapjudgeError, match="no calls of judge 'c'"):
        swapjudge.decide(rows, {**DECISION, "judge": "c"})


def test_library_results_show_in_a_notebook_and_serialise(tmp_path):
    verdict = swapjudge.decide(stream(400, 0.5, 0.25, seed=7), {**DECISION})
    assert verdict.to_dict()["verdict"] == "ship" and json.dumps(verdict.to_dict(), allow_nan=False)
    assert "Ship: the candidate v2" in verdict._repr_html_() and verdict._repr_markdown_().startswith("### ✅ Ship")
    plan = swapjudge.plan({**DECISION}, expect=0.6, splits=0.3)
    assert plan.to_dict()["items"] == plan.items and "Plan: " in plan._repr_markdown_()
    assert "<table>" in plan._repr_html_()


def test_sequential_monitoring_ships_early_when_the_lead_is_clear():
    rows = stream(400, 0.7, 0.1, seed=8)
    verdict = swapjudge.decide(rows, {**DECISION, "monitoring": "sequential", "items": None})
    assert verdict.verdict == "ship" and verdict.bound is not None and verdict.bound.ship_at is not None
    assert verdict.bound.ship_at < 100 and verdict.bound.method == "betting_cs"
    early = swapjudge.decide(rows[: 2 * verdict.bound.ship_at], {**DECISION, "monitoring": "sequential"})
    assert early.verdict == "ship"
    before = swapjudge.decide(rows[: 2 * (verdict.bound.ship_at - 1)], {**DECISION, "monitoring": "sequential"})
    assert before.verdict == "inconclusive"


def test_a_fixed_design_reads_only_its_planned_items():
    rows = stream(100, 0.7, 0.1, seed=9) + stream(300, 0.1, 0.7, seed=10, start=100)
    verdict = swapjudge.decide(rows, {**DECISION, "items": 100})
    assert verdict.verdict == "ship" and verdict.counts.items_read == 100 and verdict.counts.items_available == 400
    assert "read the first 100 of 400 items" in " ".join(verdict.notes)


def test_without_planned_items_a_fixed_design_reads_what_it_is_given_and_says_so():
    verdict = swapjudge.decide(stream(300, 0.5, 0.25, seed=11), {"candidate": "v2", "incumbent": "v1"})
    assert verdict.verdict == "ship" and verdict.counts.items_read == 300 and verdict.planned_items is None
    assert "reading it again after more items come in is a second look" in verdict.notes[0]


def test_non_inferiority_ships_a_candidate_a_little_worse_and_keeps_one_much_worse():
    decision = {**DECISION, "hypothesis": "non_inferior", "margin": 0.05}
    close = swapjudge.decide(stream(400, 0.36, 0.39, seed=12), decision)  # about 48.5%
    assert close.verdict == "ship" and close.bar == 0.45
    assert "> 45%, the non-inferiority bar: 50% less 5 points" in close.headline
    far = swapjudge.decide(stream(400, 0.25, 0.5, seed=13), decision)
    assert far.verdict == "keep"
