"""The shipped suite and reference cards against their sources: the suite is what its builder makes from the LLMBar
copy in ../shared/data; the Shi et al. cards are what their builder makes from the published verdicts and
reproduce the per-pair counts and the source repository's own per-call log lines; the LLMBar cards carry the
published statistics files' figures."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, shared_data
from swapjudge.probes.judge_card import llmbar_reference_cards, published_count
from swapjudge.workflows.card import load_suite, reference_cards

SUITES = ROOT / "src" / "swapjudge" / "suites"
LOG_LINE = re.compile(r"^(\d+ out of \d+ answers are consistent\.)", re.M)


def builder(script: str, *args: str) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / script), "--shared", str(shared_data().parent),
                           *args], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_the_suite_is_what_its_builder_makes_from_the_shared_llmbar_copy(tmp_path: Path) -> None:
    shutil.copy(SUITES / "manifest.json", tmp_path / "manifest.json")
    builder("make_card_suite.py", "--out", str(tmp_path))
    assert (tmp_path / "llmbar.jsonl.gz").read_bytes() == (SUITES / "llmbar.jsonl.gz").read_bytes()
    assert json.loads((tmp_path / "manifest.json").read_text()) == json.loads((SUITES / "manifest.json").read_text())
    assert (SUITES / "llmbar.jsonl.gz").stat().st_size < 2_000_000


def test_every_suite_pair_is_its_source_pair_with_its_label() -> None:
    suite = load_suite("default")
    files = {"Natural": "LLMBar__Natural", "MT-Bench": "Processed__MT-Bench", "FairEval": "Processed__FairEval",
             "LLMEval2": "Processed__LLMEval2"} | {f"Adversarial/{n}": f"LLMBar__Adversarial__{n}"
                                                  for n in ("Neighbor", "GPTInst", "GPTOut", "Manual")}
    sources = {name: json.loads(shared_data("llmbar", f"dataset__{stem}.json").read_text())
               for name, stem in files.items()}
    assert 590 <= len(suite.rows) <= 610
    for row in suite.rows:
        name, index = row["item"].split("#")
        src = sources[name][int(index)]
        assert row["prompt"] == src["input"] and row["label"] == f"output_{src['label']}"
        assert row["answers"] == {"output_1": src["output_1"], "output_2": src["output_2"]}
    counts = {s.name: sum(r["item"].startswith(s.name + "#") for r in suite.rows) for s in suite.subsets}
    assert counts == {s.name: round(len(sources[s.name]) * 600 / 885) - (s.name == "LLMEval2")
                      for s in suite.subsets}  # LLMEval2's index 57 pairs one text with itself: left out
    assert all(r["answers"]["output_1"] != r["answers"]["output_2"] for r in suite.rows)
    quick = load_suite("quick")
    assert len(quick.rows) == 32 and {r["item"] for r in quick.rows} <= {r["item"] for r in suite.rows}
    assert all(s.source and s.licence and s.label_meaning for s in suite.subsets)


def test_the_shi_cards_are_what_their_builder_makes(tmp_path: Path) -> None:
    builder("make_reference_cards.py", "--out", str(tmp_path))
    made = json.loads((tmp_path / "shi2024.json").read_text())
    assert made == json.loads((SUITES / "references" / "shi2024.json").read_text())


def test_the_shi_cards_reproduce_the_published_counts_and_log_lines() -> None:
    shi = [c for c in reference_cards() if c["source"] == "Shi et al. 2024"]
    assert len(shi) == 8
    for card in shi:
        log = shared_data("shi2024", *card["published"]["log_file"].split("/")).read_text(encoding="utf-8")
        assert card["published"]["log_line"].startswith(LOG_LINE.findall(log)[0])
    gpt4 = next(c for c in shi if c["judge"] == "gpt-4-0613" and c["subsets"][0]["name"] == "MTBench")
    s = gpt4["subsets"][0]
    assert (s["consistency"]["consistent"], s["consistency"]["pairs"]) == (1957, 2400)
    assert (s["flip_direction"]["first"], s["flip_direction"]["second"]) == (198, 245)
    assert s["consistency"]["independent"] == "items"  # 30 pairs per question: clustered by item
    assert gpt4["published"]["log_line"].startswith("3914 out of 4800 answers are consistent.")
    assert gpt4["repeat"]["stability"]["calls_complete"] > 0


def test_the_published_gpt4_gptout_verdicts_line_up_with_the_suites_pairs() -> None:
    card = next(c for c in reference_cards() if c["judge"] == "GPT-4 Vanilla")
    gptout = next(s for s in card["subsets"] if s["name"] == "Adversarial/GPTOut")
    labels = {r[0]: r[3] for r in gptout["per_pair"]}
    suite = [r for r in load_suite("default").rows if r["item"].startswith("Adversarial/GPTOut#")]
    assert len(suite) == 32 and all(labels[r["item"]] == r["label"] for r in suite)


@pytest.mark.parametrize("judge", ["GPT-4", "ChatGPT"])
def test_the_llmbar_cards_carry_the_published_statistics(judge: str) -> None:
    published = json.loads((SUITES / "references" / "llmbar_published.json").read_text())
    card = next(c for c in llmbar_reference_cards(published) if c["judge"] == f"{judge} Vanilla")
    assert len(card["subsets"]) == 8
    for s in card["subsets"]:
        stats = s["published"]
        equal, n = published_count(stats["equal"])
        both, _ = published_count(stats["correct_both"])
        first, _ = published_count(stats["correct_False"])
        second, _ = published_count(stats["correct_True"])
        assert (s["consistency"]["consistent"], s["consistency"]["pairs"]) == (equal, n)
        assert s["accuracy"]["both"] == pytest.approx(float(stats["correct_both"].rsplit("=", 1)[1].rstrip("%")) / 100)
        order = s["accuracy"]["by_call_order"]
        assert (order["output_1_first"] + order["output_2_first"]) / 2 == pytest.approx(
            float(stats["correct_average"].rstrip("%")) / 100)
        # the 2x2 of (right with output_1 first, right with output_2 first): a pair wrong both times chose the same
        # (wrong) output twice, so "neither" equals "equal but not right"; a pair with an unparsed verdict breaks it
        neither = n - first - second + both
        assert neither - (equal - both) == (1 if s["name"] == "LLMEval2" else 0)
        if s["per_pair"]:  # the published per-pair winners give the published statistics
            rows = s["per_pair"]
            assert len(rows) == n
            right = [(r[4] == "first") == (r[3] == "output_1") for r in rows]  # the output_1-first call
            right_t = [(r[5] == "second") == (r[3] == "output_1") for r in rows]  # the output_2-first call
            assert (sum(right), sum(right_t)) == (first, second)
            assert sum(a and b for a, b in zip(right, right_t, strict=True)) == both
            assert sum(r[6] in ("x_wins", "y_wins") for r in rows) == equal

