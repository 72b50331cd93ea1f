"""The live identical-answer probe against a real HTTP judge server on 127.0.0.1 (OpenAI wire format)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge_server import JudgeServer, frame_answers, frame_code, frame_text
from runner_helpers import write_config, write_pairs
from swapjudge.cli import app
from swapjudge.config import load_config
from swapjudge.runner.backend import build_judge, resolved_judge_config
from swapjudge.runner.identical_probe import IdenticalProbeSession, run_identical
from swapjudge.runner.session import run_async

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


async def _run_with_probe(cfg_path: Path, sample: int) -> tuple[object, object, int]:
    loaded = load_config(cfg_path)
    judge = build_judge(resolved_judge_config(loaded))
    try:
        session = IdenticalProbeSession(loaded, judge, sample=sample)
        outcome = await run_async(loaded, judge=judge, progress=False, after_call=session.after_call)
        alongside = len(session.records)
        return outcome, await session.finish(), alongside
    finally:
        await judge.aclose()


def test_probe_calls_follow_the_run_call_that_shares_their_prefix(tmp_path: Path) -> None:
    """Interleaved with a run, each probe call comes right after the call showing its answer in slot 1 of the
    same item, framed by the same code word; the verdicts equal the probe made on its own."""
    import asyncio

    write_pairs(tmp_path, 10)
    with JudgeServer(policy="first") as server:
        cfg = write_config(tmp_path, base_url=server.openai_url, judge={"max_concurrency": 1})
        outcome, probe, alongside = asyncio.run(_run_with_probe(cfg, sample=6))
        users = [body["messages"][1]["content"] for body in server.bodies]
    assert server.total == 20 + 6 and alongside == 6 and outcome.complete  # type: ignore[attr-defined]
    probes = [i for i, u in enumerate(users) if (a := frame_answers(u)) is not None and a[0] == a[1]]
    assert len(probes) == 6
    for i in probes:
        before, probe_user = users[i - 1], users[i]
        pair_answers, answer = frame_answers(before), frame_answers(probe_user)
        assert pair_answers is not None and answer is not None and pair_answers[0] != pair_answers[1]
        assert pair_answers[0] == answer[0] and frame_text(before, "task") == frame_text(probe_user, "task")
        assert frame_code(before) == frame_code(probe_user)
        # so the probe's prompt starts as the pair's does, through the answer in slot 1
        shared = before[: before.index("</answer A")]
        assert probe_user.startswith(shared)
    with JudgeServer(policy="first") as server:
        alone = run_identical(load_config(write_config(tmp_path, base_url=server.openai_url)), sample=6)
    key = [(r["item"], r["first"], r["verdict"]) for r in alone.records]
    assert [(r["item"], r["first"], r["verdict"]) for r in probe.records] == key  # type: ignore[attr-defined]


def _local_run_config(tmp_path: Path) -> Path:
    """3 pairs judged by the embedded test model (SmolLM2-135M), one call at a time."""
    write_pairs(tmp_path, 3)
    cfg = {"protocol": "pairwise", "orders": ["ab", "ba"], "schema": "forced_choice", "tie_policy": "half_credit",
           "judge": {"backend": "local", "model": "smollm2-135m-instruct-q4_1", "n_threads": 1,
                     "max_concurrency": 1, "timeout_s": 300},
           "pairs": {"path": "pairs.jsonl", "a": "good", "b": "bad"}, "store": "swapjudge.db"}
    (tmp_path / "run.yaml").write_text(json.dumps(cfg), encoding="utf-8")
    return tmp_path / "run.yaml"


@pytest.mark.slow
def test_live_probe_through_the_local_backend(tmp_path: Path) -> None:
    """The embedded test model (SmolLM2-135M) judging byte-identical answers: what it does, counted."""
    _local_run_config(tmp_path)
    # two identical-answer calls (each ~250 prompt tokens on one thread): the claims are per call, not a rate
    result = run_identical(load_config(tmp_path / "run.yaml"), sample=2)
    d = result.to_dict()["identical"]
    verdicts = [r["verdict"] for r in result.records]
    assert len(verdicts) == 2 and all(r["first"] == r["second"] for r in result.records)
    # the summary is exactly the stored verdicts, whatever the model chose
    assert (d["first"], d["second"], d["tie"], d["unparsed"]) == (
        verdicts.count("first"), verdicts.count("second"), verdicts.count("tie"), verdicts.count(None))
    # forced choice with log-probability verdicts: the judge always names a slot, so it always "decides"
    assert d["decided_rate"] == 1.0


@pytest.mark.slow
def test_probe_alongside_a_local_run_reuses_the_kv_cache(tmp_path: Path) -> None:
    """With the embedded test model: a probe call made right after its pair's call evaluates only what follows
    the shared answer (more tokens from the KV cache than the same call made on its own), same verdicts."""
    import asyncio

    _local_run_config(tmp_path)
    # two probe calls each way: the comparison is made call by call
    _, probe, alongside = asyncio.run(_run_with_probe(tmp_path / "run.yaml", sample=2))
    alone = run_identical(load_config(tmp_path / "run.yaml"), sample=2)
    assert alongside == 2
    together, apart = probe.records, alone.records  # type: ignore[attr-defined]
    assert [r["verdict"] for r in together] == [r["verdict"] for r in apart]
    assert [r["input_tokens"] for r in together] == [r["input_tokens"] for r in apart]
    for t, a in zip(together, apart, strict=True):
        assert t["cached_input_tokens"] > a["cached_input_tokens"], (t, a)
