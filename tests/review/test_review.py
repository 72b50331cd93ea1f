"""Review queue, blind review sheet and tally: real LLMBar pairs and real Shi et al. judge replies."""

from __future__ import annotations

import csv
import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import shared_data, write_jsonl
from swapjudge.cli import app
from swapjudge.core.analysis import analyze_records
from swapjudge.errors import InputError
from swapjudge.reading.records import read_records, records_from_dicts
from swapjudge.review.queue import load_pair_items, review_queue
from swapjudge.review.sheet import load_key, make_sheet, sheet_records, write_sheet

CLI = [sys.executable, "-m", "swapjudge"]
SYSTEMS = ("zeta-sys-one", "omega-sys-two")


def llmbar_pairs(path: Path, n: int = 100) -> Path:
    """The LLMBar Natural set (real answers, expert labels) as a pairs file with two made-up system names."""
    data = json.loads(shared_data("llmbar", "dataset__LLMBar__Natural.json").read_text())[:n]
    rows = [{"item": f"nat-{i}", "prompt": d["input"], "answers": {SYSTEMS[0]: d["output_1"],
                                                                    SYSTEMS[1]: d["output_2"]},
             "label": SYSTEMS[d["label"] - 1]} for i, d in enumerate(data)]
    return write_jsonl(path, rows)


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def fill(sheet: Path, key: Path, out: Path, choose: Any) -> Path:
    """A reviewer: `choose(sheet_row, key_row)` returns left/right/tie."""
    keys = load_key(key)
    rows = read_csv(sheet)
    for row in rows:
        row["choice"] = choose(row, keys[row["task_id"]])
    with out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return out


@pytest.fixture
def sheet_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    pairs = llmbar_pairs(tmp_path / "pairs.jsonl")
    sheet, key = tmp_path / "sheet.csv", tmp_path / "key.csv"
    write_sheet(make_sheet(load_pair_items(pairs), seed=7), sheet, key)
    return pairs, sheet, key


def test_sheet_is_blind_and_shuffled(sheet_files: tuple[Path, Path, Path]) -> None:
    pairs, sheet, key = sheet_files
    text = sheet.read_text(encoding="utf-8")
    for name in SYSTEMS:
        assert name not in text
    assert "nat-" not in text  # item ids stay in the key too
    rows, keys = read_csv(sheet), load_key(key)
    assert len(rows) == 200 and [r["task_id"] for r in rows] == sorted(keys)
    order = [int(keys[r["task_id"]].item.split("-")[1]) for r in rows]
    # ids are given after the shuffle: in id order the items are nowhere near file order, and the two
    # presentations of a pair are rarely neighbours
    assert order != sorted(order)
    assert sum(a == b for a, b in itertools.pairwise(order)) < 10
    # the coin: presentation 1 puts the first system on the left about half the time; presentation 2 swaps it
    firsts = {k.item: k for k in keys.values() if k.presentation == 1}
    seconds = {k.item: k for k in keys.values() if k.presentation == 2}
    assert 30 <= sum(k.left == SYSTEMS[0] for k in firsts.values()) <= 70
    assert all((seconds[i].left, seconds[i].right) == (k.right, k.left) for i, k in firsts.items())
    # the answers on the sheet are the key's systems' answers
    items = {it.item: it for it in load_pair_items(pairs)}
    for row in rows[:20]:
        k = keys[row["task_id"]]
        assert row["answer_left"] == items[k.item].answers[k.left]
        assert row["answer_right"] == items[k.item].answers[k.right]


def test_seed_reproduces_the_sheet(tmp_path: Path, sheet_files: tuple[Path, Path, Path]) -> None:
    pairs, sheet, key = sheet_files
    again = make_sheet(load_pair_items(pairs), seed=7)
    other = make_sheet(load_pair_items(pairs), seed=8)
    write_sheet(again, tmp_path / "s2.csv", tmp_path / "k2.csv")
    assert (tmp_path / "s2.csv").read_bytes() == sheet.read_bytes()
    assert (tmp_path / "k2.csv").read_bytes() == key.read_bytes()
    assert [t.item for t in other.tasks] != [t.item for t in again.tasks]


def test_always_left_reviewer_is_never_consistent(tmp_path: Path, sheet_files: tuple[Path, Path, Path]) -> None:
    _, sheet, key = sheet_files
    filled = fill(sheet, key, tmp_path / "filled.csv", lambda row, k: "left")
    records = records_from_dicts(sheet_records(filled, key, reviewer="lefty"))
    [result] = analyze_records(records)
    assert result.judge == "lefty"
    assert result.outcomes.complete == 100
    assert result.consistency is not None and result.consistency.rate == 0.0
    assert (result.flip_direction.first, result.flip_direction.second) == (100, 0)
    assert result.outcomes.flips_first == 100
    assert not result.gate.passed


def test_labelled_better_reviewer_is_consistent_and_right(tmp_path: Path,
                                                          sheet_files: tuple[Path, Path, Path]) -> None:
    _, sheet, key = sheet_files
    filled = fill(sheet, key, tmp_path / "filled.csv", lambda row, k: "left" if k.left == k.label else "right")
    out = tmp_path / "records.jsonl"
    done = CliRunner().invoke(app, ["review", "tally", str(filled), "--key", str(key), "-o", str(out),
                                    "--reviewer", "expert"])
    assert done.exit_code == 0, done.stderr
    [result] = analyze_records(read_records(out))
    assert result.consistency is not None and result.consistency.rate == 1.0
    assert result.accuracy is not None
    acc = result.accuracy.to_dict()
    assert acc["pairs"] == 100 and acc["both"] == 1.0 and acc["better_first"] == 1.0
    # the labels split both ways in LLMBar, so the win rate is the label share, not 100%
    labels = [k.label for k in load_key(key).values() if k.presentation == 1]
    assert result.win_rate is not None
    assert result.win_rate.a_wins == labels.count(result.win_rate.a)


def bad_sheet(tmp_path: Path, key: Path, sheet: Path, edit: Any) -> Path:
    rows = read_csv(sheet)
    for row in rows:
        row["choice"] = "tie"
    rows = edit(rows)
    out = tmp_path / "bad.csv"
    with out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return out


def start_lines(path: Path) -> list[int]:
    """The physical line each CSV record starts on (answers span lines, so records and lines differ)."""
    with path.open(newline="") as f:
        reader = csv.reader(f)
        out, previous = [], 0
        for _ in reader:
            out.append(previous + 1)
            previous = reader.line_num
    return out


@pytest.mark.parametrize(("edit", "bad_row", "field", "what"), [
    (lambda rows: [*rows[:3], {**rows[3], "task_id": "T9999"}, *rows[4:]], 4, "task_id",
     "unknown task id 'T9999' (not in key.csv)"),
    (lambda rows: [*rows, rows[2]], 201, "task_id", "answered twice by 'reviewer' (first on row 4)"),
    (lambda rows: [*rows[:5], {**rows[5], "choice": ""}, *rows[6:]], 6, "choice", "no answer"),
    (lambda rows: [*rows[:1], {**rows[1], "choice": "maybe"}, *rows[2:]], 2, "choice",
     "'maybe' is not left, right or tie"),
    (lambda rows: rows[:-1], None, "task_id", "1 task(s) of the key are not on the sheet"),
    (lambda rows: [{k: v for k, v in r.items() if k != "choice"} for r in rows], 0, "choice", "missing column"),
])
def test_bad_sheets_are_named_precisely(tmp_path: Path, sheet_files: tuple[Path, Path, Path], edit: Any,
                                        bad_row: int | None, field: str, what: str) -> None:
    _, sheet, key = sheet_files
    bad = bad_sheet(tmp_path, key, sheet, edit)
    with pytest.raises(InputError) as err:
        sheet_records(bad, key)
    # the spreadsheet's row number (header = row 1; an answer with line breaks is still one row)
    where = "" if not bad_row else f" row {bad_row + 1}"
    # every problem is listed (an unknown id also leaves its own task off the sheet): one of them is this one
    lines = [line.strip() for line in str(err.value).splitlines()]
    assert any(line.startswith(f"{bad}{where}: field `{field}`: ") and what in line for line in lines), lines


def test_bad_sheet_through_the_cli_is_one_line_exit_2(tmp_path: Path, sheet_files: tuple[Path, Path, Path]) -> None:
    _, sheet, key = sheet_files
    bad = bad_sheet(tmp_path, key, sheet, lambda rows: [*rows[:1], {**rows[1], "choice": "B"}, *rows[2:]])
    done = subprocess.run([*CLI, "review", "tally", str(bad), "--key", str(key), "-o", str(tmp_path / "r.jsonl")],
                          capture_output=True, text=True)
    assert done.returncode == 2
    task = read_csv(bad)[1]["task_id"]
    assert done.stderr.strip().splitlines() == [
        f"error: {bad} row 3: field `choice`: task {task}: 'B' is not left, right or tie"]
    assert not (tmp_path / "r.jsonl").exists()


def test_sheet_cli_writes_blind_html(tmp_path: Path) -> None:
    pairs = llmbar_pairs(tmp_path / "pairs.jsonl", n=5)
    rows = [json.loads(line) for line in pairs.read_text().splitlines()]
    rows[0]["answers"][SYSTEMS[0]] = "<script>alert(1)</script></table>"
    write_jsonl(pairs, rows)
    sheet, key, page = tmp_path / "s.csv", tmp_path / "k.csv", tmp_path / "s.html"
    done = CliRunner().invoke(app, ["review", "sheet", str(pairs), "-o", str(sheet), "--key", str(key), "--seed", "3",
                                    "--html", str(page)])
    assert done.exit_code == 0, done.stderr
    assert "seed 3" in done.stderr
    html = page.read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/table&gt;" in html and "<script>" not in html
    assert all(name not in html for name in SYSTEMS)
    assert html.count('class="task"') == 10


def test_pairs_file_errors_name_the_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [
        {"item": 1, "prompt": "q", "answers": {"a": "x", "b": "y"}},
        {"item": 2, "prompt": "q", "answers": {"a": "x", "b": "y"}, "label": "c"},
    ])
    with pytest.raises(InputError, match=r"p.jsonl:2: field `label`: names 'c'"):
        load_pair_items(path)
    three = write_jsonl(tmp_path / "3.jsonl", [{"item": 1, "prompt": "q", "answers": {"a": "x", "b": "y", "c": "z"}}])
    with pytest.raises(InputError, match=r"3.jsonl:1: field `answers`: item '1' has 3 answers"):
        make_sheet(load_pair_items(three), seed=1, source=str(three))


def mtbench_with_raw() -> list[dict[str, Any]]:
    """gpt-4-0613 on MT-Bench: the real calls with the judge's full reply as `raw`."""
    rows = []
    with shared_data("shi2024", "MTBench__gpt-4-0613__raw_judgments.jsonl").open() as f:
        for line in f:
            o = json.loads(line)
            rows.append({"judge": o["judge"], "item": o["question_id"], "first": o["model_first"],
                         "second": o["model_second"], "task": o["task"], "raw": o["raw_judgment"],
                         "verdict": {"A": "first", "B": "second", "C": "tie"}.get(o["verdict"])})
    return rows


def test_review_queue_of_real_replies(tmp_path: Path) -> None:
    rows = mtbench_with_raw()
    source = write_jsonl(tmp_path / "calls.jsonl", rows)
    [result] = analyze_records(read_records(source))
    o = result.outcomes
    out = tmp_path / "queue.jsonl"
    done = CliRunner().invoke(app, ["review", "queue", str(source), "-o", str(out)])
    assert done.exit_code == 0, done.stderr
    queue = [json.loads(line) for line in out.read_text().splitlines()]
    # exactly the flips and half-ties of the analysis
    assert len(queue) == o.flips_first + o.flips_second + o.half_ties_first + o.half_ties_second
    assert sum(q["outcome"] == "flip_first" for q in queue) == o.flips_first
    assert sum(q["outcome"] == "half_tie_second" for q in queue) == o.half_ties_second
    by_call = {(r["item"], r["first"], r["second"]): r["raw"] for r in rows}
    for q in queue[:50]:
        assert q["raw_x_first"] == by_call[(q["item"], q["x"], q["y"])]
        assert q["raw_y_first"] == by_call[(q["item"], q["y"], q["x"])]
        if q["outcome"] == "flip_first":
            # both calls named slot 1, so each call named a different system
            assert (q["named_x_first"], q["named_y_first"]) == (q["x"], q["y"])
            assert q["raw_x_first"].rstrip().endswith("[[A]]")
    csv_out = tmp_path / "queue.csv"
    done = CliRunner().invoke(app, ["review", "queue", str(source), "-o", str(csv_out), "--a", "gpt-4", "--b",
                                    "vicuna-13b-v1.3"])
    assert done.exit_code == 0, done.stderr
    table = read_csv(csv_out)
    assert table and all({r["x"], r["y"]} == {"gpt-4", "vicuna-13b-v1.3"} for r in table)


def test_queue_carries_answer_texts_from_a_pairs_file(tmp_path: Path) -> None:
    calls = []
    for i, (vx, vy) in enumerate([("first", "first"), ("first", "second"), ("tie", "second")]):
        calls += [{"item": f"i{i}", "first": "m1", "second": "m2", "verdict": vx, "raw": f"reply m1 first {i}"},
                  {"item": f"i{i}", "first": "m2", "second": "m1", "verdict": vy, "raw": f"reply m2 first {i}"}]
    source = write_jsonl(tmp_path / "calls.jsonl", calls)
    pairs = write_jsonl(tmp_path / "pairs.jsonl", [
        {"item": f"i{i}", "prompt": f"task {i}", "answers": {"m1": f"m1 says {i}", "m2": f"m2 says {i}"}}
        for i in range(3)])
    from swapjudge.review.queue import attach_texts

    queue = review_queue(attach_texts(read_records(source).frame, load_pair_items(pairs))).to_dicts()
    assert [(q["item"], q["outcome"]) for q in queue] == [("i0", "flip_first"), ("i2", "half_tie_second")]
    assert queue[1]["text_x"] == "m1 says 2" and queue[1]["text_y"] == "m2 says 2"
    assert queue[1]["prompt"] == "task 2" and queue[1]["raw_y_first"] == "reply m2 first 2"
    assert (queue[1]["named_x_first"], queue[1]["named_y_first"]) == ("tie", "m1")
