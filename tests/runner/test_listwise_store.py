"""Best-of-N runs through the run store, against a real OpenAI-wire server on 127.0.0.1 that counts requests:
every call stored before it is counted, a `kill -9` mid-run then a rerun pays only for the calls not stored, the
cache serves a finished run's prompts again, `--dry-run` and `--check`, `--retry-unparsed`, and `export`,
`report` and `analyze` read a listwise run as they read a pairwise one."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge_server import JudgeServer
from runner_helpers import cli_in, every_stored_call, listwise_config
from swapjudge.cli import app
from swapjudge.judges.listwise_prompts import render
from swapjudge.reading.listwise import load_listwise
from swapjudge.runner.listwise_run import estimate_listwise, run_listwise

SYSTEMS = ("good", "meh", "bad")


def _answers(directory: Path, n: int) -> list[dict[str, Any]]:
    """n items of three answers; only `good`'s says CORRECT (the server picks it wherever it sits)."""
    rows = [{"item": f"q{i:03d}", "task": f"Question {i}: what is {i} times 7?", "label": "good",
             "answers": {"good": f"CORRECT: {i * 7}.", "meh": f"About {i * 7 + 2}.", "bad": f"Maybe {i}?"}}
            for i in range(n)]
    (directory / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return rows




def _user_texts(rows: list[dict[str, Any]], answers: list[dict[str, Any]]) -> Counter[str]:
    """The prompt (user message) of each stored call, rendered again from its item and slot order."""
    by_item = {a["item"]: a for a in answers}
    return Counter(render(by_item[r["item"]]["task"], [by_item[r["item"]]["answers"][s]
                                                       for s in json.loads(r["first"])]).user for r in rows)


def _sent(server: JudgeServer, start: int = 0) -> Counter[str]:
    return Counter(b["messages"][1]["content"] for b in server.bodies[start:])


def test_run_stores_every_call_and_a_second_run_pays_nothing(tmp_path: Path) -> None:
    answers = _answers(tmp_path, 4)
    with JudgeServer() as server:
        config = listwise_config(tmp_path, server.openai_url)
        assert estimate_listwise(config).calls_to_make == 12
        done = run_listwise(config)
        assert (done.planned, done.made, done.resumed, done.cached, done.failed, done.unparsed) == (12, 12, 0, 0, 0, 0)
        assert server.total == 12  # one request per (item, slot order)
        rows = every_stored_call(tmp_path / "swapjudge.db")
        assert len(rows) == 12 and all(r["verdict"] is None and r["second"] == "" for r in rows)
        # every call's prompt was sent exactly once, and what was sent is what was stored
        assert _sent(server) == _user_texts(rows, answers)
        picks = [r["settings"]["pick"] for r in rows]
        assert [json.loads(r["first"])[p - 1] for r, p in zip(rows, picks, strict=True)] == ["good"] * 12
        # a finished run's prompts are in the cache: the same configuration again makes a run of 12 cached calls
        assert estimate_listwise(config).calls_to_make == 0
        again = run_listwise(config)
        assert (again.made, again.cached, again.run_id) == (0, 12, done.run_id + 1)
        assert server.total == 12
    con = sqlite3.connect(tmp_path / "swapjudge.db")
    assert con.execute("SELECT status, orders, schema FROM runs ORDER BY id").fetchall() == [
        ("done", "listwise:latin", "listwise")] * 2


def test_export_analyze_rank_report_and_runs_read_a_listwise_store(tmp_path: Path) -> None:
    _answers(tmp_path, 5)
    with JudgeServer() as server:
        config = listwise_config(tmp_path, server.openai_url)
        run = cli_in(tmp_path, "run", str(config), "--no-progress", "--format", "json")
        assert run.exit_code == 0, run.output
    document = json.loads(run.stdout)
    assert document["listwise"]["consistency"]["rate"] == 1.0 and document["run"]["made"] == 15
    exported = cli_in(tmp_path, "export", "--latest", "-o", "calls.jsonl")
    assert exported.exit_code == 0, exported.output
    records = load_listwise(tmp_path / "calls.jsonl")
    assert len(records) == 15 and {c.slots[c.pick - 1] for c in records.calls if c.pick} == {"good"}
    # each item shown in a Latin square: every system once in every slot
    for item in {c.item for c in records.calls}:
        seen = Counter((s, k) for c in records.calls if c.item == item for k, s in enumerate(c.slots))
        assert set(seen.values()) == {1} and len(seen) == 9
    analysed = cli_in(tmp_path, "analyze", "calls.jsonl", "--format", "json")
    assert json.loads(analysed.stdout)["listwise"] == document["listwise"]
    # the store itself: its latest run is listwise, so analyze and rank read its calls
    from_store = cli_in(tmp_path, "analyze", "swapjudge.db", "--format", "json")
    assert from_store.exit_code == 0 and json.loads(from_store.stdout)["listwise"] == document["listwise"]
    ranked = cli_in(tmp_path, "rank", "swapjudge.db", "--format", "json", "--bootstrap", "0")
    assert ranked.exit_code == 0, ranked.output
    assert max(json.loads(ranked.stdout)["strengths"].items(), key=lambda kv: kv[1]["value"])[0] == "good"
    # the same records through stdin are detected as listwise too
    piped = CliRunner().invoke(app, ["analyze", "-", "--format", "json"],
                               input=(tmp_path / "calls.jsonl").read_text(encoding="utf-8"))
    assert piped.exit_code == 0, piped.output
    assert json.loads(piped.stdout)["listwise"] == document["listwise"]
    report = cli_in(tmp_path, "report", "swapjudge.db", "--markdown", "r.md")
    assert report.exit_code == 0, report.output
    assert "slot" in (tmp_path / "r.md").read_text(encoding="utf-8").lower()
    listing = cli_in(tmp_path, "runs", "--format", "json")
    assert [(r["stored_calls"], r["total_calls"], r["status"]) for r in json.loads(listing.stdout)] == [
        (15, 15, "done")]


def test_dry_run_and_check(tmp_path: Path) -> None:
    _answers(tmp_path, 3)
    with JudgeServer() as server:
        config = listwise_config(tmp_path, server.openai_url)
        dry = cli_in(tmp_path, "run", str(config), "--dry-run")
        assert dry.exit_code == 0, dry.output
        assert "9 planned calls" in dry.stdout and "calls to make:                                 9" in dry.stdout
        # gpt-4o-mini's built-in price: the estimate is a dollar figure, not unknown
        assert "estimated cost (gpt-4o-mini): $" in dry.stdout
        assert server.total == 0 and not (tmp_path / "swapjudge.db").exists()
        checked = cli_in(tmp_path, "run", str(config), "--check")
        assert checked.exit_code == 0, checked.output
        assert "(pick " in checked.stdout and "nothing stored" in checked.stdout
        assert server.total == 1 and not (tmp_path / "swapjudge.db").exists()


def test_unusable_picks_are_stored_and_asked_again_on_request(tmp_path: Path) -> None:
    _answers(tmp_path, 3)
    broken = set()

    def faults(user: str, attempt: int) -> str | None:
        if "Question 1:" in user and attempt == 1:
            broken.add(user)
            return "garbage"
        return None

    with JudgeServer(faults=faults) as server:
        config = listwise_config(tmp_path, server.openai_url)
        first = run_listwise(config)
        assert (first.made, first.unparsed) == (9, 3) and server.total == 9
        again = run_listwise(config, retry_unparsed=True)
        assert (again.made, again.resumed, again.unparsed) == (3, 6, 0) and server.total == 12
    con = sqlite3.connect(tmp_path / "swapjudge.db")
    assert con.execute("SELECT COUNT(*) FROM superseded_calls").fetchone() == (3,)
    assert con.execute("SELECT COUNT(*), COUNT(DISTINCT run_id) FROM calls").fetchone() == (9, 1)


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_pays_only_the_missing_calls(tmp_path: Path) -> None:
    answers, concurrency = _answers(tmp_path, 40), 4
    db = tmp_path / "swapjudge.db"
    with JudgeServer(delay_s=0.04) as server:
        config = listwise_config(tmp_path, server.openai_url, max_concurrency=concurrency)
        cmd = [sys.executable, "-c", "from swapjudge.cli import main; main()", "run", str(config), "--no-progress"]
        proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if len(every_stored_call(db)) >= 60:
                    break
            except sqlite3.OperationalError:
                pass
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        before = every_stored_call(db)
        assert 0 < len(before) < 120
        sent_before = server.total
        # every stored call was answered by the server (stored only after it was paid)
        assert not _user_texts(before, answers) - _sent(server)
        done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "(resumed)" in done.stderr
        after = _sent(server, sent_before)
    rows = every_stored_call(db)
    assert len(rows) == 120 and len({(r["item"], r["first"]) for r in rows}) == 120
    assert {r["run_id"] for r in rows} == {1} and all(r["error"] is None for r in rows)
    # nothing stored before the kill was asked again; each missing call once; only the calls in flight at the
    # kill (sent, not stored) were sent twice in all
    assert not set(after) & set(_user_texts(before, answers))
    assert set(after) == set(_user_texts(rows, answers)) - set(_user_texts(before, answers))
    assert max(after.values()) == 1
    assert server.total - 120 <= concurrency


def test_card_of_a_listwise_judge_shows_the_n_way_figures(tmp_path: Path) -> None:
    rows = _answers(tmp_path, 6)
    for i, row in enumerate(rows):  # two subsets of three items
        row["item"] = f"{'math' if i < 3 else 'prose'}#{i}"
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with JudgeServer(policy="first") as server:  # always slot 1: consistency 0, slot 1's share 100%
        config = listwise_config(tmp_path, server.openai_url)
        refused = cli_in(tmp_path, "card", str(config), "--suite", "quick")
        assert refused.exit_code == 2 and "three or more answers" in refused.output and server.total == 0
        made = cli_in(tmp_path, "card", str(config), "--suite", str(suite), "--format", "json", "--no-progress",
                    "-o", "card.html", "-o", "card.md")
        assert server.total == 18
    assert made.exit_code == 1, made.output  # the gate fails, after writing
    card = json.loads(made.stdout)
    assert card["protocol"] == "listwise" and [s["name"] for s in card["subsets"]] == ["math", "prose"]
    stored = every_stored_call(tmp_path / "swapjudge.db")
    for subset in card["subsets"]:
        calls = [r for r in stored if r["item"].startswith(subset["name"] + "#")]
        picks = Counter(r["settings"]["pick"] for r in calls)
        assert subset["listwise"]["slot_share"] == [picks[k] / len(calls) for k in (1, 2, 3)] == [1.0, 0.0, 0.0]
        assert subset["listwise"]["consistency"]["rate"] == 0.0 and subset["gate"]["passed"] is False
    assert card["overall"]["listwise"]["strengths"] is None
    html = (tmp_path / "card.html").read_text(encoding="utf-8")
    assert "Best of 3, per subset" in html and "<script" not in html
    assert "winner consistency 0.0%" in (tmp_path / "card.md").read_text(encoding="utf-8")


def test_pairwise_readers_refuse_a_listwise_run_in_one_line(tmp_path: Path) -> None:
    _answers(tmp_path, 3)
    with JudgeServer() as server:
        run_listwise(listwise_config(tmp_path, server.openai_url))
    csv = cli_in(tmp_path, "export", "--latest", "-o", "calls.csv")
    assert csv.exit_code == 2 and "best-of-N (listwise) run" in csv.output and not (tmp_path / "calls.csv").exists()
    decision = tmp_path / "decision.yaml"
    decision.write_text("candidate: good\nincumbent: bad\n", encoding="utf-8")
    decided = cli_in(tmp_path, "decide", str(decision), "swapjudge.db")
    assert decided.exit_code == 2, decided.output
    lines = [line for line in decided.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "best-of-N (listwise) run" in lines[0]
