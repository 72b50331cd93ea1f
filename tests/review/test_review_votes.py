"""The review store on a real SQLite file: votes, undo, retries, resuming, and refusing what it cannot be."""

from __future__ import annotations

import json
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from review_server import ENV
from swapjudge.reading.pairs_file import PairItem
from swapjudge.review.assign import plan_review
from swapjudge.review.export import review_records
from swapjudge.review.votes import AlreadyVoted, NoSuchTask, ReviewStore, ReviewStoreError, live_votes


def _plan(n: int = 6, reviewers: tuple[str, ...] = ("ann", "ben"), **kw: object):
    items = [PairItem(f"q{i}", f"prompt {i}", {"A": f"a{i}", "B": f"b{i}"}, "A" if i % 2 else None, i + 1)
             for i in range(n)]
    return plan_review(items, list(reviewers), seed=1, **kw)  # type: ignore[arg-type]


def test_votes_undo_and_retries(tmp_path: Path) -> None:
    store, resumed = ReviewStore.create_or_resume(tmp_path / "r.db", _plan, {"x": 1})
    assert not resumed
    assert stat.S_IMODE((tmp_path / "r.db").stat().st_mode) == 0o600  # it holds the tokens
    first = store.next_task("ann")
    assert first is not None and first.progress.to_dict() == {"done": 0, "total": 3}
    assert store.next_task("ann") == first  # served again until voted
    assert store.vote("ann", first.task, "1").repeated is False
    assert store.vote("ann", first.task, "1").repeated is True  # a retry: not stored twice
    with pytest.raises(AlreadyVoted):
        store.vote("ann", first.task, "2")
    with pytest.raises(NoSuchTask):
        store.vote("ben", first.task, "1")
    with pytest.raises(NoSuchTask):
        store.vote("ann", "t-made-up", "1")
    second = store.next_task("ann")
    assert second is not None and second.task != first.task
    assert store.undo("ann") == first.task
    assert store.next_task("ann").task == first.task  # type: ignore[union-attr]
    assert store.vote("ann", first.task, "both_bad").repeated is False
    assert store.undo("ben") is None
    store.close()
    rows = live_votes(tmp_path / "r.db")
    assert [(r["task"], r["choice"]) for r in rows] == [(first.task, "both_bad")]
    db = sqlite3.connect(tmp_path / "r.db")
    assert db.execute("SELECT COUNT(*) FROM votes").fetchone()[0] == 2  # the undone vote is kept, marked
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()
    record = review_records(tmp_path / "r.db")[0]
    assert record["verdict"] == "tie" and record["choice"] == "both_bad" and record["judge"] == "human:ann"


def test_resume_keeps_tokens_votes_and_the_plan_and_refuses_other_options(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    store, _ = ReviewStore.create_or_resume(path, _plan, {"reshow": 0.1, "seed": None})
    tokens = store.tokens()
    task = store.next_task("ben")
    assert task is not None
    store.vote("ben", task.task, "2")
    seed = store.meta("seed")
    store.close()
    calls = []
    again, resumed = ReviewStore.create_or_resume(path, lambda: calls.append(1) or _plan(), {"reshow": 0.1,
                                                                                             "seed": None})
    assert resumed and not calls  # the plan is read back, not drawn again
    assert again.tokens() == tokens and again.meta("seed") == seed
    assert again.next_task("ben").task != task.task  # type: ignore[union-attr]
    assert again.principal(tokens[0][1]).name == "ann"  # type: ignore[union-attr]
    assert again.principal("not a token") is None and again.principal(None) is None
    again.close()
    with pytest.raises(ReviewStoreError, match="reshow"):
        ReviewStore.create_or_resume(path, _plan, {"reshow": 0.2, "seed": None})
    with pytest.raises(ReviewStoreError, match="seed"):
        ReviewStore.create_or_resume(path, _plan, {"reshow": 0.1, "seed": 99})


def test_other_files_are_refused_in_one_line(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE x (y)")
    db.commit()
    db.close()
    with pytest.raises(ReviewStoreError, match="not a review store"):
        ReviewStore.open(other)
    text = tmp_path / "text.db"
    text.write_text("hello, not a database at all " * 50)
    for path in (other, text, tmp_path / "missing.db"):
        done = subprocess.run([sys.executable, "-m", "swapjudge", "review", "export", "--store", str(path), "-o",
                               str(tmp_path / "out.jsonl")], capture_output=True, text=True, env=ENV)
        assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
        assert not (tmp_path / "out.jsonl").exists()


def test_export_cli_writes_records_that_analyze_reads(tmp_path: Path) -> None:
    store, _ = ReviewStore.create_or_resume(tmp_path / "r.db", lambda: _plan(20, ("ann",), reshow=1.0), {})
    while (task := store.next_task("ann")) is not None:
        store.vote("ann", task.task, "1")  # always Response 1: every re-shown pair flips toward slot 1
    store.close()
    out = tmp_path / "human.jsonl"
    done = subprocess.run([sys.executable, "-m", "swapjudge", "review", "export", "--store", str(tmp_path / "r.db"),
                           "-o", str(out)], capture_output=True, text=True, env=ENV)
    assert done.returncode == 0 and "wrote 40 votes of 1 reviewer(s)" in done.stderr
    analysed = subprocess.run([sys.executable, "-m", "swapjudge", "analyze", str(out), "--format", "json"],
                              capture_output=True, text=True, env=ENV)
    # every pair re-shown, so no single-order call; a reviewer who always picks slot 1 fails the gate (exit 1)
    assert analysed.returncode == 1 and "gate" in analysed.stderr, analysed.stderr
    result = json.loads(analysed.stdout)
    assert result["judge"] == "human:ann" and result["pairs"]["complete"] == 20
    assert result["consistency"]["rate"] == 0.0 and result["flip_direction"]["first"] == 20
    assert result["accuracy"]["pairs"] == 10  # the pairs file's labels ride along
