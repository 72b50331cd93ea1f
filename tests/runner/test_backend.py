"""One way to each provider: every command builds its judge in runner/backend.py and every provider client in the
provider's `judges/` module, so a configuration means the same judge (key variable, base URL, checks) whichever
command reads it; the replay backend's records are read by the runner, not by `judges/`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from conftest import write_jsonl
from runner_helpers import write_config, write_pairs
from swapjudge.cli import app
from swapjudge.config import load_config
from swapjudge.drift.anchors import Level, Scale
from swapjudge.errors import ConfigError
from swapjudge.judges.base import JudgeRequest
from swapjudge.judges.prompts import render_request
from swapjudge.runner.backend import open_judge, replay_verdicts
from swapjudge.runner.batch.engine import body_judge, make_provider
from swapjudge.runner.scoring import score_items

SCALE = Scale((Level(1, "bad"), Level(2, "fair"), Level(3, "good")))


def _request(item: str, first: str, second: str) -> JudgeRequest:
    return render_request(task="t", first="x", second="y", rubric=None, allow_tie=True, chain_of_thought=False,
                          structured=False, metadata={"item": item, "first": first, "second": second, "round": 0})


def test_the_replay_backend_answers_from_the_records_the_runner_read(tmp_path: Path) -> None:
    rows = [{"judge": judge, "item": "q1", "first": a, "second": b, "verdict": v, "raw": f"{judge} says {v}"}
            for judge, flip in (("j1", False), ("j2", True))
            for a, b, v in (("a", "b", "second" if flip else "first"), ("b", "a", "second"))]
    records = write_jsonl(tmp_path / "judge.jsonl", rows)
    with pytest.raises(ConfigError, match=r"holds several judges \(j1, j2\); set judge.replay_judge"):
        replay_verdicts(records, None)
    with pytest.raises(ConfigError, match="no records of judge 'j3'"):
        replay_verdicts(records, "j3")
    # (verdict, raw, strength): these records carry no strength
    assert replay_verdicts(records, "j2") == {(0, "q1", "a", "b"): ("second", "j2 says second", None),
                                               (0, "q1", "b", "a"): ("second", "j2 says second", None)}
    graded = write_jsonl(tmp_path / "graded.jsonl", [{**r, "strength": 2 if r["verdict"] != "tie" else None}
                                                     for r in rows if r["judge"] == "j1"])
    assert replay_verdicts(graded, None)[(0, "q1", "a", "b")] == ("first", "j1 says first", 2)
    write_pairs(tmp_path, 1)
    cfg = write_config(tmp_path, backend="replay", base_url="http://127.0.0.1:9/v1",
                       judge={"path": "judge.jsonl", "replay_judge": "j1", "model": None})
    judge = open_judge(load_config(cfg))
    first = asyncio.run(judge.judge(_request("q1", "a", "b")))
    missing = asyncio.run(judge.judge(_request("q9", "a", "b")))
    assert (first.verdict, first.raw) == ("first", "j1 says first")
    assert missing.verdict is None and missing.error == "replay: no record for item 'q9' with 'a' first, 'b' second"


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_every_path_to_a_provider_reads_the_key_from_the_same_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    """The synchronous judge, the batch client, the batch engine's request bodies and the anchored scorer all
    get their client from the provider's one factory: without a key, each says the same variable."""
    variable = "OPENAI_API_KEY" if backend == "openai" else "ANTHROPIC_API_KEY"
    monkeypatch.delenv(variable, raising=False)
    write_pairs(tmp_path, 1)
    data = yaml.safe_load(write_config(tmp_path, backend=backend, base_url="x", judge={"batch": True}).read_text())
    del data["judge"]["base_url"]  # the provider itself: a key is needed
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(data))
    loaded = load_config(tmp_path / "run.yaml")
    said = f"set the environment variable {variable} (the API key is read only from there)"
    for build in (open_judge, make_provider):
        with pytest.raises(ConfigError) as err:
            build(loaded)
        assert str(err.value) == said, build
    with pytest.raises(ConfigError) as err:
        asyncio.run(score_items(loaded.config.judge.model_copy(update={"batch": False}), "rubric", [], SCALE))
    assert str(err.value) == said
    # a variable of one's own is read instead, for every path alike
    monkeypatch.setenv("MY_KEY", "sk-mine")
    own = loaded.config.judge.model_copy(update={"api_key_env": "MY_KEY"})
    loaded.config = loaded.config.model_copy(update={"judge": own})
    for build in (open_judge, make_provider):
        asyncio.run(build(loaded).aclose())


def test_batch_request_bodies_need_no_key_and_are_what_the_judge_sends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An offline engine (`batch: files`) needs no key: the bodies come from the judge's wire format alone, the
    same body its synchronous call sends first."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    write_pairs(tmp_path, 1)
    data = yaml.safe_load(write_config(tmp_path, base_url="x", judge={"batch": "files", "batch_dir": "b",
                                                                      "logprobs": True}).read_text())
    del data["judge"]["base_url"]
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(data))
    loaded = load_config(tmp_path / "run.yaml")
    bodies = body_judge(loaded, make_provider(loaded))
    request = _request("q1", "a", "b")
    body = bodies.request_body(request)
    assert body["model"] == "judge-model" and body["messages"][1]["content"] == request.user and body["logprobs"]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert open_judge(loaded).request_body(request) == body  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", [["run", "run.yaml", "--dry-run"], ["probe", "identical", "run.yaml"]])
def test_a_misspelt_judge_key_stops_every_command_that_uses_the_judge(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]) -> None:
    write_pairs(tmp_path, 2)
    write_config(tmp_path, base_url="http://127.0.0.1:9/v1", judge={"temprature": 0})
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert lines == ["error: run.yaml: key `judge.temprature`: not a setting of the openai backend; did you mean "
                     "`temperature`?"], result.stderr
