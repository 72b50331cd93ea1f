"""`swapjudge import promptfoo-select-best | deepeval-arena | langwatch`: best-of-N files of other harnesses, in
their own schemas (tests/fixtures/importers), as listwise records; every expected value is read back from the
fixture itself. A file that does not record the order shown says so in one line and its analysis gives no slot
figure."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from test_import_promptfoo_listwise import three_outputs
from typer.testing import CliRunner

from swapjudge.cli import app
from swapjudge.importers import import_files
from swapjudge.reading.listwise import load_listwise

FIXTURES = Path(__file__).parents[1] / "fixtures" / "importers"
DEEPEVAL = FIXTURES / "deepeval" / "arena_experiment.json"
LANGWATCH = FIXTURES / "langwatch" / "log_results.jsonl"
UNORDERED = FIXTURES / "langwatch" / "unordered.json"


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def test_deepeval_arena_winners_and_the_order_not_recorded(tmp_path: Path) -> None:
    experiment = json.loads(DEEPEVAL.read_text(encoding="utf-8"))
    # the winner of each arena test case, from the file: the contestant scored 1 (none where the metric errored)
    winners: dict[int, list[str]] = defaultdict(list)
    names = sorted(run["identifier"] for run in experiment["testRuns"])
    for run in experiment["testRuns"]:
        for case in run["testCases"]:
            if case["metricsData"][0].get("score") == 1:
                winners[case["order"]].append(run["identifier"])
    result = import_files("deepeval-arena", [DEEPEVAL])
    records = sorted(result.records, key=lambda r: r["item"])
    assert [r["item"] for r in records] == [f"test_case_{i}" for i in range(4)]
    for i, record in enumerate(records):
        assert record["slots"] == names and record["order_shown"] is False
        picked = None if record["pick"] is None else record["slots"][record["pick"] - 1]
        assert picked == (winners[i][0] if len(winners[i]) == 1 else None)
        assert record["judge"] == "Helpfulness [Arena GEval]/gpt-4.1-mini"
    assert [a.kind for a in result.awkward] == ["null_verdict"] and "invalid JSON" in result.awkward[0].reason
    assert result.reports[0].notes == ("DeepEval ArenaGEval does not record the order in which the judge saw the "
                                       "answers: the records are single-rotation data with `order_shown: false`, "
                                       "and no slot figure can be measured",)
    out = tmp_path / "arena.jsonl"
    done = _invoke("import", "deepeval-arena", str(DEEPEVAL), "-o", str(out))
    assert done.exit_code == 0, done.output
    assert sum(line.startswith("note: DeepEval ArenaGEval does not record the order") for line in
               done.stderr.splitlines()) == 1
    analysed = _invoke("analyze", str(out), "--format", "json", "--min-consistency", "0")
    body = json.loads(analysed.stdout)["listwise"]
    assert body["slot_share"] is None and body["slot_test"]["p_value"] is None
    assert "order_shown: false" in body["slot_audit_withheld"] and body["slot_effects"] is None
    # one call per item: no item has two calls, so winner consistency is not measured either
    assert body["consistency"]["items"] == 0
    text = _invoke("analyze", str(out), "--min-consistency", "0")
    assert "slot audit: not measured: the records do not say in which order" in text.stdout
    assert "slot pick share" not in text.stdout


def test_langwatch_best_of_n_rows(tmp_path: Path) -> None:
    bodies = [json.loads(line) for line in LANGWATCH.read_text(encoding="utf-8").splitlines()]
    evaluations = [e for b in bodies for e in b["evaluations"]]
    entries = {d["index"]: d["entry"] for b in bodies for d in b["dataset"]}
    best = [e for e in evaluations if "slots" in e["inputs"]]
    result = import_files("langwatch", [LANGWATCH])
    assert len(result.records) == len(best) == 9
    for record, evaluation in zip(result.records, best, strict=True):
        assert record["slots"] == evaluation["inputs"]["slots"] and "order_shown" not in record
        assert record["item"] == entries[evaluation["index"]]["id"]
        chosen = evaluation.get("label") if evaluation["status"] == "processed" else None
        assert (record["slots"][record["pick"] - 1] if record["pick"] else None) == chosen
    kinds = sorted(a.kind for a in result.awkward)
    assert kinds == ["null_verdict", "skipped"]  # the errored call; the exact_match evaluation
    assert result.reports[0].notes == ()
    out = tmp_path / "lw.jsonl"
    assert _invoke("import", "langwatch", str(LANGWATCH), "-o", str(out)).exit_code == 0
    calls = load_listwise(out).calls
    # the file's own rotations: each of q0..q2 shown in three orders, each system once in each slot
    for item in ("q0", "q1", "q2"):
        orders = [c.slots for c in calls if c.item == item]
        assert sorted({(s, k) for o in orders for k, s in enumerate(o)}) == sorted(
            (s, k) for s in ("v1", "v2", "base") for k in range(3))
    body = json.loads(_invoke("analyze", str(out), "--format", "json", "--min-consistency", "0").stdout)
    consistency = body["listwise"]["consistency"]
    # q0 picked v2 every time; q1 has a call without a pick (left out); q2 picked v1 once and v2 twice
    assert (consistency["consistent"], consistency["items"], consistency["incomplete"]) == (1, 2, 1)
    assert body["listwise"]["slot_share"] is not None


def test_langwatch_candidates_without_their_order(tmp_path: Path) -> None:
    result = import_files("langwatch", [UNORDERED])
    assert {r["order_shown"] for r in result.records} == {False}
    assert all(r["slots"] == ["claude-4", "gemini-2.5", "gpt-4.1"] for r in result.records)
    picks = [r["slots"][r["pick"] - 1] for r in result.records]
    assert picks == [e["label"] for e in json.loads(UNORDERED.read_text(encoding="utf-8"))["evaluations"]]
    assert len(result.reports[0].notes) == 1 and "does not record the order" in result.reports[0].notes[0]


def test_promptfoo_select_best_is_an_import_format(tmp_path: Path) -> None:
    path = three_outputs(tmp_path)
    out = tmp_path / "pf.jsonl"
    done = _invoke("import", "promptfoo-select-best", str(path), "-o", str(out))
    assert done.exit_code == 0, done.output
    assert "one rotation" in done.stderr
    records = load_listwise(out)
    assert len(records) == 6 and {c.slots for c in records.calls} == {("model-a", "model-b", "model-c")}


def test_listwise_records_are_not_written_as_csv(tmp_path: Path) -> None:
    done = _invoke("import", "langwatch", str(LANGWATCH), "-o", str(tmp_path / "lw.csv"))
    assert done.exit_code == 2
    assert "listwise records" in done.output and not (tmp_path / "lw.csv").exists()
