"""`swapjudge card --compare` on cards made against the real judge server, and a card on the built-in quick suite
set beside the LLMBar reference cards (independent samples of the same sets)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binomtest, fisher_exact
from statsmodels.stats.multitest import multipletests
from typer.testing import CliRunner

from card_helpers import MARK, write_suite
from judge_server import JudgeServer
from runner_helpers import write_config
from swapjudge.cli import app
from swapjudge.drift.card_compare import newcombe_independent


def cli(*args: str, ok: tuple[int, ...] = (0,)) -> Any:
    done = CliRunner().invoke(app, list(args))
    assert done.exit_code in ok, (done.exit_code, done.stdout[-2000:], done.stderr[-2000:], done.exception)
    return done


def test_compare_pairs_two_saved_cards_on_their_shared_pairs(tmp_path: Path) -> None:
    suite, rows = write_suite(tmp_path, 36)
    paths = []
    for name, marker in (("marked", MARK), ("plain", None)):
        with JudgeServer(first_marker=marker) as server:
            config = write_config(tmp_path, base_url=server.openai_url, store=str(tmp_path / f"{name}.db"),
                                  name=f"{name}.yaml", judge={"name": name})
            path = tmp_path / f"{name}.json"
            cli("card", str(config), "--suite", str(suite), "-o", str(path), "--no-progress", "--no-references")
            paths.append(path)
    doc = json.loads(cli("card", "--compare", *map(str, paths), "--format", "json").stdout)
    assert doc["kind"] == "judge_card_comparison" and [c["judge"] for c in doc["cards"]] == ["marked", "plain"]
    diffs = doc["differences"]
    assert len(diffs) == 3 * 2  # three subsets, two measures
    for d in diffs:
        mine = [r for r in rows if r["item"].startswith(d["subset"] + "#")]
        m = sum(MARK in r["prompt"] for r in mine)
        assert d["paired"] and d["units_a"] == len(mine)
        # the marked judge flips (and so is wrong) exactly on the marked items, where the plain one is right
        assert d["difference"] == pytest.approx(-m / len(mine))
        assert d["p_value"] == pytest.approx(binomtest(0, m, 0.5).pvalue)
    _, holm, _, _ = multipletests([d["p_value"] for d in diffs], method="holm")
    assert [d["p_holm"] for d in diffs] == pytest.approx(list(holm))
    text = cli("card", "--compare", *map(str, paths)).stdout
    assert "Subset alpha" in text and "Differences" in text
    page = tmp_path / "cmp.html"
    cli("card", "--compare", *map(str, paths), "-o", str(page))
    assert "<script" not in page.read_text() and "Judge cards side by side" in page.read_text()


def test_compare_refuses_what_is_not_a_card_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"judge": "x"}')
    done = cli("card", "--compare", str(bad), str(bad), ok=(2,))
    assert "bad.json" in done.stderr and "not a judge card" in done.stderr and "Traceback" not in done.stderr
    done = cli("card", "--compare", str(tmp_path / "none.json"), str(bad), ok=(2,))
    assert "none.json" in done.stderr


def test_a_quick_card_is_set_beside_the_llmbar_references_as_independent_samples(tmp_path: Path) -> None:
    # LLMBar's answers hold no CORRECT: the server sees no better answer and names slot 1, every time
    with JudgeServer() as server:
        config = write_config(tmp_path, base_url=server.openai_url, store=str(tmp_path / "quick.db"))
        done = cli("card", str(config), "--suite", "quick", "--format", "json", "--no-progress", ok=(1,))
    card = json.loads(done.stdout)
    assert "gate" in done.stderr  # swap-consistency 0 on the whole suite: the gate fails, exit 1
    assert [s["name"] for s in card["subsets"]][:2] == ["Natural", "Adversarial/Neighbor"]
    natural = card["subsets"][0]
    assert natural["consistency"]["consistent"] == 0 and natural["pairs"]["complete"] == 4
    assert natural["source"].endswith("Dataset/LLMBar/Natural/dataset.json") and natural["licence"].startswith("MIT")
    d = next(x for x in card["differences"] if x["subset"] == "Natural" and x["measure"] == "consistency"
             and x["b"] == "GPT-4 Vanilla (LLMBar)")
    assert not d["paired"] and d["independent"].startswith("the two cards' pairs")
    assert (d["difference"], d["low"], d["high"]) == pytest.approx(newcombe_independent(0, 4, 97, 100))
    assert d["p_value"] == pytest.approx(fisher_exact([[0, 4], [97, 3]]).pvalue)
    assert len(card["differences"]) == 8 * 2 * 2  # eight subsets, two measures, two LLMBar judges
    # GPT-4's published per-pair verdicts on GPTOut pair the two cards on the pairs they share
    paired = [x for x in card["differences"] if x["paired"]]
    assert {(x["subset"], x["b"]) for x in paired} == {("Adversarial/GPTOut", "GPT-4 Vanilla (LLMBar)")}
    assert all(x["units_a"] == x["units_b"] == 4 for x in paired)
    shi = [r for r in card["references"] if r["source"] == "Shi et al. 2024"]
    assert len(shi) == 8 and all(r["shared_subsets"] == [] for r in shi)
    tiers = [t for t in card["tiers"] if t["subset"] == "Natural" and t["measure"] == "consistency"]
    assert tiers and tiers[0]["tiers"][0] == ["GPT-4 Vanilla (LLMBar)"]
