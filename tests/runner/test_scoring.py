"""Anchored pointwise scoring through a judge (runner/scoring.py): a real HTTP server on 127.0.0.1 in the OpenAI and
Anthropic wire formats, the run stored and listed by history, and the calls under the runner's retry policy."""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from conftest import write_jsonl
from judge_server import JudgeServer, frame_text
from swapjudge.cli import app
from swapjudge.runner.scoring import run_anchors
from swapjudge.store import Store

SCALE = {1: "wrong throughout", 2: "a major error", 3: "minor errors", 4: "correct and complete", 5: "exceptional"}


# ---- through a real HTTP server on 127.0.0.1 (OpenAI wire format) --------------------------------------


class ScoringServer(JudgeServer):
    """Grades an answer by the quality level written in it (`quality: N`), plus `offset` levels (capped to the
    scale): offset 0 is a stable judge, offset 1 a judge that drifted up by one level."""

    def __init__(self, offset: int = 0) -> None:
        super().__init__()
        self.offset = offset

    def handle(self, path: str, body: dict[str, Any], auth: str) -> tuple[int, dict[str, str], bytes]:
        user = body["messages"][1]["content"]
        answer = frame_text(user, "answer")
        assert answer is not None
        level = int(re.search(r"quality: (\d)", answer).group(1))  # type: ignore[union-attr]
        with self.lock:
            self.total += 1
        text = f"Score: {min(5, max(1, level + self.offset))}"
        payload = {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}
        return 200, {}, json.dumps(payload).encode()


def _anchors_setup(directory: Path, url: str) -> Path:
    rng = random.Random(11)
    levels = [rng.choice([1, 2, 2, 3, 3, 3, 4, 4, 5]) for _ in range(40)]
    write_jsonl(directory / "reference.jsonl", [
        {"item": f"r{i:02d}", "prompt": f"Task {i}", "answer": f"An answer, quality: {lv}"}
        for i, lv in enumerate(levels)])
    cfg = {"judge": {"backend": "openai", "model": "grader", "base_url": url, "max_concurrency": 4},
           "criteria": "Judge correctness first.", "scale": SCALE,
           "exemplars": [{"name": "low", "task": "Add 2 and 3.", "answer": "It is 6. quality: 1", "score": 1},
                         {"name": "mid", "task": "Add 2 and 3.", "answer": "5, I think. quality: 3", "score": 3}],
           "reference": "reference.jsonl", "pinned": "pinned.jsonl", "tolerance": 0.5, "store": "runs.db"}
    path = directory / "anchors.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_anchors_through_a_judge_server(tmp_path: Path) -> None:
    cli = CliRunner()
    with ScoringServer(offset=0) as server:
        cfg = _anchors_setup(tmp_path, server.openai_url)
        missing = cli.invoke(app, ["anchors", str(cfg)])
        assert missing.exit_code == 2 and "pinned.jsonl" in missing.stderr  # a missing pinned file: one clear line
        # the first run sets the pin: no pinned scores yet, this run's scores are written out
        cfg_text = cfg.read_text().replace("pinned: pinned.jsonl\n", "")
        cfg.write_text(cfg_text)
        out = cli.invoke(app, ["anchors", str(cfg), "-o", str(tmp_path / "pinned.jsonl")], catch_exceptions=False)
        assert out.exit_code == 0, out.output
        # 40 answers + 2 exemplars; the failed run made no call
        assert "no pinned scores" in out.stdout and server.total == 42
        stable = cli.invoke(app, ["anchors", str(cfg), "--pinned", str(tmp_path / "pinned.jsonl"), "-f", "json"],
                            catch_exceptions=False)
    assert stable.exit_code == 0, stable.output
    data = json.loads(stable.stdout)
    assert data["flagged"] is False and data["check"]["mean_shift"] == 0 and data["unparsed"] == 0
    assert sum(data["distribution"]["counts"].values()) == 40
    assert data["exemplars"] == {"low": {"stated": 1, "scored": 1}, "mid": {"stated": 3, "scored": 3}}
    with ScoringServer(offset=1) as drifted:
        cfg.write_text(cfg_text.replace(server.openai_url, drifted.openai_url))
        res = run_anchors(cfg, pinned=tmp_path / "pinned.jsonl")
        moved = cli.invoke(app, ["anchors", str(cfg), "--pinned", str(tmp_path / "pinned.jsonl")],
                           catch_exceptions=False)
    assert res.flagged and res.check is not None and res.check.mean_shift is not None
    pinned = [json.loads(line)["score"] for line in (tmp_path / "pinned.jsonl").read_text().splitlines()]
    assert res.check.mean_shift == pytest.approx(sum(p < 5 for p in pinned) / len(pinned))
    assert moved.exit_code == 1  # flagged
    assert "FLAG: the reference set's mean score moved +" in moved.stdout
    assert "FLAG: exemplar 'low' scored 2, its stated score is 1" in moved.stdout
    # every run went to the store with its scores; history lists them with the check's outcome
    db = tmp_path / "runs.db"
    with Store(db) as st:
        runs = st.anchor_runs()
        first_scores = st.anchor_scores(runs[0]["id"])
    assert [r["flagged"] for r in runs] == [False, False, True, True]
    assert first_scores == {json.loads(line)["item"]: json.loads(line)["score"]
                            for line in (tmp_path / "pinned.jsonl").read_text().splitlines()}
    assert runs[0]["result"]["check"] is None and runs[1]["result"]["check"]["mean_shift"] == 0
    assert runs[2]["result"]["check"]["mean_shift"] == pytest.approx(res.check.mean_shift)
    assert len({r["rubric_hash"] for r in runs}) == 1 and runs[0]["pinned_path"] is None
    hist = cli.invoke(app, ["history", "--store", str(db), "-f", "json"], catch_exceptions=False)
    assert hist.exit_code == 0, hist.output
    rows = json.loads(hist.stdout)
    assert [(r["kind"], r["anchored_run"], r["flagged"]) for r in rows] == [
        ("anchors", 1, False), ("anchors", 2, False), ("anchors", 3, True), ("anchors", 4, True)]
    assert rows[1]["distribution"]["n"] == 40 and rows[3]["check"]["up"] == sum(p < 5 for p in pinned)
    text = " ".join(cli.invoke(app, ["history", "--store", str(db)], catch_exceptions=False).stdout.split())
    assert "anchored run 2" in text and "anchor check: passed (mean shift +0.00 levels, 0 of 40 items moved" in text
    assert f"anchor check: FLAGGED (mean shift +{res.check.mean_shift:.2f} levels" in text
    assert "anchor check: no pinned scores; exemplars reproduced" in text


class AnthropicScoringServer(ScoringServer):
    """The same grader speaking the Anthropic Messages wire format."""

    def handle(self, path: str, body: dict[str, Any], auth: str) -> tuple[int, dict[str, str], bytes]:
        assert path.endswith("/v1/messages") and "Rubric:" in body["system"]
        status, headers, payload = super().handle(path, {"messages": [None, body["messages"][0]]}, auth)
        text = json.loads(payload)["choices"][0]["message"]["content"]
        return status, headers, json.dumps({"content": [{"type": "text", "text": text}]}).encode()


def test_anchors_through_the_anthropic_wire_format(tmp_path: Path) -> None:
    with AnthropicScoringServer(offset=0) as server:
        cfg = _anchors_setup(tmp_path, server.anthropic_url)
        cfg.write_text(cfg.read_text().replace("backend: openai", "backend: anthropic").replace(
            "pinned: pinned.jsonl\n", ""))
        res = run_anchors(cfg)
    assert server.total == 42 and res.unparsed == 0 and not res.flagged and res.run_id == 1
    levels = [int(re.search(r"quality: (\d)", json.loads(line)["answer"]).group(1))  # type: ignore[union-attr]
              for line in (tmp_path / "reference.jsonl").read_text().splitlines()]
    assert sorted(res.scores.values()) == sorted(levels)  # type: ignore[type-var]


def test_anchors_config_errors(tmp_path: Path) -> None:
    cfg = _anchors_setup(tmp_path, "http://127.0.0.1:9/v1")
    cfg.write_text(cfg.read_text().replace("backend: openai", "backend: replay\n  path: judge.jsonl"))
    res = CliRunner().invoke(app, ["anchors", str(cfg)])
    assert res.exit_code == 2 and "judge.backend" in res.stderr and "cannot score one answer" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    cfg.write_text(cfg.read_text().replace("backend: replay", "backend: openai").replace("tolerance: 0.5",
                                                                                          "tolerance: -1"))
    res = CliRunner().invoke(app, ["anchors", str(cfg)])
    assert res.exit_code == 2 and "tolerance" in res.stderr


class FlakyScoringServer(ScoringServer):
    """The grader behind a provider that answers each prompt's first request with `fault` (429 with a Retry-After,
    400, 401), recording when every request arrived."""

    def __init__(self, fault: int, retry_after: str = "0.3") -> None:
        super().__init__()
        self.fault, self.retry_after = fault, retry_after
        self.arrivals: dict[str, list[float]] = {}

    def handle(self, path: str, body: dict[str, Any], auth: str) -> tuple[int, dict[str, str], bytes]:
        user = body["messages"][1]["content"]
        with self.lock:
            seen = self.arrivals.setdefault(user, [])
            seen.append(time.monotonic())
            first = len(seen) == 1
        if first and self.fault == 429:
            return 429, {"retry-after": self.retry_after}, b'{"error": {"message": "rate limited"}}'
        if self.fault in (400, 401):
            return self.fault, {}, b'{"error": {"message": "refused"}}'
        return super().handle(path, body, auth)


def _flaky_setup(directory: Path, url: str, **judge: Any) -> Path:
    cfg = _anchors_setup(directory, url)
    data = yaml.safe_load(cfg.read_text())
    data.pop("pinned")
    data["judge"].update(judge)
    cfg.write_text(yaml.safe_dump(data))
    return cfg


def test_anchored_scoring_honours_retry_after(tmp_path: Path) -> None:
    """A 429 is retried after the server's Retry-After (0.3 s), not after the configured backoff (20 s or more):
    the anchored scorer goes through the runner's retry policy like every other provider call."""
    with FlakyScoringServer(429) as server:
        cfg = _flaky_setup(tmp_path, server.openai_url, backoff_s=20.0, max_backoff_s=60.0)
        started = time.monotonic()
        res = run_anchors(cfg)
        took = time.monotonic() - started
    assert res.unparsed == 0 and len(res.scores) == 40
    assert all(len(times) == 2 for times in server.arrivals.values()) and len(server.arrivals) == 42
    gaps = [times[1] - times[0] for times in server.arrivals.values()]
    assert min(gaps) >= 0.3
    assert took < 10.0  # 42 calls waiting out 20 s of backoff each would take minutes


@pytest.mark.parametrize(("status", "said"), [(400, "scoring exemplar:low: openai: HTTP 400"),
                                              (401, "scoring stopped: openai: HTTP 401 (authentication refused")])
def test_a_refused_scoring_call_stops_with_one_line(tmp_path: Path, status: int, said: str) -> None:
    with FlakyScoringServer(status) as server:
        cfg = _flaky_setup(tmp_path, server.openai_url, max_concurrency=1)
        result = CliRunner().invoke(app, ["anchors", str(cfg)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], result.stderr
    assert len(server.arrivals) == 1  # nothing more is sent once a call is refused
    assert not (tmp_path / "runs.db").exists()  # and nothing is stored


def test_an_unreachable_server_stops_scoring_at_once(tmp_path: Path) -> None:
    cfg = _flaky_setup(tmp_path, "http://127.0.0.1:9/v1", backoff_s=20.0)  # nothing listens on port 9
    started = time.monotonic()
    result = CliRunner().invoke(app, ["anchors", str(cfg)])
    assert result.exit_code == 2 and time.monotonic() - started < 10.0  # not 5 retries of 20 s backoff
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach http://127.0.0.1:9/v1" in lines[0] and "server running" in lines[0]
