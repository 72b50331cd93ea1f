"""Release over release with a pinned baseline: a simulated chain where each release is 4% longer, judged by a
real HTTP judge server on 127.0.0.1 (OpenAI wire format) whose taste prefers longer answers."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
from pathlib import Path
from statistics import NormalDist
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from conftest import write_jsonl
from judge_server import JudgeServer, frame_answers
from swapjudge.cli import app
from swapjudge.config import load_config
from swapjudge.drift.releases import answer_properties, release_report
from swapjudge.errors import ConfigError, InputError
from swapjudge.reading.pairs_file import load_pairs
from swapjudge.runner.plan import release_pairs
from swapjudge.runner.session import run_session
from swapjudge.store import Store
from swapjudge.store.analysis import run_record_set

RELEASES = ["v1", "v2", "v3", "v4", "v5"]
GROWTH = 1.04
N_ITEMS = 40
WORDS = ("the", "result", "follows", "because", "each", "step", "keeps", "its", "value", "so", "we", "check",
         "again", "and", "note", "that", "answer", "holds", "here", "too")


class LengthLovingJudge(JudgeServer):
    """Scores each answer as 18 x ln(characters) plus an idiosyncratic taste drawn from the answer's text
    (standard normal, a hash of the text), and names the higher score: no position preference, a steady taste
    for length that a 4% step barely shows."""

    beta = 18.0

    def score(self, text: str) -> float:
        u = (int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") + 0.5) / 2**64
        return self.beta * math.log(len(text)) + NormalDist().inv_cdf(u)

    def decide(self, user: str, allow_tie: bool) -> str:
        answers = frame_answers(user)
        if answers is None:
            return "BROKEN"
        return "A" if self.score(answers[0]) >= self.score(answers[1]) else "B"


def _answer(rng: random.Random, item: int, target: int, bullets: int) -> str:
    lines = [f"Answer to task {item}:"] + [f"- point {b + 1}" for b in range(bullets)]
    text = "\n".join(lines) + "\n"
    while len(text) < target:
        text += rng.choice(WORDS) + " "
    return text[:target].rstrip() + "."


def _chain(directory: Path) -> None:
    rng = random.Random(7)
    rows = []
    for i in range(N_ITEMS):
        base = rng.randint(300, 500)
        answers = {r: _answer(rng, i, round(base * GROWTH**k), bullets=k) for k, r in enumerate(RELEASES)}
        rows.append({"item": f"t{i:02d}", "prompt": f"Task {i}: explain the result.", "answers": answers})
    write_jsonl(directory / "pairs.jsonl", rows)


def _config(directory: Path, url: str, **pairs: Any) -> Path:
    cfg = {"judge": {"backend": "openai", "model": "length-lover", "base_url": url, "max_concurrency": 8,
                     "timeout_s": 5},
           "pairs": {"path": "pairs.jsonl", "releases": RELEASES, **pairs}, "store": "releases.db"}
    path = directory / "releases.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_release_pairs_plan() -> None:
    assert release_pairs(["v1", "v2", "v3", "v4"], "v1") == [
        ("v1", "v2"), ("v2", "v3"), ("v3", "v4"), ("v1", "v3"), ("v1", "v4")]
    assert release_pairs(["v2", "v3"], "v0") == [("v2", "v3"), ("v0", "v2"), ("v0", "v3")]


def test_release_config_validation(tmp_path: Path) -> None:
    (tmp_path / "p.jsonl").write_text("")
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"judge": {"backend": "replay", "path": "x.jsonl"},
                                   "pairs": {"path": "p.jsonl", "releases": ["v1"]}}))
    with pytest.raises(ConfigError, match="at least two releases"):
        load_config(bad)
    bad.write_text(yaml.safe_dump({"judge": {"backend": "replay", "path": "x.jsonl"},
                                   "pairs": {"path": "p.jsonl", "a": "v1", "b": "v2", "releases": ["v1", "v2"]}}))
    with pytest.raises(ConfigError, match="releases"):
        load_config(bad)
    ok = tmp_path / "ok.yaml"
    ok.write_text(yaml.safe_dump({"judge": {"backend": "replay", "path": "x.jsonl"},
                                  "pairs": {"path": "p.jsonl", "releases": ["v1", "v2"]}}))
    assert load_config(ok).config.pairs.baseline == "v1"  # pinned to the oldest release unless named
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump({"judge": {"backend": "replay", "path": "x.jsonl"},
                                     "pairs": {"path": "p.jsonl", "a": "v1", "b": "v2"}}))
    assert "releases" not in load_config(plain).normalised()["pairs"]  # other plans hash as before


def test_answer_properties_counts() -> None:
    p = answer_properties("r", ["# Title\n- one\n- two\n**bold** text", "plain words here"])
    assert p.answers == 2 and p.headers_mean == 0.5 and p.bullets_mean == 1.0 and p.bold_mean == 0.5
    assert p.chars_mean == (33 + 16) / 2 and p.words_mean == (8 + 3) / 2  # "#", "-" and "**bold**" are words


def test_each_step_wins_while_the_baseline_chain_shows_the_drift(tmp_path: Path) -> None:
    _chain(tmp_path)
    with LengthLovingJudge() as server:
        cfg = _config(tmp_path, server.openai_url)
        outcome = run_session(load_config(cfg), progress=False)
    # 4 steps + 3 baseline comparisons not already a step, 40 items, both orders
    assert outcome.complete and outcome.stats.planned == 7 * N_ITEMS * 2
    loaded = load_config(cfg)
    with Store(tmp_path / "releases.db") as st:
        records = run_record_set(st, outcome.run_id)
    rep = release_report(records, load_pairs(tmp_path / "pairs.jsonl"), RELEASES, "v1")
    steps = [s.win_rate for s in rep.previous]
    base = [s.win_rate for s in rep.against_baseline]
    assert [s.newer for s in rep.previous] == ["v2", "v3", "v4", "v5"]
    assert [s.newer for s in rep.against_baseline] == ["v2", "v3", "v4", "v5"]
    # no position preference in this judge: every pair consistent
    assert all(s.analysis.consistency is not None and s.analysis.consistency.rate == 1.0 for s in rep.previous)
    # every step is a modest win ...
    assert all(w is not None and 0.5 < w < 0.85 for w in steps), steps
    # ... while against the pinned baseline the same taste compounds
    assert base[0] == steps[0]
    assert base[-1] is not None and base[-1] >= 0.9 and base[-1] - max(w for w in steps if w) >= 0.1, (steps, base)
    assert base[1] is not None and base[2] is not None and base[0] is not None
    assert base[0] < base[2] <= base[3] + 1e-9
    # the cause: answers grow 4% per release, and the longer answer takes nearly every decided pair
    chars = [p.chars_mean for p in rep.properties]
    for older, newer in itertools.pairwise(chars):
        assert newer / older == pytest.approx(GROWTH, abs=0.005)
    assert [p.bullets_mean for p in rep.properties] == [0.0, 1.0, 2.0, 3.0, 4.0]
    last = rep.against_baseline[-1].longer_won
    assert last.n == N_ITEMS and last.rate is not None and last.rate >= 0.9
    # "beat" only where every step's interval lies above 50%; a modest step on 40 items says what was measured
    lows = [s.analysis.win_rate.headline.low for s in rep.previous]
    if all(low > 0.5 for low in lows):
        assert "every release beat its predecessor" in rep.summary
    else:
        assert "every release beat" not in rep.summary and "does not lie above 50%" in rep.summary, (lows, rep.summary)
    assert "+17%" in rep.summary
    # the CLI reports both chains side by side
    cli = CliRunner()
    res = cli.invoke(app, ["releases", str(cfg), "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert [s["win_rate"]["value"] for s in data["against_baseline"]] == pytest.approx(base)
    assert data["properties"][-1]["chars_mean"] == pytest.approx(chars[-1])
    text = cli.invoke(app, ["releases", str(cfg), "--html", str(tmp_path / "chains.html")], catch_exceptions=False)
    assert rep.summary.split(";")[0].split()[0] in text.stdout  # the same summary as the library's
    page = (tmp_path / "chains.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "data:image/svg+xml;base64," in page
    assert "100.0% [91.2%, 100.0%]" in page or f"{base[-1]:.1%}" in page
    assert loaded.config.pairs.plan == "releases"


def test_releases_command_errors(tmp_path: Path) -> None:
    _chain(tmp_path)
    cfg = _config(tmp_path, "http://127.0.0.1:9/v1")
    cli = CliRunner()
    (tmp_path / "releases.db").touch()
    res = cli.invoke(app, ["releases", str(cfg)])
    assert res.exit_code == 2 and "no run of" in res.stderr and "swapjudge run" in res.stderr
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump({"judge": {"backend": "replay", "path": "x.jsonl"},
                                     "pairs": {"path": "pairs.jsonl", "a": "v1", "b": "v2"}}))
    res = cli.invoke(app, ["releases", str(plain)])
    assert res.exit_code == 2 and "not a release plan" in res.stderr
    cfg.write_text(cfg.read_text().replace("- v5", "- v9"))
    with pytest.raises(InputError, match=r"release\(s\) not in any answer: v9"):
        run_session(load_config(cfg), progress=False)
