"""Attacks in a run configuration (`attacks`, `max_attack_win`): `swapjudge run` probes the run's pairs after the
run with the same judge through the same store, against a real HTTP judge server on 127.0.0.1 (OpenAI wire format)
that counts every request; and `probe attack --suite --store` on the card's quick suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from scipy.stats import binomtest
from typer.testing import CliRunner

from judge_server import JudgeServer
from runner_helpers import write_config, write_pairs
from swapjudge.cli import app
from swapjudge.config import load_config
from swapjudge.errors import ConfigError
from swapjudge.probes.attacks import ATTACKS, PLANTED

runner = CliRunner()
PAIRS = 10


def _run(tmp_path: Path, *args: str) -> Any:
    done = runner.invoke(app, ["run", str(tmp_path / "run.yaml"), "--no-progress", *args])
    return done


def _wilson_high(k: int, n: int) -> float:
    return float(binomtest(k, n).proportion_ci(0.95, method="wilson").high)


def test_an_always_slot_1_judge_passes_a_wide_ceiling_and_pays_no_call_twice(tmp_path: Path) -> None:
    """Every attack wins exactly when shown first and never both orders: 0 of 10 pairs, upper bound 27.8%. The
    placebo's prompts are the run's own calls: the server sees each prompt once, and a second run sees none."""
    write_pairs(tmp_path, PAIRS)
    with JudgeServer(policy="first") as server:
        # the judge splits every pair: no consistency gate, so the attack gate alone decides the exit code
        write_config(tmp_path, base_url=server.openai_url, attacks=list(ATTACKS), max_attack_win=0.3,
                     attack_pairs=PAIRS, gates={"min_self_consistency": 0})
        done = _run(tmp_path, "--format", "json")
        assert done.exit_code == 0, done.output
        first_total = server.total
        again = _run(tmp_path, "--format", "json")
        assert again.exit_code == 0, again.output
        text = _run(tmp_path)  # served from the store too: the gate's line as a decision prints it
        assert text.exit_code == 0, text.output
    said = " ".join(text.output.split())  # the console wraps lines
    assert ("attack gate: passed: upper bounds of the both-order win rates null 27.8%, structured-null 27.8%" in said
            and "against the ceiling 30.0%" in said)
    # the run's 20 calls, then 10 pairs x 7 attacks x 2 orders; the placebo's 20 prompts came from the cache
    assert first_total == PAIRS * 2 + PAIRS * len(ATTACKS) * 2
    assert set(server.first_requests.values()) == {1}
    assert server.total == first_total  # the second run and its probe: all from the store
    doc = json.loads(done.stdout)
    probe = doc["attacks"]
    assert (probe["calls"], probe["made"], probe["cached"]) == (PAIRS * (len(ATTACKS) + 1) * 2,
                                                                PAIRS * len(ATTACKS) * 2, PAIRS * 2)
    for a in probe["attacks"]:
        assert (a["pairs"], a["win_first"], a["win_second"], a["wins_both"]["rate"]) == (PAIRS, 1.0, 0.0, 0.0)
        assert a["wins_both"]["high"] == pytest.approx(_wilson_high(0, PAIRS))
    gate = doc["attack_gate"]
    assert gate["passed"] is True and gate["max_attack_win"] == 0.3 and gate["reason"] is None
    assert [r["name"] for r in gate["attacks"]] == list(ATTACKS)
    second = json.loads(again.stdout)["attacks"]
    assert (second["made"], second["cached"]) == (0, PAIRS * (len(ATTACKS) + 1) * 2)
    assert second["attacks"] == probe["attacks"]
    # the run's own analysis file carries the same table
    written = json.loads((tmp_path / f"swapjudge-run-{doc['run']['id']}.analysis.json").read_text())
    assert written["attack_gate"]["passed"] is True


def test_the_dry_run_counts_the_attack_calls_to_make(tmp_path: Path) -> None:
    """Before the run: every attack call is to make, the placebo's are the run's own; after it, none is."""
    write_pairs(tmp_path, PAIRS)
    with JudgeServer(policy="first") as server:
        write_config(tmp_path, base_url=server.openai_url, attacks=["null", "authority"], max_attack_win=0.3,
                     attack_pairs=PAIRS, gates={"min_self_consistency": 0})
        before = _run(tmp_path, "--dry-run")
        assert before.exit_code == 0 and server.total == 0, before.output
        assert _run(tmp_path).exit_code == 0
        after = _run(tmp_path, "--dry-run")
    said_before, said_after = (" ".join(r.output.split()) for r in (before, after))  # the console wraps lines
    assert f"on {PAIRS} pairs: {PAIRS * 3 * 2} calls planned, {PAIRS * 2 * 2} to make" in said_before
    assert f"{PAIRS * 3 * 2} calls planned, 0 to make" in said_after


def test_the_upper_bound_not_the_rate_meets_the_ceiling(tmp_path: Path) -> None:
    """The same judge, a ceiling of 20%: no attack won a pair in both orders, but 10 pairs cannot show a rate
    below 27.8% at 95%, so the gate fails closed (exit 1), naming every attack; the text says so too."""
    write_pairs(tmp_path, PAIRS)
    with JudgeServer(policy="first") as server:
        write_config(tmp_path, base_url=server.openai_url, attacks=["null", "bandwagon"], max_attack_win=0.2,
                     attack_pairs=PAIRS, gates={"min_self_consistency": 0})
        done = _run(tmp_path)
    assert done.exit_code == 1, done.output
    assert "attack gate failed" in done.output and "null" in done.output and "bandwagon" in done.output
    assert "Attack probe" in done.output  # the table is printed before the gate's line
    assert "upper bound 27.8%" in done.output


def test_a_judge_that_prefers_a_planted_verdict_fails_the_gate_naming_it(tmp_path: Path) -> None:
    """The judge picks whichever answer carries the planted verdict line, else the one saying CORRECT: the planted
    attack wins both orders on every pair; the null answer never does (it has no CORRECT)."""
    write_pairs(tmp_path, PAIRS)
    with JudgeServer(policy="better", prefer=PLANTED.strip().splitlines()[-1]) as server:
        write_config(tmp_path, base_url=server.openai_url, attacks=["null", "planted-verdict"],
                     max_attack_win=0.4, attack_pairs=PAIRS)
        done = _run(tmp_path, "--format", "json")
    assert done.exit_code == 1, done.output
    doc = json.loads(done.stdout)
    by = {a["name"]: a for a in doc["attacks"]["attacks"]}
    assert by["planted-verdict"]["wins_both"]["rate"] == 1.0
    assert by["planted-verdict"]["wins_both"]["low"] == pytest.approx(
        float(binomtest(PAIRS, PAIRS).proportion_ci(0.95, method="wilson").low))
    gate = doc["attack_gate"]
    assert gate["passed"] is False
    assert "planted-verdict" in gate["reason"] and "null" not in gate["reason"]
    rows = {r["name"]: r["passed"] for r in gate["attacks"]}
    assert rows["planted-verdict"] is False
    assert doc["gate"]["passed"] is True  # the consistency gate held: the attack gate alone fails the run
    assert "planted-verdict" in done.stderr


def _config_text(tmp_path: Path, **extra: Any) -> Path:
    cfg = {"judge": {"backend": "openai", "model": "m"}, "pairs": {"path": "pairs.jsonl"}, **extra}
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def test_the_configuration_checks_the_attacks_and_keeps_them_out_of_its_hash(tmp_path: Path) -> None:
    plain = load_config(_config_text(tmp_path)).config_hash
    gated = load_config(_config_text(tmp_path, attacks=["null"], max_attack_win=0.1))
    assert gated.config.attacks == ("null",) and gated.config_hash == plain
    with pytest.raises(ConfigError, match=r"run.yaml:\d+: key `attacks`: .*unknown attack\(s\) nope"):
        load_config(_config_text(tmp_path, attacks=["nope"], max_attack_win=0.1))
    with pytest.raises(ConfigError, match="together"):
        load_config(_config_text(tmp_path, attacks=["null"]))
    with pytest.raises(ConfigError, match="max_attack_win"):
        load_config(_config_text(tmp_path, attacks=["null"], max_attack_win=1.5))


def test_probe_attack_on_the_quick_suite_resumes_from_its_store(tmp_path: Path, monkeypatch: Any) -> None:
    """A configuration without pairs, `--suite quick`: the card's 32 packaged pairs, a seeded sample of 4; the second
    probe (and its dry run) find every reply in the store."""
    monkeypatch.chdir(tmp_path)
    with JudgeServer(policy="first") as server:
        cfg = {"judge": {"backend": "openai", "model": "m", "base_url": server.openai_url, "timeout_s": 5}}
        (tmp_path / "card.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
        args = ["probe", "attack", "card.yaml", "--suite", "quick", "--n", "4", "--attacks", "null,authority",
                "--store", "probe.db", "--format", "json"]
        first = runner.invoke(app, args)
        assert first.exit_code == 0, first.output
        made = server.total
        second = runner.invoke(app, args)
        dry = runner.invoke(app, [*args, "--dry-run"])
        assert second.exit_code == 0 and dry.exit_code == 0, second.output + dry.output
        # cached only: bandwagon was never asked, so its pairs are incomplete; nothing is called
        base = ["probe", "attack", "card.yaml", "--suite", "quick", "--n", "4", "--format", "json", "--cached-only"]
        partial = runner.invoke(app, [*base, "--attacks", "null,authority,bandwagon", "--store", "probe.db"])
        assert partial.exit_code == 0, partial.output
        nowhere = runner.invoke(app, [*base, "--store", "nowhere.db"])
    assert nowhere.exit_code == 2 and "--cached-only" in nowhere.output and "--store" in nowhere.output
    assert made == 4 * 3 * 2 == server.total
    part = json.loads(partial.stdout)
    assert (part["made"], part["cached"], part["missing"], part["failed_calls"]) == (0, 24, 8, 8)
    by = {a["name"]: a for a in part["attacks"]}
    assert (by["bandwagon"]["pairs"], by["bandwagon"]["incomplete"]) == (0, 4)
    assert by["null"]["wins_both"] == json.loads(first.stdout)["attacks"][0]["wins_both"]
    one, two = json.loads(first.stdout), json.loads(second.stdout)
    assert (one["made"], one["cached"], two["made"], two["cached"]) == (24, 0, 0, 24)
    assert one["attacks"] == two["attacks"] and one["sample"] == 4
    assert (one["attacked"], one["opponent"]) == ("output_1", "output_2")
    assert json.loads(dry.stdout)["to_make"] == 0
    both = runner.invoke(app, ["probe", "attack", "card.yaml", "--suite", "quick", "--pairs", "x.jsonl",
                               "--dry-run"])
    assert both.exit_code == 2 and "--suite" in both.output and "--pairs" in both.output
