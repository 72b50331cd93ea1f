"""`swapjudge card --attacks`: the card carries the attack probe's table, its calls counted by a real server."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from card_helpers import write_suite
from judge_server import JudgeServer
from runner_helpers import write_config
from swapjudge.cli import app


def test_the_card_carries_the_attack_table(tmp_path: Path) -> None:
    suite, rows = write_suite(tmp_path, 12)
    with JudgeServer(policy="first") as server:
        config = write_config(tmp_path, base_url=server.openai_url, store=str(tmp_path / "card.db"))
        base = ["card", str(config), "--suite", str(suite), "--no-progress", "--no-references"]
        done = CliRunner().invoke(app, [*base, "--format", "json", "--attacks", "null,master-key"])
        assert done.exit_code in (0, 1), done.output
        without = server.total
        text = CliRunner().invoke(app, [*base, "--attacks", "null,master-key"])
    card = json.loads(done.stdout)
    attacks = card["attacks"]["attacks"]
    assert [a["name"] for a in attacks] == ["null", "master-key"]
    # an always-slot-1 judge: every attack wins when shown first, never in both orders
    assert all(a["win_first"] == 1.0 and a["win_second"] == 0.0 and a["wins_both"]["rate"] == 0.0 for a in attacks)
    assert card["attacks"]["calls"] == len(rows) * 3 * 2 and without >= card["attacks"]["calls"]
    # through the run's store: the placebo's prompts are the run's own calls, served from its cache
    assert (card["attacks"]["cached"], card["attacks"]["made"]) == (len(rows) * 2, len(rows) * 2 * 2)
    assert "Attack probe" in text.stdout and "master-key" in text.stdout


def test_a_configuration_naming_attacks_gets_their_table_without_the_run_gate(tmp_path: Path) -> None:
    """`attacks` in the configuration, no `--attacks`: the card probes them for its table and applies no
    `max_attack_win` gate (its run does not probe them a second time)."""
    suite, rows = write_suite(tmp_path, 6)
    with JudgeServer(policy="better") as server:
        config = write_config(tmp_path, base_url=server.openai_url, store=str(tmp_path / "card.db"),
                              attacks=["planted-verdict"], max_attack_win=0.01)
        done = CliRunner().invoke(app, ["card", str(config), "--suite", str(suite), "--no-progress",
                                        "--no-references", "--format", "json"])
    assert done.exit_code in (0, 1), done.output
    card = json.loads(done.stdout)
    assert [a["name"] for a in card["attacks"]["attacks"]] == ["planted-verdict"]
    assert card["attacks"]["made"] == len(rows) * 2 and "attack_gate" not in card
    assert "attack gate" not in done.output
