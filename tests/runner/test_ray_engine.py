"""The Ray executor (`engine: ray`) on a local Ray cluster (ray.init on this machine, 2 CPUs, no dashboard)
against the request-counting judge server: what it stores is what the synchronous engine stores, every reply
goes through the same parser, the configuration hashes as before, a refused key stops it in one line, and a
driver killed with kill -9 resumes without paying twice beyond the calls in flight. Without a cluster: the
processor configurations it builds (HTTP and vLLM) and the rows' pre- and postprocess."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judge_server import JudgeServer
from runner_helpers import stored_calls, write_config, write_pairs
from swapjudge.config import load_config
from swapjudge.errors import ArgumentError, ConfigError, SwapjudgeError
from swapjudge.judges.base import JudgeRequest
from swapjudge.judges.openai import OpenAIJudge
from swapjudge.runner import ray_workers
from swapjudge.runner.ray_engine import processor_config
from swapjudge.runner.session import prepare, run_session

SRC = str(Path(__file__).resolve().parents[2] / "src")
RAY = {"num_cpus": 2, "concurrency": 2, "batch_size": 8}


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    """One local cluster for the in-process runs of this module (a run joins the cluster its process has)."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def _by_call(calls: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["item"], c["first"]): c for c in calls}


def test_a_ray_run_stores_what_the_synchronous_engine_stores(tmp_path: Path, ray_cluster: None) -> None:
    n = 12
    write_pairs(tmp_path, n, identical=1)
    with JudgeServer(policy="better") as server:
        cfg = write_config(tmp_path, base_url=server.openai_url, engine="ray", ray=RAY, judge={"logprobs": True})
        outcome = run_session(load_config(cfg), progress=False)
        ray_bodies = sorted(json.dumps(b, sort_keys=True) for b in server.bodies)
        assert server.total == 2 * (n - 1)  # one request per call; the identical pair costs none
    assert outcome.complete and outcome.stats.made == 2 * (n - 1)
    sync_dir = tmp_path / "sync"
    sync_dir.mkdir()
    write_pairs(sync_dir, n, identical=1)
    with JudgeServer(policy="better") as server:
        scfg = write_config(sync_dir, base_url=server.openai_url, judge={"logprobs": True})
        run_session(load_config(scfg), progress=False)
        sync_bodies = sorted(json.dumps(b, sort_keys=True) for b in server.bodies)
    assert ray_bodies == sync_bodies  # the very request bodies the synchronous judge sends
    got, want = _by_call(stored_calls(tmp_path / "swapjudge.db")), _by_call(stored_calls(sync_dir / "swapjudge.db"))
    assert got.keys() == want.keys() and len(got) == 2 * n
    for key, s in want.items():
        g = got[key]
        assert (g["verdict"], g["prompt_hash"], g["raw"], g["probabilities"], g["input_tokens"], g["source"]) == (
            s["verdict"], s["prompt_hash"], s["raw"], s["probabilities"], s["input_tokens"], s["source"])
        if g["source"] == "api":
            assert json.loads(g["settings"])["engine"] == "ray:http"
    # who makes the calls is not what is asked: the same configuration hash, so either engine resumes the run
    assert load_config(cfg).config_hash == load_config(cfg).with_engine("sync").config_hash


def test_a_refused_key_stops_a_ray_run_in_one_line(tmp_path: Path, ray_cluster: None) -> None:
    write_pairs(tmp_path, 4)
    with JudgeServer(faults=lambda prompt, attempt: "401") as server:
        cfg = write_config(tmp_path, base_url=server.openai_url, engine="ray", ray=RAY)
        with pytest.raises(SwapjudgeError) as err:
            run_session(load_config(cfg), progress=False)
    text = str(err.value)
    assert "\n" not in text and text.startswith("openai:judge-model: HTTP 401: ") and "wrong key" in text
    with sqlite3.connect(tmp_path / "swapjudge.db") as con:
        assert con.execute("SELECT status FROM runs").fetchone() == ("incomplete",)


def test_a_failed_request_is_stored_failed_and_retries_outlasted_stop_the_job_in_one_line(
        tmp_path: Path, ray_cluster: None) -> None:
    write_pairs(tmp_path, 6)

    def fault(prompt: str, attempt: int) -> str | None:
        return "500" if "question 2:" in prompt else None  # a 500 Ray does not retry: the error body comes back

    with JudgeServer(faults=fault) as server:
        cfg = write_config(tmp_path, base_url=server.openai_url, engine="ray", ray=RAY)
        first = run_session(load_config(cfg), progress=False)
    assert not first.complete and first.stats.failed == 2
    failed = [c for c in stored_calls(tmp_path / "swapjudge.db") if c["error"] is not None]
    assert [c["item"] for c in failed] == ["q002", "q002"]
    assert failed[0]["error"] == 'HTTP 500: {"error": {"message": "server error"}}'
    with JudgeServer(faults=lambda prompt, attempt: "429") as server:  # rate limited for good
        cfg = write_config(tmp_path, base_url=server.openai_url, engine="ray", ray=RAY,
                           judge={"max_retries": 1, "backoff_s": 0.01})
        with pytest.raises(SwapjudgeError) as err:
            run_session(load_config(cfg), progress=False)
        requests_seen = server.total
    text = str(err.value)
    assert "\n" not in text and text.startswith("the Ray job stopped: ") and "Reached maximum retries of 1" in text
    # Ray's message carries the whole request row: the prompt and the answers stay out of the line
    assert "Question " not in text and "answer to question" not in text
    assert requests_seen >= 2  # the request was retried before the job gave up


def test_the_engine_is_chosen_by_flag_or_key_and_refused_where_it_cannot_run(tmp_path: Path) -> None:
    write_pairs(tmp_path, 2)
    cfg = write_config(tmp_path, base_url="http://127.0.0.1:9/v1")
    plain = load_config(cfg)
    assert plain.config.engine == "sync" and plain.with_engine("ray").config.engine == "ray"
    with pytest.raises(ArgumentError) as err:
        plain.with_engine("spark")
    assert str(err.value) == "engine must be one of sync, ray, not 'spark'"
    anthropic = load_config(write_config(tmp_path, backend="anthropic", base_url="http://127.0.0.1:9",
                                         name="a.yaml"))
    with pytest.raises(ArgumentError, match=r"^engine: engine 'ray' speaks the OpenAI chat format"):
        anthropic.with_engine("ray")
    with pytest.raises(ConfigError, match=r"key `\(top level\)`: engine 'ray' makes the calls itself"):
        load_config(write_config(tmp_path, base_url="http://x/v1", engine="ray", judge={"batch": True},
                                 name="b.yaml"))
    with pytest.raises(ConfigError, match=r"key `ray`: `engine_kwargs` is for `processor: vllm`"):
        load_config(write_config(tmp_path, base_url="http://x/v1", ray={"engine_kwargs": {"x": 1}}, name="c.yaml"))
    with pytest.raises(ConfigError, match=r"key `ray`: `resources_per_bundle` is for `processor: vllm`"):
        load_config(write_config(tmp_path, base_url="http://x/v1", ray={"resources_per_bundle": {"CPU": 1}},
                                 name="c.yaml"))
    with pytest.raises(ConfigError, match=r"key `ray.resources_per_bundle.CPU`"):
        load_config(write_config(tmp_path, base_url="http://x/v1", ray={"processor": "vllm",
                                                                       "resources_per_bundle": {"CPU": -1}},
                                 name="c.yaml"))
    # the engine and its settings are kept out of the configuration hash: every configuration hashes as before
    ray_cfg = load_config(write_config(tmp_path, base_url="http://127.0.0.1:9/v1", engine="ray",
                                       ray={"concurrency": 7}, name="d.yaml"))
    assert ray_cfg.config_hash == plain.config_hash and ray_cfg.judge_hash == plain.judge_hash
    assert "engine" not in plain.normalised() and "ray" not in plain.normalised()
    out = subprocess.run([sys.executable, "-m", "swapjudge", "run", str(anthropic.source), "--engine", "ray"],
                         cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC},
                         timeout=60)
    assert out.returncode == 2 and out.stderr.startswith("error: --engine: engine 'ray' speaks the OpenAI chat")


def _request(tmp: Path, **judge: Any) -> tuple[Any, JudgeRequest]:
    write_pairs(tmp, 2)
    loaded = load_config(write_config(tmp, base_url="http://127.0.0.1:9/v1", engine="ray", judge=judge,
                                      ray={"processor": "vllm", "model_source": "/models/judge",
                                           "engine_kwargs": {"max_model_len": 4096}, "concurrency": 3,
                                           "batch_size": 32, "accelerator_type": "H100",
                                           "resources_per_bundle": {"CPU": 2, "GPU": 1}}))
    _, plan = prepare(loaded)
    return loaded, plan.calls[0].request


def test_the_vllm_processor_is_configured_from_the_judge_configuration(tmp_path: Path) -> None:
    loaded, request = _request(tmp_path, logprobs=True, temperature=0.0)
    config = processor_config(loaded)
    assert type(config).__name__ == "vLLMEngineProcessorConfig"
    assert (config.model_source, config.concurrency, config.batch_size, config.accelerator_type) == (
        "/models/judge", 3, 32, "H100")
    assert config.engine_kwargs["max_model_len"] == 4096 and config.should_continue_on_error is True
    # each engine worker's bundle as given (Ray's default is one GPU); the light CPU stages at half a CPU each
    assert config.placement_group_config["bundle_per_worker"] == {"CPU": 2.0, "GPU": 1.0}
    assert [config.chat_template_stage, config.tokenize_stage, config.detokenize_stage] == [{"num_cpus": 0.5}] * 3
    assert config.log_engine_metrics is False
    body = OpenAIJudge(loaded.config.judge, None).request_body(request)
    row = ray_workers.vllm_preprocess({ray_workers.INDEX: 0, ray_workers.BODY: json.dumps(body)})
    assert row["messages"] == body["messages"]
    params = row["sampling_params"]
    # vLLM's current structured-outputs API: the verdict's JSON schema as StructuredOutputsParams(json=...)
    assert params["structured_outputs"] == {"json": body["response_format"]["json_schema"]["schema"]}
    assert (params["temperature"], params["max_tokens"], params["logprobs"]) == (0.0, body["max_tokens"], 5)
    # what the engine stage returns for a row (Ray 2.60's vLLMOutputData fields), parsed by the one parser
    a, b = 65, 66  # token ids; decoded tokens '"A"'-style pieces as a tokenizer gives them
    output = {ray_workers.INDEX: 0, "generated_text": '{"winner": "A", "reason": "right"}',
              "num_input_tokens": 321, "num_generated_tokens": 3, "generated_tokens": [10, a, 11],
              "logprobs": [{10: {"logprob": 0.0, "rank": 1, "decoded_token": '{"winner": "'}},
                           {a: {"logprob": -0.2231435513, "rank": 1, "decoded_token": "A"},
                            b: {"logprob": -1.6094379124, "rank": 2, "decoded_token": "B"}},
                           {11: {"logprob": 0.0, "rank": 1, "decoded_token": '", "reason": "right"}'}}]}
    reply_row = ray_workers.vllm_postprocessor("judge-model")(output)
    reply = OpenAIJudge(loaded.config.judge, None).reply_from_body(json.loads(reply_row[ray_workers.REPLY]), request)
    assert reply.verdict == "first" and (reply.input_tokens, reply.output_tokens) == (321, 3)
    assert reply.probabilities == {"first": 0.8, "second": 0.2}
    # Arrow may hand the per-token maps back as (key, value) pairs with string keys: read the same
    paired = {**output, "logprobs": [[(str(k), v) for k, v in m.items()] for m in output["logprobs"]]}
    assert ray_workers.vllm_postprocess(paired, model="judge-model") == reply_row


def test_building_the_vllm_processor_without_vllm_is_one_line(tmp_path: Path) -> None:
    from swapjudge.runner.ray_engine import build

    loaded, _ = _request(tmp_path)
    with pytest.raises(SwapjudgeError, match=r"^ray.processor vllm needs vLLM .*pip install 'ray\[data,llm\]"):
        build(loaded)


def test_the_http_processor_posts_to_the_judge_endpoint_with_its_settings(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    monkeypatch.setenv("MY_KEY", "sk-test-123")
    write_pairs(tmp_path, 2)
    loaded = load_config(write_config(tmp_path, base_url="http://127.0.0.1:9/v1", engine="ray",
                                      judge={"api_key_env": "MY_KEY", "max_retries": 3, "backoff_s": 0.5,
                                             "timeout_s": 7, "requests_per_minute": 600},
                                      ray={"concurrency": 5, "batch_size": 4}))
    config = processor_config(loaded)
    assert type(config).__name__ == "HttpRequestProcessorConfig"
    assert config.url == "http://127.0.0.1:9/v1/chat/completions"
    assert config.headers["Authorization"] == "Bearer sk-test-123"
    assert (config.max_retries, config.base_retry_wait_time_in_s, config.qps, config.batch_size) == (3, 0.5, 2, 4)
    assert config.http_request_stage == {"concurrency": 5, "num_cpus": 0.25}

    async def post(url: str) -> Any:  # the session the workers open: status and text as the server sent them
        async with config.session_factory() as session:
            response = await session.post(url, data=json.dumps({"model": "m", "messages": [
                {"role": "system", "content": "s"}, {"role": "user", "content": "<task x>\nq\n</task x>"}]}))
            assert session.timeout.total == 7
            return await response.json()

    with JudgeServer(faults=lambda prompt, attempt: "500") as server:
        got = asyncio.run(post(server.openai_url + "/chat/completions"))
    assert got == {"sj_status": 500, "sj_reply": '{"error": {"message": "server error"}}'}
    assert ray_workers.http_postprocess({ray_workers.INDEX: 3, "http_response": got}) == {
        "sj_index": 3, "sj_status": 500, "sj_reply": '{"error": {"message": "server error"}}'}


# ---- kill -9 of the driver, then resume: 800 calls --------------------------------------------------------------

def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=10) as con:
            return int(con.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _wait_until_quiet(server: JudgeServer, *, quiet_s: float, deadline_s: float) -> None:
    """Return once `server` has counted no new request for `quiet_s` seconds (fail after `deadline_s`)."""
    end = time.monotonic() + deadline_s
    seen, since = server.total, time.monotonic()
    while time.monotonic() - since < quiet_s:
        assert time.monotonic() < end, "requests kept landing after the driver was killed"
        time.sleep(0.1)
        if server.total != seen:
            seen, since = server.total, time.monotonic()


@pytest.mark.slow
def test_kill_9_of_the_ray_driver_then_resume_stores_every_call_once(tmp_path: Path) -> None:
    # 800 calls, killed once 160 are stored: each call costs the local cluster ~30 ms here, and the claim is about
    # the calls in flight at the kill (two batches of 8 at most), not about how many came before or after.
    pairs = 400
    kill_at = 2 * pairs // 5
    write_pairs(tmp_path, pairs)
    env = {**os.environ, "PYTHONPATH": SRC}
    with JudgeServer(policy="better", delay_s=0.005) as server:
        server.keep_bodies = False
        cfg = write_config(tmp_path, base_url=server.openai_url, engine="ray", ray=RAY,
                           judge={"max_concurrency": 8})
        db = tmp_path / "swapjudge.db"
        driver = subprocess.Popen([sys.executable, "-m", "swapjudge", "run", str(cfg), "--no-progress"],
                                  cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True, start_new_session=True)
        deadline = time.monotonic() + 600
        while _count(db) < kill_at:
            assert driver.poll() is None, driver.stderr.read() if driver.stderr else ""
            assert time.monotonic() < deadline, "the Ray run stored too little in 10 minutes"
            time.sleep(0.05)
        os.kill(driver.pid, signal.SIGKILL)  # the driver alone: its local cluster finds it gone
        driver.wait()
        at_kill = server.total
        # Ray ends a dead driver's workers: the requests they had sent may still land, unstored. Wait until the
        # server has seen no request for 3 s (they land within milliseconds: the server answers in 5 ms).
        _wait_until_quiet(server, quiet_s=3.0, deadline_s=60.0)
        before_resume, stored_at_kill = server.total, _count(db)
        assert kill_at <= stored_at_kill < 2 * pairs
        resumed = subprocess.run([sys.executable, "-m", "swapjudge", "run", str(cfg), "--no-progress",
                                  "--engine", "ray", "--format", "json"], cwd=tmp_path, env=env,
                                 capture_output=True, text=True, timeout=900)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        result = json.loads(resumed.stdout)  # Ray's own messages never reach stdout
        assert result["run"]["id"] == 1 and result["run"]["stats"]["already_stored"] == stored_at_kill
        in_flight = before_resume - stored_at_kill  # sent, not stored: these and only these are asked again
        paid_twice = sum(n - 1 for n in server.requests.values() if n > 1)
        assert len(server.requests) == 2 * pairs and paid_twice <= in_flight
        assert server.total == 2 * pairs + paid_twice
        print(f"ray kill -9: {stored_at_kill} stored at the kill, {at_kill} requests sent then, "
              f"{before_resume - at_kill} more after it, {paid_twice} paid twice", file=sys.stderr)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(driver.pid, signal.SIGKILL)  # what is left of the dead driver's cluster (its session)
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT COUNT(*), COUNT(DISTINCT item || '|' || first || '|' || second) FROM calls"
                           " WHERE error IS NULL").fetchone()
        assert rows == (2 * pairs, 2 * pairs)
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert con.execute("SELECT status FROM runs").fetchall() == [("done",)]
