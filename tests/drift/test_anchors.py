"""Anchored pointwise scoring: distribution, compression, the anchor check (a judge shifted by one level is
flagged, a stable one is not), the rubric renderer and the strict score parser."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from scipy import stats
from typer.testing import CliRunner

from conftest import write_jsonl
from judge_server import JudgeServer, frame_text
from swapjudge.cli import app
from swapjudge.drift.anchors import (
    Exemplar,
    Level,
    Scale,
    check_anchors,
    parse_score,
    render_rubric,
    score_distribution,
)
from swapjudge.drift.anchors_run import run_anchors
from swapjudge.errors import SwapjudgeError
from swapjudge.store import Store

SCALE = Scale((
    Level(1, "ignores the task or is wrong throughout"),
    Level(2, "addresses the task but with a major error or omission"),
    Level(3, "correct in substance, with minor errors or gaps"),
    Level(4, "correct and complete, follows every instruction"),
    Level(5, "correct, complete and exceptionally clear; nothing to add or remove"),
))
EXEMPLARS = [Exemplar("low", "Add 2 and 3.", "It is 6.", 1), Exemplar("mid", "Add 2 and 3.", "5, I think", 3),
             Exemplar("high", "Add 2 and 3.", "2 + 3 = 5.", 5)]


def _reference(n: int = 60, seed: int = 3) -> dict[str, int]:
    rng = random.Random(seed)
    return {f"r{i:02d}": rng.choice([1, 2, 2, 3, 3, 3, 4, 4, 5]) for i in range(n)}


def test_scale_and_rubric() -> None:
    with pytest.raises(SwapjudgeError, match="consecutive"):
        Scale((Level(1, "a"), Level(2, "b"), Level(4, "c")))
    with pytest.raises(SwapjudgeError, match="3 to 7"):
        Scale((Level(1, "a"), Level(2, "b")))
    text = render_rubric(SCALE, EXEMPLARS, "Judge correctness first.")
    assert "3: correct in substance" in text and "Example high." in text and "Score: 5" in text
    assert text.endswith("`Score: N` with N an integer from 1 to 5.")
    with pytest.raises(SwapjudgeError, match="two or three"):
        render_rubric(SCALE, EXEMPLARS[:1], "x")


def test_parse_score_is_strict() -> None:
    assert parse_score("Score: 4", SCALE) == 4
    assert parse_score("The answer is fine.\n\nScore: 2\n", SCALE) == 2
    assert parse_score("Score: 6", SCALE) is None  # not a level
    assert parse_score("Score: 4/5", SCALE) is None
    assert parse_score("Score: 4\nActually 3.", SCALE) is None  # the last line must be the score
    assert parse_score("I give it a 4", SCALE) is None
    assert parse_score("", SCALE) is None


def test_distribution_and_compression() -> None:
    d = score_distribution([3, 3, 3, 4, 4, 1, 5, 3, 4, 2], SCALE)
    assert d.counts == (1, 1, 4, 3, 1) and d.n == 10
    assert d.mean == pytest.approx(3.2) and d.median == 3.0
    assert d.top_levels == (3, 4) and d.compression.k == 7 and d.compression.rate == pytest.approx(0.7)
    ci = stats.binomtest(7, 10).proportion_ci(method="wilson")
    assert (d.compression.low, d.compression.high) == pytest.approx((ci.low, ci.high))
    flat = score_distribution([4] * 9 + [3], SCALE)
    assert flat.compression.rate == 1.0  # everything on two levels: a compressed scale
    with pytest.raises(SwapjudgeError, match="not levels"):
        score_distribution([0, 3], SCALE)


def test_a_judge_shifted_by_one_level_is_flagged() -> None:
    pinned = _reference()
    # the drifted judge scores everything one level higher (capped at the top of the scale)
    drifted = {k: min(5, v + 1) for k, v in pinned.items()}
    check = check_anchors(pinned, drifted, SCALE, exemplars={"low": (1, 2), "mid": (3, 4), "high": (5, 5)})
    assert check.flagged
    moved = sum(v < 5 for v in pinned.values())
    assert check.up == moved and check.down == 0 and check.moved.k == moved
    assert check.mean_shift == pytest.approx(moved / len(pinned))
    assert check.mean_shift > 0.5
    assert check.p_value is not None and check.p_value < 1e-6
    assert any("mean score moved" in r for r in check.reasons)
    assert sum("exemplar" in r for r in check.reasons) == 2  # low and mid moved, high is capped
    assert check.current.mean is not None and check.pinned.mean is not None
    assert check.current.mean - check.pinned.mean == pytest.approx(check.mean_shift)


def test_a_stable_judge_is_not_flagged() -> None:
    pinned = _reference()
    rng = np.random.default_rng(0)
    # a stable judge: a few reference items move by one level either way, the anchors hold
    current = dict(pinned)
    for k in rng.choice(sorted(pinned), size=8, replace=False):
        current[k] = int(np.clip(pinned[k] + rng.choice([-1, 1]), 1, 5))
    check = check_anchors(pinned, current, SCALE, exemplars={"low": (1, 1), "mid": (3, 3), "high": (5, 5)})
    assert not check.flagged and check.reasons == ()
    assert abs(check.mean_shift or 0) <= 0.5 and check.moved.k == sum(current[k] != pinned[k] for k in pinned)
    # an exemplar the judge no longer reproduces flags the run even when the reference set holds
    off = check_anchors(pinned, current, SCALE, exemplars={"low": (1, 1), "mid": (3, None), "high": (5, 3)})
    assert off.flagged and len(off.reasons) == 2
    same = check_anchors(pinned, pinned, SCALE)
    assert same.p_value is None and same.mean_shift == 0 and not same.flagged


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
           "criteria": "Judge correctness first.", "scale": {lv.score: lv.description for lv in SCALE.levels},
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
