"""End to end on real LLMBar texts and labels: a judge that always picks the longer answer is perfectly
swap-consistent, the length probe exposes it, and the labels show what the consistency hides."""

import json

from typer.testing import CliRunner

from conftest import pair, shared_data, write_jsonl
from swapjudge.cli import app

runner = CliRunner()


def test_a_length_judge_on_llmbar_natural_is_consistent_but_not_accurate(tmp_path):
    data = json.loads(shared_data("llmbar", "dataset__LLMBar__Natural.json").read_text())
    pairs_rows, records = [], []
    longer_is_better = 0
    for i, row in enumerate(data):
        one, two = row["output_1"], row["output_2"]
        if len(one) == len(two):
            continue
        label = "output_1" if row["label"] == 1 else "output_2"
        pairs_rows.append({"item": i, "prompt": row["input"], "answers": {"output_1": one, "output_2": two},
                           "label": label})
        longer = "output_1" if len(one) > len(two) else "output_2"
        longer_is_better += longer == label
        # the judge names the longer answer in both orders: verdicts are positional
        records += (pair(i, "first", "second", a="output_1", b="output_2") if longer == "output_1"
                    else pair(i, "second", "first", a="output_1", b="output_2"))
    n = len(pairs_rows)
    pairs_file = write_jsonl(tmp_path / "pairs.jsonl", pairs_rows)
    rec = write_jsonl(tmp_path / "records.jsonl", records)

    out = runner.invoke(app, ["probe", "length", str(rec), "--pairs", str(pairs_file), "--threshold", "0",
                              "--format", "json"])
    assert out.exit_code == 0, out.output
    probe = json.loads(out.output)
    assert probe["pairs"] == n == 99
    assert (probe["prefer_longer"]["k"], probe["prefer_longer"]["n"]) == (n, n)
    assert probe["slope"]["slope"] is None and probe["slope"]["reason"].startswith("no finite slope")

    out = runner.invoke(app, ["agreement", str(rec), "--labels", str(pairs_file), "--format", "json"])
    assert out.exit_code == 0, out.output
    agreement = json.loads(out.output)
    assert agreement["consistency"]["rate"] == 1.0
    assert agreement["accuracy"]["pairs"] == n
    assert agreement["accuracy"]["both"] == longer_is_better / n == 56 / 99
