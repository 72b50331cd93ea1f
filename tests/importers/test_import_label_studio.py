"""`swapjudge import label-studio`: a Label Studio Pairwise project's JSON export as presentation records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from review_server import ENV
from swapjudge.importers import import_files
from swapjudge.reading.pairs_file import PairItem
from swapjudge.review.assign import plan_review
from swapjudge.review.export import export_review, review_records
from swapjudge.review.votes import ReviewStore


def _annotation(result: list[dict], **extra: object) -> dict:
    # the fields Label Studio writes for an annotation (docs: "Label Studio JSON format of annotated tasks")
    return {"id": 1001, "result": result, "was_cancelled": False, "ground_truth": False,
            "created_at": "2021-03-09T22:16:08.728353Z", "lead_time": 4.288, "result_count": 0, "task": 1,
            "completed_by": 10, **extra}


def _pick(side: str) -> dict:
    return {"from_name": "pw", "id": "Dx_aB91ISN", "to_name": "text1", "type": "pairwise",
            "value": {"selected": side}}


def _export(tmp_path: Path) -> Path:
    data = {"text1": "left text", "text2": "right text", "first_id": "v1", "second_id": "v2"}
    tasks = [
        {"id": 1, "data": {**data, "item": "q1"}, "annotations": [_annotation([_pick("left")]),
                                                               _annotation([_pick("right")], completed_by=11)]},
        {"id": 2, "data": {**data, "item": "q1", "first_id": "v2", "second_id": "v1"},
         "annotations": [_annotation([_pick("right")])]},
        {"id": 3, "data": {**data, "item": "q2"}, "annotations": [_annotation(
            [{"from_name": "no_preference", "to_name": "text1", "type": "choices", "value": {"choices": ["Tie"]}}],
            completed_by={"id": 12, "email": "ann@example.org"})]},
        {"id": 4, "data": {**data, "item": "q3"}, "annotations": [_annotation([_pick("left")], was_cancelled=True)]},
        {"id": 5, "data": {**data, "item": "q4"}, "annotations": []},
        {"id": 6, "data": {"text1": "x", "text2": "y"}, "annotations": [_annotation([_pick("left")])]},
        {"id": 7, "data": {**data, "item": "q5"}, "annotations": [_annotation([])]},
        {"id": 8, "data": {**data, "item": "q6"}, "annotations": [_annotation([_pick("left"), {
            "type": "choices", "value": {"choices": ["both_bad"]}}])]},
    ]
    path = tmp_path / "project.json"
    path.write_text(json.dumps(tasks))
    return path


def test_a_pairwise_project_export_becomes_records_and_every_awkward_row_is_named(tmp_path: Path) -> None:
    result = import_files("label-studio", [_export(tmp_path)])
    got = [(r["judge"], r["item"], r["first"], r["second"], r["verdict"]) for r in result.records]
    assert got == [
        ("human:10", "q1", "v1", "v2", "first"),
        ("human:11", "q1", "v1", "v2", "second"),
        ("human:10", "q1", "v2", "v1", "second"),  # both of human:10's calls name v1: a consistent pair
        ("human:ann@example.org", "q2", "v1", "v2", "tie"),
        ("human:10", "q5", "v1", "v2", None),
        ("human:10", "q6", "v1", "v2", None),
    ]
    assert result.records[0]["seconds"] == 4.288 and result.records[0]["task_id"] == 1
    kinds = {(a.location.split("[", 1)[1], a.kind) for a in result.awkward}
    assert ("3].annotations[0]", "skipped") in kinds  # cancelled
    assert ("4]", "skipped") in kinds  # not labelled yet
    assert ("5]", "error") in kinds  # no identities
    assert ("6].annotations[0]", "null_verdict") in kinds  # nothing selected
    assert ("7].annotations[0]", "null_verdict") in kinds  # left and both bad at once


def test_review_export_round_trips_through_the_importer(tmp_path: Path) -> None:
    items = [PairItem(f"q{i}", f"p{i}", {"A": f"a{i}", "B": f"b{i}"}, None, i + 1) for i in range(10)]
    store, _ = ReviewStore.create_or_resume(tmp_path / "r.db", lambda: plan_review(items, ["ann", "ben"], seed=4,
                                                                                   reshow=0.4, overlap=2), {})
    choices = ["1", "2", "tie", "both_bad"]
    n = 0
    for name in ("ann", "ben"):
        while (task := store.next_task(name)) is not None:
            store.vote(name, task.task, choices[n % 4])
            n += 1
    store.close()
    out = tmp_path / "ls.json"
    export_review(tmp_path / "r.db", out, format="label-studio")
    records = tmp_path / "back.jsonl"
    done = subprocess.run([sys.executable, "-m", "swapjudge", "import", "label-studio", str(out), "-o", str(records)],
                          capture_output=True, text=True, env=ENV)
    assert done.returncode == 0, done.stderr
    back = [json.loads(line) for line in records.read_text().splitlines()]
    keys = ("judge", "item", "first", "second", "verdict", "choice", "origin", "reshow")
    assert [{k: r[k] for k in keys} for r in back] == [{k: r[k] for k in keys} for r in review_records(
        tmp_path / "r.db")]
