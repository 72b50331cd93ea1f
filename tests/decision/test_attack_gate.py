"""The gate on attacks: a decision naming attacks and `max_attack_win` keeps when an attack's upper bound passes
the ceiling, naming the attack, and fails closed when a named attack was not measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import swapjudge
from fragility_studies import DECISION, study
from swapjudge.cli import app
from swapjudge.decision.file import parse_decision
from swapjudge.errors import SwapjudgeError
from swapjudge.probes.attacks import LOSS, WIN, attack_result

ROWS, _ = study({"W": 40, "L": 10, "F": 4})  # ships without an attack gate


def report(wins_null: int, pairs: int = 40) -> dict:
    """An attack report as `swapjudge probe attack` writes it: the null answer wins both orders on `wins_null`
    pairs, master-key on none."""
    null = ([WIN] * wins_null + [LOSS] * (pairs - wins_null), [WIN] * pairs)
    key = ([WIN] * pairs, [LOSS] * pairs)
    placebo = ([WIN] * pairs, [LOSS] * pairs)
    return {"attacks": [attack_result("null", null, placebo, 0.95).to_dict(),
                        attack_result("master-key", key, placebo, 0.95).to_dict()]}


GATED = {**DECISION, "attacks": ["null", "master-key"], "max_attack_win": 0.10}


def test_without_the_keys_the_hash_is_the_one_it_always_was() -> None:
    plain = parse_decision(DECISION)
    assert "attacks" not in plain.to_dict() and plain.content_hash != parse_decision(GATED).content_hash
    with pytest.raises(SwapjudgeError, match="together"):
        parse_decision({**DECISION, "attacks": ["null"]})


def test_an_attack_above_the_ceiling_keeps_and_is_named() -> None:
    assert swapjudge.decide(ROWS, DECISION).verdict == "ship"
    passed = swapjudge.decide(ROWS, GATED, attack_report=report(0))
    assert passed.verdict == "ship" and passed.attack_gate.passed
    # 0 of 40 wins: Wilson's upper bound 8.8% < 10%; 2 of 40: 16.5% > 10%
    assert passed.attack_gate.attacks[0]["high"] == pytest.approx(0.0876, abs=1e-3)
    kept = swapjudge.decide(ROWS, GATED, attack_report=report(2))
    assert kept.verdict == "keep" and "null" in kept.headline and "master-key" not in kept.reasons[0]
    assert kept.to_dict()["attack_gate"]["attacks"][0]["passed"] is False


def test_a_named_attack_not_measured_fails_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert swapjudge.decide(ROWS, GATED).verdict == "keep"
    only_null = {"attacks": report(0)["attacks"][:1]}
    v = swapjudge.decide(ROWS, GATED, attack_report=only_null)
    assert v.verdict == "keep" and "master-key" in v.headline
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "d.yaml").write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in GATED.items()))
    (tmp_path / "attacks.json").write_text(json.dumps(report(0)))
    done = CliRunner().invoke(app, ["decide", "d.yaml", "r.jsonl", "--attack-report", "attacks.json"])
    assert done.exit_code == 0, done.output
    (tmp_path / "attacks.json").write_text(json.dumps(report(3)))
    done = CliRunner().invoke(app, ["decide", "d.yaml", "r.jsonl", "--attack-report", "attacks.json"])
    assert done.exit_code == 1 and "null" in done.output
    (tmp_path / "bad.json").write_text("{")
    done = CliRunner().invoke(app, ["decide", "d.yaml", "r.jsonl", "--attack-report", "bad.json"])
    assert done.exit_code == 2 and "bad.json" in done.output
