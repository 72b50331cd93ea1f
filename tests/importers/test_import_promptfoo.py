"""`swapjudge import promptfoo` on a results file written by a real promptfoo run (promptfoo 0.121.20, the
select-best grader served by a local OpenAI-compatible server; tests/fixtures/importers/README.md): records,
the pairing of both orders, and analyze's figures against the grader's known choices."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from swapjudge.cli import app
from swapjudge.core.analysis import analyze_records
from swapjudge.importers import import_files
from swapjudge.reading.records import records_from_dicts

RESULTS = Path(__file__).parents[1] / "fixtures" / "importers" / "promptfoo" / "results.json"


def test_select_best_both_orders_become_pairs() -> None:
    res = import_files("promptfoo", [RESULTS])
    calls = {(r["item"], r["first"], r["second"]): r["verdict"] for r in res.records}
    x, y = "model-x", "model-y"
    # the grader picked the answer marked CORRECT (q1, q3, q5, q6: model-x; q2, q4: model-y), except that on q5
    # it picked index 0 whatever sat there, and on q6 it replied "maybe" (no verdict)
    assert calls == {
        ("q1", x, y): "first", ("q1", y, x): "second", ("q2", x, y): "second", ("q2", y, x): "first",
        ("q3", x, y): "first", ("q3", y, x): "second", ("q4", x, y): "second", ("q4", y, x): "first",
        ("q5", x, y): "first", ("q5", y, x): "first", ("q6", x, y): None, ("q6", y, x): None,
    }
    assert {r["judge"] for r in res.records} == {"openai:chat:judge"}
    assert [a.kind for a in res.awkward] == ["null_verdict", "null_verdict"]
    assert all("Invalid select-best verdict" in a.reason for a in res.awkward)
    out = analyze_records(records_from_dicts(res.records), a=x, b=y)[0].to_dict()
    assert out["pairs"] == {"total": 6, "complete": 5, "incomplete": 1}
    assert out["consistency"]["rate"] == 0.8 and out["outcomes"]["flips_first"] == 1
    # half credit over the 5 complete pairs: x wins q1, q3; y wins q2, q4; q5 is a split
    assert out["win_rate"]["value"] == 0.5


def test_cli_imports_promptfoo_and_rejects_a_non_results_file(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "records.jsonl"
    res = runner.invoke(app, ["import", "promptfoo", str(RESULTS), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "promptfoo: 12 rows -> 12 records, 2 null verdict" in res.stderr
    assert len(out.read_text(encoding="utf-8").splitlines()) == 12
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"prompts": []}), encoding="utf-8")
    res = runner.invoke(app, ["import", "promptfoo", str(bad), "-o", str(out)])
    assert res.exit_code == 2
    assert "not a promptfoo results file" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_outputs_named_by_provider_when_no_ids_are_given(tmp_path: Path) -> None:
    data = json.loads(RESULTS.read_text(encoding="utf-8"))
    rows = [r for r in data["results"]["results"] if r["testIdx"] == 0]
    for r in rows:  # the other config shape: one prompt, two providers, no first_id/second_id vars
        r["promptIdx"] = 0
        r["provider"] = {"id": "openai:gpt-x" if r["prompt"]["label"] == "slot1" else "openai:gpt-y", "label": ""}
        r["vars"] = {k: v for k, v in r["vars"].items() if k not in ("first_id", "second_id")}
        r["testCase"]["vars"] = r["vars"]
    rows.sort(key=lambda r: r["prompt"]["label"])  # file order = provider order
    data["results"]["results"] = rows
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    res = import_files("promptfoo", [path])
    assert [(r["first"], r["second"], r["verdict"]) for r in res.records] == [("openai:gpt-x", "openai:gpt-y",
                                                                             "first")]


def test_pairwise_llm_rubric_both_orders_and_an_unreadable_grader_reply_is_null() -> None:
    res = import_files("promptfoo", [RESULTS.with_name("rubric_results.json")])
    calls = {(r["item"], r["first"], r["second"]): r["verdict"] for r in res.records}
    x, y = "model-x", "model-y"
    # the rubric says Answer A (shown first) is the better; the grader passes it when it holds, except that on
    # q5 it always passes (slot preference), and on q6 its reply is prose promptfoo cannot read: a failed
    # assertion in promptfoo's file, a null verdict here (not "second")
    assert calls == {
        ("q1", x, y): "first", ("q1", y, x): "second", ("q2", x, y): "second", ("q2", y, x): "first",
        ("q3", x, y): "first", ("q3", y, x): "second", ("q4", x, y): "second", ("q4", y, x): "first",
        ("q5", x, y): "first", ("q5", y, x): "first", ("q6", x, y): None, ("q6", y, x): None,
    }
    assert [a.reason for a in res.awkward] == ["grader gave no verdict (Could not extract JSON from llm-rubric "
                                               "response)"] * 2
    out = analyze_records(records_from_dicts(res.records), a=x, b=y)[0].to_dict()
    assert out["consistency"]["rate"] == 0.8 and out["pairs"]["incomplete"] == 1


def test_llm_rubric_on_a_single_output_is_skipped(tmp_path: Path) -> None:
    data = json.loads(RESULTS.with_name("rubric_results.json").read_text(encoding="utf-8"))
    for r in data["results"]["results"]:
        r["vars"].pop("first_id")
        r["testCase"]["vars"] = r["vars"]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    res = import_files("promptfoo", [path])
    assert not res.records
    assert {a.kind for a in res.awkward} == {"skipped"} and len(res.awkward) == 12
