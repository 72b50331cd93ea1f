"""The batch path against a local fake of each provider's batch API (tests/batch_server.py): same calls, same
parser, same store as a synchronous run; split by limits; errored / expired / canceled requests resubmitted once;
--no-wait; offline request files; adaptive swapping in two waves; batch prices."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from batch_server import BatchServer
from judge_server import JudgeServer
from runner_helpers import stored_calls, write_config, write_pairs
from swapjudge.cli import app
from swapjudge.config import Price, load_config
from swapjudge.runner.batch.common import custom_id
from swapjudge.runner.pricing import batch_price, call_cost
from swapjudge.runner.session import run_session

N = 12
PRICES = {"judge-model": {"input": 2.0, "output": 8.0, "cached_input": 0.5, "cache_write": 2.5}}


def _config(tmp: Path, url: str, backend: str = "openai", **judge: Any) -> Path:
    write_pairs(tmp, N, identical=1)
    return write_config(tmp, backend=backend, base_url=url, prices=PRICES,
                        judge={"batch": True, "batch_poll_s": 0.01, **judge})


def _sync_calls(tmp: Path, backend: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The stored calls of the same run made synchronously, and the request bodies the server received."""
    sync_dir = tmp / "sync"
    sync_dir.mkdir()
    write_pairs(sync_dir, N, identical=1)
    with JudgeServer(policy="better") as server:
        url = server.anthropic_url if backend == "anthropic" else server.openai_url
        cfg = write_config(sync_dir, backend=backend, base_url=url, prices=PRICES)
        run_session(load_config(cfg), progress=False)
    return stored_calls(sync_dir / "swapjudge.db"), server.bodies


def _by_key(calls: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["item"], c["first"]): c for c in calls}


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_batch_run_stores_what_a_synchronous_run_stores_at_half_the_price(tmp_path: Path, backend: str) -> None:
    with BatchServer() as server:
        url = server.anthropic_url if backend == "anthropic" else server.openai_url
        outcome = run_session(load_config(_config(tmp_path, url, backend)), progress=False)
        assert server.created == 1 and server.paid_twice() == 0
        assert sum(server.received.values()) == 2 * (N - 1)  # the identical pair costs no call
        (only,) = server.batches.values()
        batch_bodies = [body for _, body in only["requests"]]
        if backend == "openai":  # the input file's lines and the batch's metadata, as documented
            lines = [json.loads(x) for x in server.files[only["input_file_id"]].splitlines()]
            assert {tuple(sorted(x)) for x in lines} == {("body", "custom_id", "method", "url")}
            assert list(only["metadata"]) == ["swapjudge_submission"]
            assert all(x["custom_id"].startswith(only["metadata"]["swapjudge_submission"] + "-") for x in lines)
        else:  # no batch metadata: the submission key starts every custom_id
            assert len({cid.rpartition("-")[0] for cid, _ in only["requests"]}) == 1
    assert outcome.complete and outcome.stats.made == 2 * (N - 1)
    batch = _by_key(stored_calls(tmp_path / "swapjudge.db"))
    sync_calls, sync_bodies = _sync_calls(tmp_path, backend)
    sync = _by_key(sync_calls)
    # The very request bodies the synchronous backend sends (model, prompt, settings, schema), one per call.
    canon = sorted(json.dumps(b, sort_keys=True) for b in batch_bodies)
    assert canon == sorted(json.dumps(b, sort_keys=True) for b in sync_bodies)
    assert batch.keys() == sync.keys() and len(batch) == 2 * N
    for key, s in sync.items():
        b = batch[key]
        assert (b["verdict"], b["prompt_hash"], b["input_tokens"], b["output_tokens"]) == (
            s["verdict"], s["prompt_hash"], s["input_tokens"], s["output_tokens"])
        if s["source"] == "api":
            # Billed at half the synchronous rates: every token class halved (Anthropic's cache reads too;
            # OpenAI's cached prompt tokens priced as plain batch input).
            cached = b["cached_input_tokens"] or 0
            rate_cached = 0.25 if backend == "anthropic" else 1.0
            expected = ((b["input_tokens"] - cached) * 1.0 + cached * rate_cached + b["output_tokens"] * 4.0) / 1e6
            assert b["cost_usd"] == pytest.approx(expected, rel=1e-12)
            assert json.loads(b["settings"])["batch"] == backend


def test_batch_price_halves_every_token_class() -> None:
    p = Price(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75)
    a = batch_price(p, "anthropic")
    assert a is not None and (a.input, a.output, a.cached_input, a.cache_write) == (1.5, 7.5, 0.15, 1.875)
    o = batch_price(p, "openai")
    assert o is not None and (o.input, o.output, o.cached_input) == (1.5, 7.5, None)
    # 1,000 prompt tokens, 400 of them read from the cache, 10 out: priced by hand.
    assert call_cost(a, input_tokens=1000, output_tokens=10, cached_input_tokens=400) == pytest.approx(
        (600 * 1.5 + 400 * 0.15 + 10 * 7.5) / 1e6)
    assert batch_price(p, "local") is None and batch_price(None, "openai") is None


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_a_batch_over_the_documented_limit_is_split(tmp_path: Path, backend: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from swapjudge.judges.anthropic_batch import AnthropicBatches
    from swapjudge.judges.openai_batch import OpenAIBatches

    cls = AnthropicBatches if backend == "anthropic" else OpenAIBatches
    monkeypatch.setattr(cls, "max_requests", 5)  # the fake server enforces the same limit and refuses more
    with BatchServer(max_requests=5) as server:
        url = server.anthropic_url if backend == "anthropic" else server.openai_url
        outcome = run_session(load_config(_config(tmp_path, url, backend)), progress=False)
        assert server.created == 5  # 22 requests, at most 5 each
        assert all(len(b["requests"]) <= 5 for b in server.batches.values())
        assert server.paid_twice() == 0
    assert outcome.complete and len(stored_calls(tmp_path / "swapjudge.db")) == 2 * N


def test_a_byte_limit_splits_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from swapjudge.judges.openai_batch import OpenAIBatches

    monkeypatch.setattr(OpenAIBatches, "max_bytes", 6000)
    with BatchServer(max_bytes=6000) as server:
        outcome = run_session(load_config(_config(tmp_path, server.openai_url)), progress=False)
        sizes = [len(server.files[b["input_file_id"]]) for b in server.batches.values()]
        assert server.created > 1 and max(sizes) <= 6000 and server.paid_twice() == 0
    assert outcome.complete


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
@pytest.mark.parametrize("kind", ["errored", "expired", "canceled"])
def test_failed_requests_are_resubmitted_once_in_a_follow_up_batch(tmp_path: Path, backend: str, kind: str) -> None:
    failed_once: set[str] = set()

    def outcome(cid: str) -> str | None:
        digest = cid.rpartition("-")[2]
        if int(digest, 16) % 3 == 0 and digest not in failed_once:
            failed_once.add(digest)
            return kind
        return None

    with BatchServer(outcome=outcome) as server:
        url = server.anthropic_url if backend == "anthropic" else server.openai_url
        result = run_session(load_config(_config(tmp_path, url, backend)), progress=False)
        assert failed_once and server.created == 2
        assert {d for d, n in server.received.items() if n == 2} == failed_once
        assert max(server.received.values()) == 2
    assert result.complete and result.stats.batch_failed_requests == len(failed_once)
    calls = stored_calls(tmp_path / "swapjudge.db")
    assert len(calls) == 2 * N and all(c["error"] is None for c in calls)


@pytest.mark.parametrize("end_as", ["expired", "canceled"])
def test_partial_results_of_an_expired_or_canceled_batch_are_kept(tmp_path: Path, end_as: str) -> None:
    with BatchServer(end_as=end_as) as server:
        result = run_session(load_config(_config(tmp_path, server.openai_url)), progress=False)
        first = server.batches[server.order[0]]
        kept = {cid for cid, kind, _ in first["results"] if kind == "succeeded"}
        assert 0 < len(kept) < len(first["requests"])
        # Only the unprocessed ones went into later batches.
        later = {cid.rpartition("-")[2] for b in server.order[1:] for cid, _ in server.batches[b]["requests"]}
        assert later.isdisjoint({cid.rpartition("-")[2] for cid in kept})
    assert result.complete and len(stored_calls(tmp_path / "swapjudge.db")) == 2 * N


def test_fallback_sync_makes_failed_requests_synchronously(tmp_path: Path) -> None:
    with BatchServer(outcome=lambda cid: "expired" if int(cid[-6:], 16) % 2 else None) as server:
        result = run_session(load_config(_config(tmp_path, server.openai_url, batch_fallback="sync")), progress=False)
        expired = sum(1 for b in server.batches.values() for _, k, _ in b["results"] if k == "expired")
        assert server.created == 1 and expired > 0 and server.sync_calls == expired
    calls = stored_calls(tmp_path / "swapjudge.db")
    assert result.complete and len(calls) == 2 * N and all(c["error"] is None for c in calls)


def _cli(tmp: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    src = str(Path(__file__).resolve().parents[2] / "src")  # this checkout's code, whatever the cwd
    return subprocess.run([sys.executable, "-m", "swapjudge", *args], cwd=tmp, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": src, **(env or {})}, timeout=120)


def _in_process(*args: str) -> Any:
    """The CLI in this process, for commands whose claim is their output, not a process of their own."""
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_no_wait_submits_and_exits_then_the_same_command_collects(tmp_path: Path) -> None:
    with BatchServer(polls_to_end=3) as server:
        cfg = _config(tmp_path, server.openai_url)
        first = _cli(tmp_path, "run", str(cfg), "--no-wait", "--no-progress")
        assert first.returncode == 0, first.stderr
        assert first.stdout.strip() == "submitted 22 requests in 1 batches; run the same command to collect"
        runs = _cli(tmp_path, "runs")
        assert "waiting" in runs.stdout and "batch_000001" in runs.stdout and "22 requests" in runs.stdout
        # batches off while the run's batches are out: refused in one line, nothing asked, the batches kept
        unbatched = _config(tmp_path, server.openai_url, batch=False)
        refused = _in_process("run", str(unbatched), "--no-progress")
        assert refused.exit_code == 2
        assert "run 1 has 22 requests in 1 provider batch(es) not yet collected" in refused.output
        assert server.created == 1 and server.sync_calls == 0
        cfg = _config(tmp_path, server.openai_url)
        again = _cli(tmp_path, "run", str(cfg), "--no-progress", "--format", "json")
        assert again.returncode == 0, again.stderr
        assert server.created == 1 and server.paid_twice() == 0
        assert json.loads(again.stdout)["run"]["id"] == 1
    runs_json = json.loads(_cli(tmp_path, "runs", "--format", "json").stdout)
    assert runs_json[0]["status"] == "done" and runs_json[0]["batches"][0]["status"] == "collected"


def test_adaptive_swapping_in_two_waves_matches_the_synchronous_adaptive_run(tmp_path: Path) -> None:
    # The fake judge gives the verdict's label P = 0.8: below 0.9 every swap is made, below 0.75 none.
    for threshold, waves in ((0.9, 2), (0.75, 1)):
        d = tmp_path / str(threshold)
        d.mkdir()
        write_pairs(d, N)
        with BatchServer() as server:
            cfg = write_config(d, base_url=server.openai_url, adaptive_swap=threshold,
                               judge={"batch": True, "batch_poll_s": 0.01, "logprobs": True})
            out = run_session(load_config(cfg), progress=False)
            assert server.created == waves and server.paid_twice() == 0
        s = tmp_path / f"sync{threshold}"
        s.mkdir()
        write_pairs(s, N)
        with JudgeServer() as sync_server:
            scfg = write_config(s, base_url=sync_server.openai_url, adaptive_swap=threshold,
                                judge={"logprobs": True})
            sync_out = run_session(load_config(scfg), progress=False)
        assert out.stats.adaptive_skipped == sync_out.stats.adaptive_skipped == (0 if waves == 2 else N)
        got = {(c["item"], c["first"], c["verdict"], c["probabilities"]) for c in stored_calls(d / "swapjudge.db")}
        want = {(c["item"], c["first"], c["verdict"], c["probabilities"]) for c in stored_calls(s / "swapjudge.db")}
        assert got == want


def _engine_stand_in(directory: Path) -> int:
    """A stand-in for `vllm run_batch`: reads each request file, writes output lines in the batch output format
    (answering through the fake judge's decision rule)."""
    judge = JudgeServer()
    n = 0
    for req in sorted(directory.glob("swapjudge-*.requests.jsonl")):
        out = req.with_name(req.name.replace(".requests.", ".output."))
        if out.exists():
            continue
        lines = []
        for raw in req.read_text().splitlines():
            r = json.loads(raw)
            assert r["method"] == "POST" and r["url"] == "/v1/chat/completions"
            _, _, body = judge.handle(r["url"], r["body"], "")
            lines.append(json.dumps({"id": f"vllm-{n}", "custom_id": r["custom_id"], "response": {
                "status_code": 200, "request_id": f"vllm-batch-{n}", "body": json.loads(body)}, "error": None}))
            n += 1
        out.write_text("\n".join(lines) + "\n")
    return n


def test_offline_engine_files_round_trip(tmp_path: Path) -> None:
    write_pairs(tmp_path, N)
    cfg = write_config(tmp_path, base_url="http://127.0.0.1:9/v1",
                       judge={"batch": "files", "batch_dir": "batches"})
    first = _cli(tmp_path, "run", str(cfg), "--no-progress")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "waiting for 24 requests in 1 batches; run the same command to collect"
    again = _cli(tmp_path, "run", str(cfg), "--no-progress")  # no output yet: nothing written twice
    assert again.returncode == 0 and len(list((tmp_path / "batches").glob("*.requests.jsonl"))) == 1
    assert _engine_stand_in(tmp_path / "batches") == 2 * N
    done = _cli(tmp_path, "run", str(cfg), "--no-progress", "--format", "json")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["run"]["stats"]["made"] == 2 * N
    calls = stored_calls(tmp_path / "swapjudge.db")
    assert len(calls) == 2 * N and Counter(c["verdict"] for c in calls) == Counter({"first": N, "second": N})


def test_custom_id_fits_anthropic_pattern_and_names_the_call() -> None:
    import re

    cid = custom_id("sj0123456789abcd", (0, "an item / with spaces?", "good", "bad"))
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", cid) and cid.startswith("sj0123456789abcd-")
    assert cid != custom_id("sj0123456789abcd", (0, "an item / with spaces?", "bad", "good"))


def test_a_schema_2_store_gains_the_batch_tables(tmp_path: Path) -> None:
    from swapjudge.store import SCHEMA_VERSION, Store

    db = tmp_path / "old.db"
    Store(db).close()
    con = sqlite3.connect(db)
    con.execute("DROP TABLE batch_requests")
    con.execute("DROP TABLE batch_submissions")
    con.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    con.commit()
    con.close()
    with Store(db) as st:
        assert st.submissions() == []
    con = sqlite3.connect(db)
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == SCHEMA_VERSION == "4"
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"batch_submissions", "batch_requests"} <= tables


def test_batch_is_refused_for_other_backends(tmp_path: Path) -> None:
    write_pairs(tmp_path, 2)
    (tmp_path / "r.jsonl").write_text("")
    cfg = write_config(tmp_path, backend="replay", base_url="x", judge={"batch": True, "path": "r.jsonl"})
    out = _in_process("run", str(cfg))
    assert out.exit_code == 2 and "Traceback" not in out.stderr
    assert "`batch` is for the openai and anthropic backends" in out.stderr


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_dry_run_on_1000_pairs_prints_three_costs(tmp_path: Path, backend: str) -> None:
    from swapjudge.runner.dry_run import estimate

    write_pairs(tmp_path, 1000)
    # a rubric long enough for the shared prefix to reach both providers' minimum cacheable length
    cfg = write_config(tmp_path, backend=backend, base_url="http://127.0.0.1:9", prices=PRICES,
                       rubric="Prefer the answer that is correct and complete. " * 120)
    est = estimate(load_config(cfg))
    assert est.calls_to_make == 2000
    assert est.shared_prefix_tokens >= 1024
    # Independently: the batch price is half of every rate, so the uncached batch cost is half the list cost.
    list_cost = (est.input_tokens * 2.0 + est.output_tokens * 8.0) / 1e6
    assert est.batch_cost_usd == pytest.approx(list_cost / 2, rel=1e-12)
    saving = est.shared_prefix_tokens * 1999 * (2.0 - 0.5) / 1e6  # the synchronous prompt-cache saving
    assert est.cost_usd == pytest.approx(list_cost - saving, rel=1e-12)
    expected_cached = list_cost / 2 - saving / 2 if backend == "anthropic" else list_cost / 2
    assert est.batch_cached_cost_usd == pytest.approx(expected_cached, rel=1e-12)
    out = _in_process("run", str(cfg), "--dry-run")
    assert out.exit_code == 0, out.stderr
    lines = out.stdout.splitlines()
    i = next(n for n, x in enumerate(lines) if "three ways" in x)
    assert lines[i + 1].split() == ["synchronous,", "with", "prompt", "caching:", f"${est.cost_usd:,.4f}"]
    assert lines[i + 2].split() == ["batch,", "no", "prompt", "caching:", f"${est.batch_cost_usd:,.4f}"]
    assert lines[i + 3].split() == ["batch", "with", "prompt", "caching:", f"${est.batch_cached_cost_usd:,.4f}"]
    print("\n".join(lines[i:i + 4]))


class _Crash(BaseException):
    """Stands in for a kill at a step (in-process): nothing after the step runs, nothing is cleaned up."""


def test_anthropic_resume_adopts_its_own_batch_not_another_runs_batch_of_the_same_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import swapjudge.runner.batch.engine as engine  # where the batch path's fault points are placed
    from swapjudge.store import Store

    other, mine = tmp_path / "other", tmp_path / "mine"
    other.mkdir()
    mine.mkdir()
    with BatchServer() as server:
        run_session(load_config(_config(other, server.anthropic_url, "anthropic")), progress=False)  # a foreign batch
        cfg = load_config(_config(mine, server.anthropic_url, "anthropic"))

        def crash_after_create(step: str) -> None:
            if step == "after_create":
                raise _Crash

        monkeypatch.setattr(engine, "fault_point", crash_after_create)
        with pytest.raises(_Crash):
            run_session(cfg, progress=False)
        monkeypatch.undo()
        with Store(mine / "swapjudge.db") as st:
            (sub,) = st.submissions()
            assert sub.status == "planned" and sub.batch_id is None  # created at the provider, unknown here
        outcome = run_session(cfg, progress=False)
        assert server.created == 2  # the foreign batch and ours, nothing resubmitted
        with Store(mine / "swapjudge.db") as st:
            (sub,) = st.submissions()
        assert sub.batch_id == server.order[1] and sub.status == "collected"
    assert outcome.complete and len(stored_calls(mine / "swapjudge.db")) == 2 * N


def test_dry_run_batch_with_caching_saves_nothing_below_the_minimum_prefix(tmp_path: Path) -> None:
    from swapjudge.runner.dry_run import estimate

    write_pairs(tmp_path, 50)
    cfg = write_config(tmp_path, backend="anthropic", base_url="http://127.0.0.1:9", prices=PRICES)
    est = estimate(load_config(cfg))
    assert est.prompt_cache_min_tokens is not None and est.shared_prefix_tokens < est.prompt_cache_min_tokens
    # a prefix the provider will not cache saves nothing, synchronous or batch
    assert est.batch_cost_usd is not None and est.batch_cached_cost_usd == est.batch_cost_usd
