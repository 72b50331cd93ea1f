"""Best-of-N runs through the batch engine (`judge.batch: true | files`), against a real HTTP server on 127.0.0.1
speaking OpenAI's Batch API (tests/batch_server.BatchServer) and output files shaped as vLLM's run_batch writes
them (tests/batch_server.RunBatch): picks stored as the synchronous path stores them, batch prices, `--no-wait`
then collect, a `kill -9` after the batch was created then a rerun that adopts it (each call paid once), failures
retried then stored failed with the engine's reason, a second run of the same configuration paying nothing, and
the dry run's batch price."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from batch_server import BatchServer, RunBatch
from runner_helpers import cli_in, every_stored_call, listwise_config
from swapjudge.judges.listwise_prompts import render
from swapjudge.runner.listwise_run import estimate_listwise, run_listwise
from swapjudge.runner.pricing import call_cost, price_for

SRC = str(Path(__file__).resolve().parents[2] / "src")
N_ITEMS = 4  # three answers each, `latin`: 12 calls


def _answers(directory: Path, n: int = N_ITEMS) -> list[dict[str, Any]]:
    """n items of three answers; only `good`'s says CORRECT (the fake judge picks the slot holding it)."""
    rows = [{"item": f"q{i:03d}", "task": f"Question {i}: what is {i} times 7?", "label": "good",
             "answers": {"good": f"CORRECT: {i * 7}.", "meh": f"About {i * 7 + 2}.", "bad": f"Maybe {i}?"}}
            for i in range(n)]
    (directory / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return rows


def _config(directory: Path, url: str, *, model: str = "gpt-4o-mini", **judge: Any) -> Path:
    return listwise_config(directory, url, model=model, max_retries=1, batch_poll_s=0.02, **judge)


def _expected_pick(row: dict[str, Any]) -> int:
    return json.loads(row["first"]).index("good") + 1


def test_batch_api_run_stores_picks_at_batch_price_and_a_second_run_pays_nothing(tmp_path: Path) -> None:
    answers = _answers(tmp_path)
    with BatchServer(polls_to_end=2) as server:
        cfg = _config(tmp_path, server.openai_url, batch=True)
        first = run_listwise(cfg)
        assert (first.planned, first.made, first.failed, first.unparsed) == (12, 12, 0, 0)
        assert first.batches_waiting == 0 and server.created == 1 and server.sync_calls == 0
        assert len(server.received) == 12 and set(server.received.values()) == {1}
        second = run_listwise(cfg)  # the finished run's configuration again: a new run, served from the cache
        assert second.run_id != first.run_id and (second.made, second.cached) == (0, 12)
        assert server.created == 1 and sum(server.received.values()) == 12
    rows = every_stored_call(tmp_path / "swapjudge.db")
    assert len(rows) == 24
    by_item = {a["item"]: a for a in answers}
    price = price_for("gpt-4o-mini", {}, backend="openai")
    assert price is not None
    spend = 0.0
    for r in rows:
        assert r["settings"]["pick"] == _expected_pick(r) and r["settings"]["protocol"] == "listwise"
        assert r["error"] is None and r["second"] == "" and r["verdict"] is None
        assert r["raw"] == f"Best answer: {_expected_pick(r)}"
        if r["run_id"] == first.run_id:
            assert r["settings"]["batch"] == "openai" and r["source"] == "api"
            # what the fake server reports: (system + user characters) // 4 prompt tokens, 5 completion tokens
            slots = json.loads(r["first"])
            prompt = render(by_item[r["item"]]["task"], [by_item[r["item"]]["answers"][s] for s in slots])
            tokens_in = (len(prompt.system) + len(prompt.user)) // 4
            assert (r["input_tokens"], r["output_tokens"]) == (tokens_in, 5)
            half = (tokens_in * price.input + 5 * price.output) / 2 / 1e6  # the Batch API bills half of each
            assert abs(r["cost_usd"] - half) < 1e-12
            spend += r["cost_usd"]
        else:
            assert r["source"] == "cache"
    assert first.spend_usd is not None and abs(first.spend_usd - spend) < 1e-12


def test_no_wait_submits_then_the_same_command_collects_without_submitting_again(tmp_path: Path) -> None:
    _answers(tmp_path)
    with BatchServer(polls_to_end=3) as server:
        cfg = _config(tmp_path, server.openai_url, batch=True)
        out = cli_in(tmp_path, "run", str(cfg), "--no-wait", "--no-progress")
        assert out.exit_code == 0, out.output
        assert "submitted 12 requests in 1 batches; run the same command to collect" in out.output
        assert server.created == 1 and every_stored_call(tmp_path / "swapjudge.db") == []
        out = cli_in(tmp_path, "run", str(cfg), "--no-progress", "--format", "json")
        assert out.exit_code == 0, out.output
        assert server.created == 1 and sum(server.received.values()) == 12
    rows = every_stored_call(tmp_path / "swapjudge.db")
    assert len(rows) == 12 and all(r["settings"]["pick"] == _expected_pick(r) for r in rows)
    assert len({r["run_id"] for r in rows}) == 1  # collected into the run that submitted it


RUN = "from swapjudge.cli import main; main()"


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_kill_9_after_the_batch_is_created_then_the_rerun_adopts_it(tmp_path: Path, backend: str) -> None:
    _answers(tmp_path)
    with BatchServer(polls_to_end=2) as server:
        url = server.anthropic_url if backend == "anthropic" else server.openai_url
        model = "claude-3-5-haiku-20241022" if backend == "anthropic" else "gpt-4o-mini"
        cfg = _config(tmp_path, url, model=model, backend=backend, batch=True)
        env = {**os.environ, "PYTHONPATH": SRC, "SWAPJUDGE_BATCH_FAULT": "after_create"}
        killed = subprocess.run([sys.executable, "-c", RUN, "run", str(cfg), "--no-progress"], cwd=tmp_path,
                                capture_output=True, text=True, env=env, timeout=120)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert server.created == 1  # the batch exists at the provider; the ledger never heard back
        env.pop("SWAPJUDGE_BATCH_FAULT")
        resumed = subprocess.run([sys.executable, "-c", RUN, "run", str(cfg), "--no-progress"], cwd=tmp_path,
                                 capture_output=True, text=True, env=env, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
        assert server.created == 1 and len(server.received) == 12 and set(server.received.values()) == {1}
    rows = every_stored_call(tmp_path / "swapjudge.db")
    assert len(rows) == 12 and all(r["settings"]["pick"] == _expected_pick(r) for r in rows)
    assert {r["settings"]["batch"] for r in rows} == {backend}


def test_errored_requests_are_retried_then_stored_failed_with_the_reason(tmp_path: Path) -> None:
    _answers(tmp_path)
    with BatchServer(polls_to_end=1) as server:
        cfg = _config(tmp_path, server.openai_url, batch=True)
        setup_rows: list[str] = []

        def outcome(cid: str) -> str | None:
            # one request errors in every batch it goes into; the others answer
            if not setup_rows:
                setup_rows.append(cid.rpartition("-")[2])
            return "errored" if cid.rpartition("-")[2] == setup_rows[0] else None

        server.outcome = outcome
        done = run_listwise(cfg)
        assert server.created == 3  # the first batch and two follow-ups
        assert server.received[setup_rows[0]] == 3
        assert (done.made, done.failed) == (11, 1)
        assert any("failed in the batch" in w for w in done.warnings)
    rows = every_stored_call(tmp_path / "swapjudge.db")
    failed = [r for r in rows if r["error"] is not None]
    assert len(failed) == 1 and "(failed in 3 batches)" in failed[0]["error"]
    assert failed[0]["settings"]["pick"] is None
    assert all(r["settings"]["pick"] == _expected_pick(r) for r in rows if r["error"] is None)


def test_batch_files_round_trip_then_a_second_run_pays_nothing(tmp_path: Path) -> None:
    _answers(tmp_path)
    cfg = _config(tmp_path, "http://127.0.0.1:9/v1", model="judge-model", batch="files", batch_dir="batches")
    out = cli_in(tmp_path, "run", str(cfg), "--no-progress")
    assert out.exit_code == 0, out.output
    assert "waiting for 12 requests in 1 batches; run the same command to collect" in out.output
    (req,) = sorted((tmp_path / "batches").glob("swapjudge-*.requests.jsonl"))
    lines = [json.loads(x) for x in req.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 12 and {x["url"] for x in lines} == {"/v1/chat/completions"}
    assert all(x["body"]["max_tokens"] == 16 and len(x["body"]["messages"]) == 2 for x in lines)
    again = cli_in(tmp_path, "run", str(cfg), "--no-progress")  # no output file yet: still waiting, nothing new
    assert "waiting for 12 requests" in again.output
    assert len(list((tmp_path / "batches").glob("*.requests.jsonl"))) == 1
    engine = RunBatch("judge-model")
    engine.run(req)
    collected = run_listwise(cfg)
    assert (collected.made, collected.failed, collected.batches_waiting) == (12, 0, 0)
    rows = every_stored_call(tmp_path / "swapjudge.db")
    assert len(rows) == 12 and all(r["settings"]["pick"] == _expected_pick(r) and r["settings"]["batch"] == "files"
                                   for r in rows)
    assert all(r["cost_usd"] is None for r in rows)  # an offline engine: priced only under `prices:`
    second = run_listwise(cfg)
    assert (second.made, second.cached, second.batches_waiting) == (0, 12, 0)
    assert len(list((tmp_path / "batches").glob("*.requests.jsonl"))) == 1 and engine.n == 12


def test_dry_run_shows_the_batch_price(tmp_path: Path) -> None:
    _answers(tmp_path)
    cfg = _config(tmp_path, "http://127.0.0.1:9/v1", batch=True)
    est = estimate_listwise(cfg)
    price = price_for("gpt-4o-mini", {}, backend="openai")
    sync = call_cost(price, input_tokens=est.input_tokens, output_tokens=est.output_tokens)
    assert est.cost_usd is not None and sync is not None and abs(est.cost_usd - sync) < 1e-12
    assert est.batch_cost_usd is not None and abs(est.batch_cost_usd - sync / 2) < 1e-12
    out = cli_in(tmp_path, "run", str(cfg), "--dry-run")
    assert out.exit_code == 0, out.output
    assert f"batch cost (judge.batch true, within 24 h): ${est.batch_cost_usd:,.4f}" in " ".join(out.output.split())
    files = _config(tmp_path, "http://127.0.0.1:9/v1", model="judge-model", batch="files", batch_dir="b")
    priced = yaml.safe_load(files.read_text(encoding="utf-8"))
    priced["prices"] = {"judge-model": {"input": 0.02, "output": 0.04}}
    files.write_text(yaml.safe_dump(priced), encoding="utf-8")
    est = estimate_listwise(files)
    want = (est.input_tokens * 0.02 + est.output_tokens * 0.04) / 1e6
    assert est.batch_cost_usd is not None and abs(est.batch_cost_usd - want) < 1e-12
    out = cli_in(tmp_path, "run", str(files), "--dry-run")
    assert f"batch cost (judge.batch: files, at the configured price): ${want:,.4f}" in " ".join(out.output.split())


def test_a_best_of_n_card_waits_for_its_batch_files_then_is_made_from_every_call(tmp_path: Path) -> None:
    _answers(tmp_path)
    cfg = _config(tmp_path, "http://127.0.0.1:9/v1", model="judge-model", batch="files", batch_dir="batches")
    out = cli_in(tmp_path, "card", str(cfg), "--suite", "answers.jsonl", "--no-progress")
    assert out.exit_code == 0, out.output
    assert "waiting for 12 requests in 1 batches; run the same command to collect them and make the card" in (
        " ".join(out.output.split()))
    (req,) = sorted((tmp_path / "batches").glob("swapjudge-*.requests.jsonl"))
    RunBatch("judge-model").run(req)
    out = cli_in(tmp_path, "card", str(cfg), "--suite", "answers.jsonl", "--no-progress", "--format", "json")
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["suite"]["calls"] == 12 and doc["suite"]["items"] == N_ITEMS


def test_batch_fallback_sync_asks_the_synchronous_api_for_what_the_batch_returned_failed(tmp_path: Path) -> None:
    _answers(tmp_path)
    with BatchServer(polls_to_end=1) as server:
        cfg = _config(tmp_path, server.openai_url, batch=True, batch_fallback="sync")
        failing: list[str] = []

        def outcome(cid: str) -> str | None:
            digest = cid.rpartition("-")[2]
            if not failing:
                failing.append(digest)
            return "expired" if digest == failing[0] else None

        server.outcome = outcome
        done = run_listwise(cfg)
        assert server.created == 1 and server.sync_calls == 1
        assert (done.made, done.failed, done.unparsed) == (12, 0, 0)
    rows = every_stored_call(tmp_path / "swapjudge.db")
    assert len(rows) == 12 and all(r["settings"]["pick"] == _expected_pick(r) for r in rows)
    assert sorted(r["settings"].get("batch", "sync") for r in rows) == ["openai"] * 11 + ["sync"]
