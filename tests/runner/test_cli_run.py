"""`swapjudge run`, `runs`, `export` through the CLI, against a real HTTP judge server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from judge_server import JudgeServer
from runner_helpers import write_config, write_pairs
from swapjudge.cli import app

runner = CliRunner()


def _invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str):  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_first_slot_judge_fails_the_gate_with_consistency_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_pairs(tmp_path, 12)
    with JudgeServer(policy="first") as server:
        write_config(tmp_path, base_url=server.openai_url)
        result = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress", "--format", "json")
    assert result.exit_code == 1
    out = json.loads(result.stdout)
    assert out["consistency"]["rate"] == 0.0 and out["flip_direction"]["first"] == 12
    assert out["flip_direction"]["second"] == 0 and out["flip_direction"]["p_value"] < 0.01
    assert out["gate"]["passed"] is False and out["win_rate"] is None
    assert out["accuracy"]["better_first"] == 1.0 and out["accuracy"]["better_second"] == 0.0
    written = json.loads((tmp_path / "swapjudge-run-1.analysis.json").read_text())
    assert written["consistency"] == out["consistency"] and written["run"]["id"] == 1


def test_better_answer_judge_is_consistent_and_export_roundtrips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_pairs(tmp_path, 12)
    with JudgeServer(policy="better") as server:
        write_config(tmp_path, base_url=server.openai_url)
        result = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress", "--format", "json")
        assert result.exit_code == 0, result.stderr
        out = json.loads(result.stdout)
        assert out["consistency"]["rate"] == 1.0 and out["systems"] == {"a": "good", "b": "bad"}
        assert out["win_rate"]["value"] == 1.0 and out["accuracy"]["both"] == 1.0
        for name, given in (("out.jsonl", []), ("out.csv", []), ("out.parquet", []),
                            ("formatted.parquet", ["--format", "parquet"])):
            exp = _invoke(tmp_path, monkeypatch, "export", "--latest", "-o", name, *given)
            assert exp.exit_code == 0
            again = json.loads(_invoke(tmp_path, monkeypatch, "analyze", name, "--format", "json").stdout)
            # the same analysis, the same way round ("bad" < "good": without the registration, bad would be a)
            assert again["consistency"] == out["consistency"] and again["systems"] == out["systems"]
            assert again["win_rate"] == out["win_rate"]
        rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
        assert pl.read_parquet(tmp_path / "out.parquet").to_dicts() == rows
        mismatch = _invoke(tmp_path, monkeypatch, "export", "--latest", "-o", "x.jsonl", "--format", "parquet")
        assert mismatch.exit_code == 2 and "--format parquet writes a .parquet file" in mismatch.stderr
        assert not (tmp_path / "x.jsonl").exists()
        assert len(rows) == 24 and {r["label"] for r in rows} == {"good"}
        assert {r["registered_tie_policy"] for r in rows} == {"half_credit"}
        assert {(r["registered_a"], r["registered_b"]) for r in rows} == {("good", "bad")}
        listing = _invoke(tmp_path, monkeypatch, "runs", "--format", "json")
        runs = json.loads(listing.stdout)
        assert [(r["id"], r["status"], r["stored_calls"]) for r in runs] == [(1, "done", 24)]
        # The replay backend reads the exported records as the judge: same verdicts, no HTTP call.
        before = server.total
        write_config(
            tmp_path,
            base_url=server.openai_url,
            name="replay.yaml",
            store="replay.db",
            judge={"backend": "replay", "path": "out.jsonl", "model": None, "base_url": None},
        )
        rep = _invoke(tmp_path, monkeypatch, "run", "replay.yaml", "--no-progress", "--format", "json")
        assert rep.exit_code == 0, rep.stderr
        assert server.total == before and json.loads(rep.stdout)["consistency"]["rate"] == 1.0


def test_dry_run_and_cached_rerun(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_pairs(tmp_path, 10)
    with JudgeServer() as server:
        write_config(tmp_path, base_url=server.openai_url, judge={"model": "gpt-4o-mini"})
        dry = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--dry-run")
        assert dry.exit_code == 0 and server.total == 0
        assert "calls to make:                                 20" in dry.stdout
        assert "estimated cost (gpt-4o-mini): $" in dry.stdout and "prompt caching saves" in dry.stdout
        first = _invoke(tmp_path, monkeypatch, "run", "run.yaml")
        assert first.exit_code == 0 and server.total == 20
        # Not a terminal: progress comes as plain lines, one per tenth of the calls (every 2 of 20 here) and the last.
        lines = [line for line in first.stderr.splitlines() if line.startswith("  judging: ")]
        assert [line.split()[1] for line in lines] == [*(f"{n}/20" for n in range(1, 21, 2)), "20/20"]
        rerun = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress")
        assert rerun.exit_code == 0 and server.total == 20
        assert "20 from cache, 0 made" in rerun.stderr
        dry2 = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--dry-run")
        assert "calls to make:                                 0" in dry2.stdout


def test_bad_config_is_one_line_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_pairs(tmp_path, 2)
    write_config(tmp_path, base_url="http://127.0.0.1:9/v1", tie_policy="coin")
    result = _invoke(tmp_path, monkeypatch, "run", "run.yaml")
    assert result.exit_code == 2
    # the file, the key's line and the key
    assert re.search(r"run\.yaml:\d+: key `tie_policy`", result.stderr) and len(result.stderr.strip().splitlines()) == 1
    missing = _invoke(tmp_path, monkeypatch, "export", "--latest", "-o", "x.jsonl", "--store", "nope.db")
    assert missing.exit_code == 2 and "no run store here" in missing.stderr


def test_hosted_openai_without_key_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    write_pairs(tmp_path, 2)
    write_config(tmp_path, base_url=None)  # type: ignore[arg-type]
    result = _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress")
    assert result.exit_code == 2 and "set the environment variable OPENAI_API_KEY" in result.stderr


def test_secret_appears_nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-proj-TESTSECRET-987654321"
    monkeypatch.setenv("SERVER_KEY", secret)  # a server other than the provider's gets the key it is named
    write_pairs(tmp_path, 6)
    with JudgeServer(policy="first") as server:
        write_config(tmp_path, base_url=server.openai_url, judge={"api_key_env": "SERVER_KEY"})
        outputs = [
            _invoke(tmp_path, monkeypatch, "run", "run.yaml", "--no-progress"),
            _invoke(tmp_path, monkeypatch, "runs"),
            _invoke(tmp_path, monkeypatch, "export", "1", "-o", "e.jsonl"),
        ]
        assert server.auth_headers and all(h == f"Bearer {secret}" for h in server.auth_headers)
    for res in outputs:
        assert secret not in res.stdout + res.stderr
    for f in tmp_path.iterdir():
        assert secret.encode() not in f.read_bytes(), f.name
