"""`batch: files` against output files shaped as vLLM's run_batch writes them (tests/batch_server.RunBatch, built
from vllm/entrypoints/openai/run_batch.py): a file read while it is still being written, the `.partial` rule,
inline failures retried and then stored as failed with the engine's reason, the served model name, duplicate and
foreign lines, and paths that are not regular files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from batch_server import RunBatch
from runner_helpers import stored_calls, write_config, write_pairs
from swapjudge.config import load_config
from swapjudge.judges.openai_batch import parse_output_line
from swapjudge.runner.session import run_session

N = 12
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _config(tmp: Path, **judge: Any) -> Path:
    write_pairs(tmp, N)
    return write_config(tmp, base_url="http://127.0.0.1:9/v1", judge={"batch": "files", "batch_dir": "batches",
                                                                      **judge})


def _cli(tmp: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "swapjudge", *args], cwd=tmp, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": SRC}, timeout=timeout)


def _requests(tmp: Path) -> list[Path]:
    return sorted((tmp / "batches").glob("swapjudge-*.requests.jsonl"), key=lambda p: p.stat().st_mtime_ns)


def _engine_on_new_files(tmp: Path, engine: RunBatch) -> int:
    """Run the engine on every request file without an output file; how many it ran on."""
    n = 0
    for req in _requests(tmp):
        if not req.with_name(req.name.replace(".requests.", ".output.")).exists():
            engine.run(req)
            n += 1
    return n


def test_parse_output_line_reads_run_batch_failures_with_their_reasons() -> None:
    ok = parse_output_line(json.dumps({"id": "vllm-1", "custom_id": "k-1", "response": {
        "status_code": 200, "request_id": "r", "body": {"choices": []}}, "error": None}))
    assert ok is not None and ok.body == {"choices": []} and ok.failure is None
    inline = parse_output_line(json.dumps({"id": "vllm-2", "custom_id": "k-2", "response": {
        "status_code": 400, "request_id": "r", "body": None}, "error": "prompt is longer than max_model_len"}))
    assert inline is not None and inline.body is None
    assert inline.failure == "HTTP 400: prompt is longer than max_model_len"
    nested = parse_output_line(json.dumps({"id": "vllm-3", "custom_id": "k-3", "response": {
        "status_code": 404, "request_id": "r", "body": None}, "error": {"error": {
            "message": "The model `m` does not exist.", "type": "NotFoundError", "param": "model", "code": 404}}}))
    assert nested is not None and nested.failure == "HTTP 404: The model `m` does not exist."
    flat = parse_output_line(json.dumps({"id": "x", "custom_id": "k-4", "response": {"status_code": 400},
                                         "error": {"object": "error", "message": "bad schema", "type": "Bad",
                                                   "code": 400}}))
    assert flat is not None and flat.failure == "HTTP 400: bad schema"
    expired = parse_output_line(json.dumps({"id": "x", "custom_id": "k-5", "response": None,
                                            "error": {"code": "batch_expired", "message": "expired"}}))
    assert expired is not None and expired.failure == "batch_expired: expired"
    assert parse_output_line(b'{"custom_id": "k-6", "response": {"status_code": 200, "bo') is None


def test_an_output_file_still_being_written_is_stored_as_far_as_it_goes_and_read_again(tmp_path: Path) -> None:
    cfg = load_config(_config(tmp_path))
    first = run_session(cfg, progress=False)
    assert first.batch_requests_in_flight == 2 * N
    (req,) = _requests(tmp_path)
    engine = RunBatch()
    engine.run(req, stop_after=10, cut=True)  # run_batch writes its output file while it runs
    partway = run_session(cfg, progress=False)
    assert len(stored_calls(tmp_path / "swapjudge.db")) == 10
    assert partway.batches_in_flight == 1 and partway.batch_requests_in_flight == 2 * N - 10
    (warning,) = [w for w in partway.warnings if "answered so far" in w]
    assert "10 of 24 requests answered so far and the last line is cut" in warning
    assert len(_requests(tmp_path)) == 1  # nothing asked twice while the engine may still be writing
    engine.run(req)  # the run finishes: the whole file
    done = run_session(cfg, progress=False)
    assert done.complete and done.stats.made == 2 * N - 10
    calls = stored_calls(tmp_path / "swapjudge.db")
    assert len(calls) == 2 * N and all(c["error"] is None for c in calls)
    assert len(_requests(tmp_path)) == 1 and set(engine.requests.values()) == {2}  # the engine ran the file twice


def test_an_output_written_under_the_partial_rule_is_not_read_until_renamed(tmp_path: Path) -> None:
    cfg = load_config(_config(tmp_path))
    run_session(cfg, progress=False)
    (req,) = _requests(tmp_path)
    out = req.with_name(req.name.replace(".requests.", ".output."))
    partial = out.with_name(out.name + ".partial")
    engine = RunBatch()
    engine.run(req, partial)
    out.write_text("")  # an engine that also made the final name early: the .partial says it is not done
    waiting = run_session(cfg, progress=False)
    assert waiting.batches_in_flight == 1 and stored_calls(tmp_path / "swapjudge.db") == []
    out.unlink()
    partial.rename(out)
    assert run_session(cfg, progress=False).complete and len(stored_calls(tmp_path / "swapjudge.db")) == 2 * N


def test_a_request_the_engine_always_fails_is_stored_failed_with_the_reason_after_three_tries(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    assert _cli(tmp_path, "run", str(cfg), "--no-progress").returncode == 0
    (req,) = _requests(tmp_path)
    doomed = [json.loads(x)["custom_id"].rpartition("-")[2] for x in req.read_text().splitlines()[:2]]
    engine = RunBatch(fail=lambda cid: "This model's maximum context length is 4096 tokens"
                      if cid.rpartition("-")[2] in doomed else None)
    outs = []
    for _ in range(6):  # the audit's loop: engine, collect, engine, collect ...
        assert _engine_on_new_files(tmp_path, engine) <= 1
        out = _cli(tmp_path, "run", str(cfg), "--no-progress")
        outs.append(out)
        if out.returncode != 0:
            break
    assert [o.returncode for o in outs] == [0, 0, 2], [o.stderr for o in outs]
    assert len(_requests(tmp_path)) == 3  # the first file and two follow-ups, counted across runs of the command
    assert {engine.requests[d] for d in doomed} == {3}
    last = outs[-1].stderr
    assert ("2 requests failed in the engine (HTTP 400: This model's maximum context length is 4096 tokens); each "
            "came back failed from 3 batches") in last and "Traceback" not in last
    assert "2 call(s) failed after retries" in last
    calls = stored_calls(tmp_path / "swapjudge.db")
    failed = [c for c in calls if c["error"] is not None]
    assert len(calls) == 2 * N and len(failed) == 2
    assert all(c["error"] == "HTTP 400: This model's maximum context length is 4096 tokens (failed in 3 batches)"
               for c in failed)


def test_an_engine_serving_another_model_name_is_told_how_to_serve_the_configured_one(tmp_path: Path) -> None:
    cfg = load_config(_config(tmp_path))
    run_session(cfg, progress=False)
    engine = RunBatch(served_model_name="Qwen/Qwen2.5-7B-Instruct")
    for _ in range(3):
        _engine_on_new_files(tmp_path, engine)
        result = run_session(cfg, progress=False)
    (warning,) = [w for w in result.warnings if "failed in the engine" in w]
    assert warning.startswith("24 requests failed in the engine (HTTP 404: The model `judge-model` does not exist. "
                              "(serve it under the name judge.model gives: run_batch --served-model-name "
                              "judge-model))")
    assert result.stats.failed == 2 * N


def test_a_reply_naming_another_served_model_is_not_stored_as_this_judges(tmp_path: Path) -> None:
    cfg = load_config(_config(tmp_path))
    run_session(cfg, progress=False)
    (req,) = _requests(tmp_path)
    out = RunBatch().run(req)
    lines = out.read_text().splitlines()
    first = json.loads(lines[0])
    first["response"]["body"]["model"] = "judge-model-v2"  # an engine serving two names answers as its first
    out.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    run_session(cfg, progress=False)
    assert len(stored_calls(tmp_path / "swapjudge.db")) == 2 * N - 1
    (again,) = _requests(tmp_path)[1:]
    assert [json.loads(x)["custom_id"].rpartition("-")[2] for x in again.read_text().splitlines()] == [
        first["custom_id"].rpartition("-")[2]]


def test_duplicate_and_foreign_lines_are_counted_and_a_disagreement_is_asked_again(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    _cli(tmp_path, "run", str(cfg), "--no-progress")
    (req,) = _requests(tmp_path)
    out = RunBatch().run(req)
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    flipped = json.loads(json.dumps(lines[0]))
    body = flipped["response"]["body"]
    winner = json.loads(body["choices"][0]["message"]["content"])["winner"]
    body["choices"][0]["message"]["content"] = json.dumps({"winner": "B" if winner == "A" else "A", "reason": "x"})
    failure_first = {"id": "vllm-f", "custom_id": lines[1]["custom_id"], "error": "engine restarted",
                     "response": {"status_code": 400, "request_id": "r", "body": None}}
    same_again = json.loads(json.dumps(lines[2]))
    same_again["id"], same_again["response"]["body"]["id"] = "vllm-again", "chatcmpl-again"
    foreign = [{**lines[3], "custom_id": f"sjffffffffffffff-{i:024x}"} for i in range(3)]
    rows = [failure_first, *lines, flipped, same_again, *foreign]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows) + "not json at all\n")
    collected = _cli(tmp_path, "run", str(cfg), "--no-progress")
    assert collected.returncode == 0, collected.stderr
    err = collected.stderr
    assert "3 lines name requests of other submissions (ignored)" in err
    assert "1 lines are not results" in err
    assert "1 requests have lines that disagree (counted as failed and asked again)" in err
    assert "2 requests have more than one line" in err
    calls = {(c["item"], c["first"]): c for c in stored_calls(tmp_path / "swapjudge.db")}
    assert len(calls) == 2 * N - 1  # the disagreeing request is not stored: neither answer is trusted
    (again,) = _requests(tmp_path)[1:]
    assert [json.loads(x)["custom_id"].rpartition("-")[2] for x in again.read_text().splitlines()] == [
        lines[0]["custom_id"].rpartition("-")[2]]
    # the request whose failure came before its success is stored from the success
    assert all(c["error"] is None for c in calls.values())


@pytest.mark.parametrize("kind", ["a folder", "a FIFO"])
def test_an_output_path_that_is_no_regular_file_gives_one_line_and_never_hangs(tmp_path: Path, kind: str) -> None:
    cfg = _config(tmp_path)
    assert _cli(tmp_path, "run", str(cfg), "--no-progress").returncode == 0
    (req,) = _requests(tmp_path)
    out = req.with_name(req.name.replace(".requests.", ".output."))
    if kind == "a folder":
        out.mkdir()
    else:
        os.mkfifo(out)  # opening it to read would block until a writer came: for ever
    again = _cli(tmp_path, "run", str(cfg), "--no-progress", timeout=60)
    assert again.returncode == 0 and "Traceback" not in again.stderr
    assert again.stderr.strip() == f"warning: skipped {out}: {kind}, not a regular file"
    assert again.stdout.strip() == "waiting for 24 requests in 1 batches; run the same command to collect"


def test_a_batch_dir_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    (tmp_path / "batches").write_text("not a folder")
    out = _cli(tmp_path, "run", str(cfg), "--no-progress")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip() == f"error: judge.batch_dir {tmp_path / 'batches'} is a file, not a folder"


@pytest.mark.parametrize("cut", [True, False])
def test_a_file_cut_short_by_a_dead_engine_is_completed_by_running_the_engine_again(tmp_path: Path, cut: bool) -> None:
    cfg = load_config(_config(tmp_path))
    run_session(cfg, progress=False)
    (req,) = _requests(tmp_path)
    engine = RunBatch()
    engine.run(req, stop_after=5, cut=cut)
    run_session(cfg, progress=False)
    run_session(cfg, progress=False)  # nothing changed: still waiting, nothing new written, nothing stored twice
    assert len(stored_calls(tmp_path / "swapjudge.db")) == 5 and len(_requests(tmp_path)) == 1
    engine.run(req)
    assert run_session(cfg, progress=False).complete and len(stored_calls(tmp_path / "swapjudge.db")) == 2 * N
