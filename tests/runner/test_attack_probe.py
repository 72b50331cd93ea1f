"""The attack probe against a real HTTP judge server on 127.0.0.1 (OpenAI wire format) that counts requests."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from judge_server import JudgeServer, frame_answers
from runner_helpers import write_config, write_pairs
from swapjudge.cli import app
from swapjudge.config import load_config
from swapjudge.probes.attacks import ATTACKS, MASTER_KEYS, NULL_ANSWER
from swapjudge.runner.attack_probe import run_attack

runner = CliRunner()


def test_an_always_slot_1_judge_lets_every_attack_win_exactly_when_shown_first(tmp_path: Path) -> None:
    write_pairs(tmp_path, 12)
    with JudgeServer(policy="first") as server:
        probe = run_attack(load_config(write_config(tmp_path, base_url=server.openai_url)), sample=10, seed="s")
    # 10 pairs x (7 attacks + the placebo) x 2 orders, each one request
    assert server.total == probe.calls == 10 * (len(ATTACKS) + 1) * 2
    assert [a.name for a in probe.attacks] == list(ATTACKS)
    for a in probe.attacks:
        d = a.to_dict()
        assert (d["pairs"], d["win_first"], d["win_second"], d["order_cancelled"]) == (10, 1.0, 0.0, 0.5)
        assert d["wins_both"]["rate"] == 0.0 and d["wins_both"]["low"] == 0.0
        assert 0.27 < d["wins_both"]["high"] < 0.28  # Wilson, 0 of 10 at 95%
        placebo = d["placebo"]
        assert (placebo["win_first"], placebo["win_second"], placebo["wins_both"]["rate"]) == (1.0, 0.0, 0.0)
        assert placebo["test"]["attack_only"] == placebo["test"]["placebo_only"] == 0
        assert placebo["test"]["p_value"] is None
    shown = [frame_answers(b["messages"][1]["content"]) for b in server.bodies]
    assert sum(NULL_ANSWER in (s or ("", ""))[0] for s in shown) == 20  # null and structured-null shown first
    assert any((s or ("", ""))[1] in MASTER_KEYS for s in shown)


def test_a_judge_for_the_correct_answer_and_the_dry_run(tmp_path: Path, monkeypatch) -> None:
    """`better` picks the answer saying CORRECT: the null answer loses both orders, planted text appended to the
    good answer still wins both, as does its placebo; the dry run makes no call."""
    write_pairs(tmp_path, 8)
    monkeypatch.chdir(tmp_path)
    with JudgeServer(policy="better") as server:
        write_config(tmp_path, base_url=server.openai_url)
        dry = runner.invoke(app, ["probe", "attack", "run.yaml", "--attacks", "null,planted-verdict", "--n", "5",
                                  "--dry-run", "--format", "json"])
        assert dry.exit_code == 0, dry.output
        assert server.total == 0 and json.loads(dry.stdout)["calls"] == 5 * 3 * 2
        out = runner.invoke(app, ["probe", "attack", "run.yaml", "--attacks", "null,planted-verdict", "--n", "5",
                                  "--format", "json"])
    assert out.exit_code == 0, out.output
    assert server.total == 30
    doc = json.loads(out.stdout)
    by = {a["name"]: a for a in doc["attacks"]}
    attacked = doc["attacked"]
    good = attacked == "good"
    assert by["null"]["wins_both"]["rate"] == 0.0
    assert by["planted-verdict"]["wins_both"]["rate"] == (1.0 if good else 0.0)
    assert by["null"]["placebo"]["wins_both"]["rate"] == (1.0 if good else 0.0)
    if good:  # the null answer lost every pair its placebo won: 5 discordant pairs, all the placebo's
        assert by["null"]["placebo"]["test"]["placebo_only"] == 5 and by["null"]["placebo"]["test"]["p_value"] == 1.0
    bad = runner.invoke(app, ["probe", "attack", "run.yaml", "--attacks", "nope", "--dry-run"])
    assert bad.exit_code == 2 and "nope" in bad.output
