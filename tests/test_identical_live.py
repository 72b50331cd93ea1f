"""The live identical-answer probe against a real HTTP judge server on 127.0.0.1 (OpenAI wire format)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge_server import JudgeServer, frame_answers
from runner_helpers import write_config, write_pairs
from swapjudge.cli import app
from swapjudge.config import load_config
from swapjudge.probes.identical_live import run_identical

runner = CliRunner()


def test_forced_choice_first_slot_judge_decides_every_identical_pair(tmp_path: Path) -> None:
    write_pairs(tmp_path, 10)
    with JudgeServer(policy="first") as server:
        result = run_identical(load_config(write_config(tmp_path, base_url=server.openai_url)))
        # every request showed the very same text in both slots
        for body in server.bodies:
            answers = frame_answers(body["messages"][1]["content"])
            assert answers is not None and answers[0] == answers[1]
    assert server.total == 20  # 10 items x 2 systems (good, bad), one call each
    d = result.to_dict()["identical"]
    assert (d["first"], d["second"], d["tie"], d["unparsed"]) == (20, 0, 0, 0)
    assert d["decided_rate"] == 1.0 and d["first_share"] == 1.0 and d["first_share_p_value"] < 1e-4
    assert {(r["item"], r["first"]) for r in result.records} == {(f"q{i:03d}", s) for i in range(10)
                                                                  for s in ("good", "bad")}


def test_a_judge_that_may_tie_ties_and_the_records_feed_analyze(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    write_pairs(tmp_path, 8)
    monkeypatch.chdir(tmp_path)
    with JudgeServer(policy="better") as server:
        write_config(tmp_path, base_url=server.openai_url, schema="allow_tie")
        out = runner.invoke(app, ["probe", "identical", "run.yaml", "--sample", "5", "-o", "probe.jsonl",
                                  "--format", "json"])
    assert out.exit_code == 0, out.output
    assert server.total == 5
    d = json.loads(out.stdout)
    assert d["calls"] == 5 and d["identical"]["tie"] == 5 and d["identical"]["decided_rate"] == 0.0
    analysis = runner.invoke(app, ["analyze", "probe.jsonl", "--format", "json"])
    assert json.loads(analysis.stdout)["identical"]["tie"] == 5
    # the sample is seeded: the same seed picks the same answers
    with JudgeServer(policy="better") as server:
        write_config(tmp_path, base_url=server.openai_url, schema="allow_tie")
        again = runner.invoke(app, ["probe", "identical", "run.yaml", "--sample", "5", "-o", "again.jsonl"])
    assert again.exit_code == 0
    keys = [[(json.loads(x)["item"], json.loads(x)["first"]) for x in Path(f).read_text().splitlines()]
            for f in ("probe.jsonl", "again.jsonl")]
    assert keys[0] == keys[1]


@pytest.mark.slow
def test_live_probe_through_the_local_backend(tmp_path: Path) -> None:
    """The embedded test model (SmolLM2-135M) judging byte-identical answers: what it does, counted."""
    write_pairs(tmp_path, 3)
    cfg = {"protocol": "pairwise", "orders": ["ab", "ba"], "schema": "forced_choice", "tie_policy": "half_credit",
           "judge": {"backend": "local", "model": "smollm2-135m-instruct-q4_1", "n_threads": 1,
                     "max_concurrency": 1, "timeout_s": 300},
           "pairs": {"path": "pairs.jsonl", "a": "good", "b": "bad"}, "store": "swapjudge.db"}
    (tmp_path / "run.yaml").write_text(json.dumps(cfg), encoding="utf-8")
    result = run_identical(load_config(tmp_path / "run.yaml"), sample=4)
    d = result.to_dict()["identical"]
    verdicts = [r["verdict"] for r in result.records]
    assert len(verdicts) == 4 and all(r["first"] == r["second"] for r in result.records)
    # the summary is exactly the stored verdicts, whatever the model chose
    assert (d["first"], d["second"], d["tie"], d["unparsed"]) == (
        verdicts.count("first"), verdicts.count("second"), verdicts.count("tie"), verdicts.count(None))
    # forced choice with log-probability verdicts: the judge always names a slot, so it always "decides"
    assert d["decided_rate"] == 1.0
