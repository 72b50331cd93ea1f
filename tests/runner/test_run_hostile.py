"""`swapjudge run` as a hostile, careful user tries it, through the CLI against real HTTP servers on 127.0.0.1:
keys echoed in error bodies, a dead server, a trailing slash, Retry-After, unparsable replies, printed commands."""

from __future__ import annotations

import json
import socket
import sqlite3
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge_server import JudgeServer
from runner_helpers import stored_calls, write_config, write_pairs
from swapjudge.cli import app

runner = CliRunner()


def _invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str):  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    return runner.invoke(app, list(args), catch_exceptions=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_a_key_echoed_in_an_error_body_appears_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    secret = "TESTSECRET-987654321-abcdef"  # not shaped like a provider key: only the configured value finds it
    monkeypatch.setenv("JUDGE_KEY", secret)
    write_pairs(tmp_path, 6)
    with JudgeServer(policy="better", faults=lambda user, attempt: "echo400" if "Question 1:" in user else None) as srv:
        url = srv.openai_url if backend == "openai" else srv.anthropic_url
        write_config(tmp_path, backend=backend, base_url=url, judge={"api_key_env": "JUDGE_KEY"})
        outputs = [
            _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress"),
            _invoke(tmp_path, monkeypatch, "runs"),
            _invoke(tmp_path, monkeypatch, "export", "1", "-o", "e.jsonl"),
            _invoke(tmp_path, monkeypatch, "export", "1", "-o", "e.csv"),
            _invoke(tmp_path, monkeypatch, "report", "e.jsonl", "--html", "report.html", "--markdown", "report.md"),
            _invoke(tmp_path, monkeypatch, "report", "swapjudge.db", "--html", "store.html"),
        ]
        assert any(secret in h for h in srv.auth_headers)  # the key was sent, and echoed back
    assert outputs[0].exit_code == 2  # the two calls of item q001 failed with the 400
    errors = [c["error"] for c in stored_calls(tmp_path / "swapjudge.db") if c["error"]]
    assert len(errors) == 2 and all("HTTP 400" in e and "[redacted]" in e for e in errors)
    for res in outputs:
        assert secret not in res.stdout + res.stderr
    files = [f for f in tmp_path.iterdir() if f.is_file()]
    assert {"swapjudge.db", "e.jsonl", "e.csv", "report.html", "report.md", "store.html"} <= {f.name for f in files}
    for f in files:
        assert secret.encode() not in f.read_bytes(), f.name


def test_redact_removes_configured_keys_and_credential_shapes() -> None:
    from swapjudge.redact import redact, register_secret

    register_secret("plain-configured-value-42")
    text = ('{"headers": {"Authorization": "Bearer abc.DEF-123_xyz", "x-api-key": "k-998877665544"}} '
            "key=sk-ant-api03-AAAABBBBCCCC, and plain-configured-value-42 again; api_key: hunter2hunter2")
    out = redact(text)
    for leaked in ("abc.DEF-123_xyz", "k-998877665544", "sk-ant-api03-AAAABBBBCCCC", "plain-configured-value-42",
                   "hunter2hunter2"):
        assert leaked not in out
    assert out.count("[redacted]") == 5
    assert redact("HTTP 400: the model gpt-4o does not exist") == "HTTP 400: the model gpt-4o does not exist"


def test_a_dead_server_stops_the_run_in_seconds_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_pairs(tmp_path, 40)  # 80 calls
    url = f"http://127.0.0.1:{_free_port()}/v1"
    # The retry settings a user would have: 5 retries, backoff from 1 s (a dead server cost 129 s with them).
    write_config(tmp_path, base_url=url, judge={"backoff_s": 1.0, "max_backoff_s": 60, "max_retries": 5})
    started = time.monotonic()
    result = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress")
    elapsed = time.monotonic() - started
    assert result.exit_code == 2 and elapsed < 5.0
    assert result.stderr.strip().splitlines() == [
        f"error: cannot reach {url} (connection refused): is the server running?"]
    assert result.stdout == "" and not list(tmp_path.glob("*.analysis.json"))  # no empty audit
    checked = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--check")
    assert checked.exit_code == 2 and f"cannot reach {url} (connection refused)" in checked.stderr


def test_a_host_that_does_not_resolve_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_pairs(tmp_path, 4)
    write_config(tmp_path, base_url="http://no-such-host.invalid/v1", judge={"backoff_s": 1.0})
    result = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress")
    assert result.exit_code == 2
    assert "cannot reach http://no-such-host.invalid/v1 (DNS lookup failed)" in result.stderr


def test_check_proves_server_key_and_model_and_stores_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_pairs(tmp_path, 5)
    with JudgeServer(policy="better") as server:
        write_config(tmp_path, base_url=server.openai_url)
        ok = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--check")
        assert ok.exit_code == 0, ok.stderr
        assert f"check: {server.openai_url} answered model judge-model" in ok.stdout and server.total == 1
        assert not (tmp_path / "swapjudge.db").exists()
    with JudgeServer(policy="better", faults=lambda user, attempt: "401") as server:
        write_config(tmp_path, base_url=server.openai_url)
        bad = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--check")
        assert bad.exit_code == 2 and "check failed: openai: HTTP 401" in bad.stderr


def test_timeouts_and_5xx_are_still_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_pairs(tmp_path, 4)
    with JudgeServer(policy="better", faults=lambda user, attempt: "500" if attempt == 1 else None) as server:
        write_config(tmp_path, base_url=server.openai_url)
        result = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress")
        assert result.exit_code == 0, result.stderr
        assert server.total == 16  # each of the 8 calls: one 500, one success


def test_trailing_slash_is_the_same_judge_and_the_same_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_pairs(tmp_path, 6)
    with JudgeServer(policy="better") as server:
        write_config(tmp_path, base_url=server.openai_url)
        assert _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress").exit_code == 0
        paid = server.total
        write_config(tmp_path, base_url=server.openai_url + "/", name="slash.yaml")
        again = _invoke(tmp_path, monkeypatch, "run", "slash.yaml", "--no-progress")
        assert again.exit_code == 0 and server.total == paid == 12
        assert "12 from cache, 0 made" in again.stderr


def test_retry_after_is_capped_said_and_a_huge_one_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_pairs(tmp_path, 2)
    with JudgeServer(policy="better", faults=lambda user, attempt: "429" if attempt == 1 else None) as server:
        server.retry_after = "30"
        write_config(tmp_path, base_url=server.openai_url, judge={"max_backoff_s": 0.3})
        started = time.monotonic()
        result = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress")
        assert result.exit_code == 0, result.stderr
        assert time.monotonic() - started < 10  # capped at 0.3 s, not the 30 s asked
        assert "waiting 0.3 s as the server asks (openai: HTTP 429: Retry-After 30 s, capped at max_backoff_s" \
            in result.stderr
    with JudgeServer(policy="better", faults=lambda user, attempt: "429" if attempt == 1 else None) as server:
        server.retry_after = "86400"
        write_config(tmp_path, base_url=server.openai_url, store="day.db")
        started = time.monotonic()
        stopped = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress")
        assert stopped.exit_code == 2 and time.monotonic() - started < 10
        assert "the server asks to wait 86,400 s" in stopped.stderr and "max_retry_after_s = 600" in stopped.stderr
        assert "run the same command again later to resume" in stopped.stderr
        status = sqlite3.connect(tmp_path / "day.db").execute("SELECT status FROM runs").fetchall()
        assert status == [("incomplete",)]
        # Once the provider lets us, the same command resumes and makes only what is missing.
        server.retry_after = "0"
        resumed = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress")
        assert resumed.exit_code == 0 and "(resumed)" in resumed.stderr


def test_retry_unparsed_asks_again_for_exactly_those_and_keeps_the_old_replies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_pairs(tmp_path, 6)
    broken = {"on": True}

    def faults(user: str, attempt: int) -> str | None:
        return "garbage_always" if broken["on"] and "Question 2:" in user else None

    with JudgeServer(policy="better", faults=faults) as server:
        write_config(tmp_path, base_url=server.openai_url, judge={"structured_output": False})
        first = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress")
        assert "2 stored call(s) have no parsable verdict" in first.stderr
        assert "swapjudge run run.yaml --no-progress --retry-unparsed" in first.stderr
        paid = server.total
        again = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress")
        assert server.total == paid  # a plain rerun serves the unparsable replies from the cache
        assert "2 stored call(s) have no parsable verdict" in again.stderr
        broken["on"] = False
        retried = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress", "--retry-unparsed")
        assert retried.exit_code == 0, retried.stderr
        assert server.total == paid + 2  # exactly the two unparsable calls, asked once each
        assert "no parsable verdict" not in retried.stderr
    db = tmp_path / "swapjudge.db"
    run_id = sqlite3.connect(db).execute("SELECT MAX(run_id) FROM calls").fetchone()[0]
    calls = stored_calls(db, run_id)
    assert len(calls) == 12 and all(c["verdict"] is not None for c in calls)
    old = sqlite3.connect(db).execute("SELECT item, raw FROM superseded_calls").fetchall()
    assert len(old) == 2 and {i for i, _ in old} == {"q002"} and all("[follow-up]" in raw for _, raw in old)


def test_printed_commands_keep_the_options_and_two_stores_keep_their_analyses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_pairs(tmp_path, 4)
    with JudgeServer(policy="better", faults=lambda user, attempt: "echo400" if "Question 1:" in user else None) as s:
        write_config(tmp_path, base_url=s.openai_url)
        first = _invoke(tmp_path, monkeypatch, "run", "./run.yaml", "--store", "./out/../one.db", "--no-progress",
                        "--format", "json")
        second = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--store", "two.db", "--no-progress")
    assert first.exit_code == 2
    assert "retry only those: swapjudge run run.yaml --store one.db --no-progress --format json" in first.stderr
    assert "analysis written to one-run-1.analysis.json" in first.stderr
    assert json.loads((tmp_path / "one-run-1.analysis.json").read_text())["run"]["store"] == "one.db"
    assert json.loads((tmp_path / "two-run-1.analysis.json").read_text())["run"]["store"] == "two.db"
    assert second.exit_code == 2


@pytest.mark.parametrize(("backend", "model", "minimum"), [
    ("openai", "gpt-4o-mini", 1024), ("anthropic", "claude-sonnet-4-5", 1024), ("anthropic", "claude-3-5-haiku", 2048),
    ("anthropic", "claude-haiku-4-5", 4096),
])
def test_dry_run_applies_each_providers_minimum_cacheable_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str, model: str, minimum: int
) -> None:
    from swapjudge.config import load_config
    from swapjudge.runner.plan import CHARS_PER_TOKEN, expected_output_tokens
    from swapjudge.runner.pricing import DEFAULT_PRICES, call_cost
    from swapjudge.runner.session import prepare

    write_pairs(tmp_path, 10)
    for rubric, name in (("Prefer the correct answer.", "short"), ("Prefer the correct answer. " * 700, "long")):
        cfg = write_config(tmp_path, backend=backend, base_url="http://127.0.0.1:9", judge={"model": model},
                           rubric=rubric, name=f"{name}.yaml")
        dry = _invoke(tmp_path, monkeypatch, "run", f"{name}.yaml", "--dry-run")
        assert dry.exit_code == 0, dry.stderr
        out = " ".join(dry.stdout.split())  # the terminal may wrap long lines
        prefix = len(load_config(cfg).rubric_text or "")  # the shared prefix holds the rubric and the layout
        # The undiscounted cost, computed independently from the planned prompts (~4 characters per token).
        _, plan = prepare(load_config(cfg))
        tokens_in = int(sum((len(c.request.system) + len(c.request.user)) / CHARS_PER_TOKEN for c in plan.calls))
        tokens_out = sum(expected_output_tokens(c.request) for c in plan.calls)
        full = call_cost(DEFAULT_PRICES[model], input_tokens=tokens_in, output_tokens=tokens_out)
        assert full is not None
        system_tokens = int(len(plan.calls[0].request.system) / CHARS_PER_TOKEN)
        if system_tokens < minimum:
            assert f"estimated cost ({model}): ${full:,.4f}" in out
            assert (f"prompt caching saves nothing: the shared prefix (~{system_tokens:,} tokens) is shorter than "
                    f"the provider's minimum cacheable length ({minimum:,} tokens") in out
        else:
            assert name == "long" and prefix > 4 * minimum - 2000
            price = DEFAULT_PRICES[model]
            assert price.cached_input is not None
            saving = system_tokens * (len(plan.calls) - 1) * (price.input - price.cached_input) / 1e6
            assert f"estimated cost ({model}): ${full - saving:,.4f}" in out
            assert f"of which prompt caching saves: ${saving:,.4f}" in out
