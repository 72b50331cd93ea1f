"""The review loop through real spreadsheet habits: semicolons and Windows-1252, blank trailing rows, half-filled
sheets, one sheet per reviewer, and a sheet of only the pairs a judge could not settle."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_review import SYSTEMS, llmbar_pairs

from conftest import write_jsonl
from swapjudge.core.analysis import analyze_records
from swapjudge.reading.records import read_records, records_from_dicts
from swapjudge.review.queue import load_pair_items
from swapjudge.review.sheet import SheetProblems, load_key, make_sheet, sheet_records, tally_sheets, write_sheet

CLI = [sys.executable, "-m", "swapjudge"]


@pytest.fixture
def sheet_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    pairs = llmbar_pairs(tmp_path / "pairs.jsonl", n=20)
    sheet, key = tmp_path / "sheet.csv", tmp_path / "key.csv"
    write_sheet(make_sheet(load_pair_items(pairs), seed=11), sheet, key)
    return pairs, sheet, key


def sheet_rows(sheet: Path) -> list[dict[str, str]]:
    with sheet.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def better(key: Path) -> Any:
    """A reviewer who always picks the expert-labelled better answer."""
    keys = load_key(key)
    return lambda row: "left" if keys[row["task_id"]].left == keys[row["task_id"]].label else "right"


def save_as(path: Path, rows: list[dict[str, str]], *, delimiter: str = ",", encoding: str = "utf-8",
            header_case: Any = str, trailing_blank: int = 0) -> Path:
    """Write rows as a spreadsheet would save them."""
    buffer = io.StringIO(newline="")
    names = list(rows[0])
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\r\n")
    writer.writerow([header_case(n) for n in names])
    for row in rows:
        writer.writerow([row[n] for n in names])
    for _ in range(trailing_blank):
        writer.writerow([""] * len(names))
    path.write_bytes(buffer.getvalue().encode(encoding, errors="replace"))
    return path


def filled(sheet: Path, key: Path, choose: Any, keep: Any = lambda i: True) -> list[dict[str, str]]:
    rows = sheet_rows(sheet)
    for i, row in enumerate(rows):
        row["choice"] = choose(row) if keep(i) else ""
    return rows


def test_semicolon_cp1252_sheet_round_trip(tmp_path: Path, sheet_files: tuple[Path, Path, Path]) -> None:
    """Excel in a comma-decimal locale: `;` separators, Windows-1252 bytes, a title-case header, a comment with
    an accented word. The tally equals the one of the clean UTF-8 sheet, and says what it guessed."""
    _, sheet, key = sheet_files
    rows = filled(sheet, key, better(key))
    rows[0]["comment"] = "réponse claire, très bien"
    clean = save_as(tmp_path / "clean.csv", rows)
    excel = save_as(tmp_path / "excel.csv", rows, delimiter=";", encoding="cp1252", header_case=str.title)
    assert b";" in excel.read_bytes().split(b"\r\n")[0] and b"\xe9" in excel.read_bytes()
    expected = sheet_records(clean, key)
    result = tally_sheets([excel], key)
    got = list(result.records)
    # answers with characters outside cp1252 were replaced by the spreadsheet, but the verdicts are the same
    assert [(r["item"], r["first"], r["verdict"]) for r in got] == [(r["item"], r["first"], r["verdict"])
                                                                  for r in expected]
    assert got[0]["comment"] == "réponse claire, très bien"
    assert len(result.warnings) == 1 and "cp1252" in result.warnings[0]
    [analysis] = analyze_records(records_from_dicts(got), a=SYSTEMS[0], b=SYSTEMS[1])
    assert analysis.consistency.rate == 1.0 and analysis.accuracy.to_dict()["both"] == 1.0
    # through the CLI: one warning line on stderr, records written
    out = tmp_path / "excel.jsonl"
    done = subprocess.run([*CLI, "review", "tally", str(excel), "--key", str(key), "-o", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sum(line.startswith("warning:") for line in done.stderr.splitlines()) == 1
    assert len(read_records(out)) == 40


def test_tab_separated_utf8_bom_and_blank_rows(tmp_path: Path, sheet_files: tuple[Path, Path, Path]) -> None:
    _, sheet, key = sheet_files
    rows = filled(sheet, key, better(key))
    expected = sheet_records(sheet_with := save_as(tmp_path / "plain.csv", rows), key)
    assert sheet_with.exists()
    tsv = save_as(tmp_path / "bom.csv", rows, delimiter="\t", encoding="utf-8-sig", header_case=str.upper,
                  trailing_blank=5)
    text = tsv.read_bytes()
    assert text.startswith(b"\xef\xbb\xbf") and text.endswith(b"\t\t\t\t\t\t\r\n")
    result = tally_sheets([tsv], key)
    assert list(result.records) == expected and result.warnings == ()
    # a blank row between blocks is ignored too
    semi = save_as(tmp_path / "gap.csv", [*rows[:10], dict.fromkeys(rows[0], ""), *rows[10:]], delimiter=";")
    assert list(tally_sheets([semi], key).records) == expected


def test_every_problem_at_once_with_spreadsheet_rows(tmp_path: Path, sheet_files: tuple[Path, Path, Path]) -> None:
    _, sheet, key = sheet_files
    rows = filled(sheet, key, better(key))
    rows[2]["choice"] = "maybe"
    rows[7]["choice"] = ""
    rows[30]["task_id"] = "T9999"
    bad = save_as(tmp_path / "bad.csv", rows)
    with pytest.raises(SheetProblems) as err:
        sheet_records(bad, key)
    found = [(p.row, p.field) for p in err.value.problems]
    # data row i is spreadsheet row i + 2 (the header is row 1), whatever line breaks the answers hold
    assert found == [(4, "choice"), (9, "choice"), (32, "task_id"), (None, "task_id")]
    lines = str(err.value).splitlines()
    assert lines[0] == "4 problems in the filled sheet(s):"
    assert lines[1] == f"  {bad} row 4: field `choice`: task {rows[2]['task_id']}: 'maybe' is not left, right or tie"
    physical = bad.read_bytes().count(b"\n")
    assert physical > 41  # the answers span lines, so the physical lines are not the rows
    done = subprocess.run([*CLI, "review", "tally", str(bad), "--key", str(key), "-o", str(tmp_path / "r.jsonl")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0] == "error: 4 problems in the filled sheet(s):"
    assert len(done.stderr.splitlines()) == 5 and not (tmp_path / "r.jsonl").exists()


def test_half_filled_sheet(tmp_path: Path, sheet_files: tuple[Path, Path, Path]) -> None:
    _, sheet, key = sheet_files
    rows = filled(sheet, key, better(key), keep=lambda i: i < 25)
    half = save_as(tmp_path / "half.csv", rows[:33])  # 25 answered, 8 blank, 7 tasks not on the sheet at all
    with pytest.raises(SheetProblems) as err:
        sheet_records(half, key)
    assert len(err.value.problems) == 9  # 8 blank choices and the missing tasks
    result = tally_sheets([half], key, allow_partial=True)
    assert len(result.records) == 25
    unanswered = sorted(t for _, _, t in result.unanswered)
    assert unanswered == sorted([r["task_id"] for r in rows[25:]])
    out = tmp_path / "half.jsonl"
    done = subprocess.run([*CLI, "review", "tally", str(half), "--key", str(key), "-o", str(out), "--allow-partial"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stderr.splitlines() if x.startswith("unanswered by reviewer: 15 task(s): "))
    assert line.removeprefix("unanswered by reviewer: 15 task(s): ").split(", ") == unanswered
    # the pairs with one order answered are incomplete, not an error, when analysed as such
    records = read_records(out, allow_unpaired=True)
    [analysis] = analyze_records(records)
    assert analysis.outcomes.complete + analysis.outcomes.incomplete == analysis.outcomes.total
    assert analysis.outcomes.complete * 2 + analysis.outcomes.incomplete == 25


def test_one_sheet_per_reviewer_into_one_records_file(tmp_path: Path, sheet_files: tuple[Path, Path, Path]) -> None:
    _, sheet, key = sheet_files
    alice = save_as(tmp_path / "alice.csv", filled(sheet, key, better(key)), delimiter=";")
    bob = save_as(tmp_path / "bob.csv", filled(sheet, key, lambda row: "left"))
    out = tmp_path / "people.jsonl"
    done = subprocess.run([*CLI, "review", "tally", str(alice), str(bob), "--key", str(key), "-o", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "(alice, bob)" in done.stderr
    by_judge = {a.judge: a for a in analyze_records(read_records(out), a=SYSTEMS[0], b=SYSTEMS[1])}
    assert set(by_judge) == {"alice", "bob"}
    assert by_judge["alice"].consistency.rate == 1.0 and by_judge["bob"].consistency.rate == 0.0
    assert by_judge["bob"].flip_direction.first == 20  # always left: every pair splits toward slot 1


def test_sheet_of_flipped_pairs_only(tmp_path: Path) -> None:
    """A judge that picks the first slot on every third item flips exactly there: the sheet holds those pairs."""
    pairs = llmbar_pairs(tmp_path / "pairs.jsonl", n=30)
    items = load_pair_items(pairs)
    calls, unsettled = [], set()
    for n, it in enumerate(items):
        for first, second in ((SYSTEMS[0], SYSTEMS[1]), (SYSTEMS[1], SYSTEMS[0])):
            verdict = "first" if n % 3 == 0 else ("first" if first == it.label else "second")
            calls.append({"judge": "j", "item": it.item, "first": first, "second": second, "verdict": verdict})
        if n % 3 == 0:
            unsettled.add(it.item)
    records = write_jsonl(tmp_path / "calls.jsonl", calls)
    sheet, key = tmp_path / "s.csv", tmp_path / "k.csv"
    done = subprocess.run([*CLI, "review", "sheet", str(pairs), "--flipped", str(records), "-o", str(sheet), "--key",
                           str(key), "--seed", "5"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "wrote 20 tasks (10 unsettled pairs)" in done.stderr
    keyed = load_key(key)
    assert {k.item for k in keyed.values()} == unsettled and len(keyed) == 20
    assert all(name not in sheet.read_text() for name in SYSTEMS)  # still blind
    # the key's label survives, so people's answers can be scored against it
    assert all(k.label in SYSTEMS for k in keyed.values())
    # a judge that settled everything: nothing to review, said plainly
    settled = write_jsonl(tmp_path / "settled.jsonl", [c for c in calls if c["item"] not in unsettled])
    quiet = subprocess.run([*CLI, "review", "sheet", str(pairs), "--flipped", str(settled), "-o", str(sheet),
                            "--key", str(key)], capture_output=True, text=True)
    assert quiet.returncode == 0 and "settled every pair" in quiet.stderr


def test_flipped_needs_one_judge(tmp_path: Path) -> None:
    pairs = llmbar_pairs(tmp_path / "pairs.jsonl", n=3)
    rows = [{"judge": j, "item": "nat-0", "first": f, "second": s, "verdict": "first"}
            for j in ("j1", "j2") for f, s in ((SYSTEMS[0], SYSTEMS[1]), (SYSTEMS[1], SYSTEMS[0]))]
    records = write_jsonl(tmp_path / "two.jsonl", rows)
    done = subprocess.run([*CLI, "review", "sheet", str(pairs), "--flipped", str(records), "-o",
                           str(tmp_path / "s.csv"), "--key", str(tmp_path / "k.csv")], capture_output=True, text=True)
    assert done.returncode == 2 and "choose one with --judge" in done.stderr
    one = subprocess.run([*CLI, "review", "sheet", str(pairs), "--flipped", str(records), "--judge", "j2", "-o",
                          str(tmp_path / "s.csv"), "--key", str(tmp_path / "k.csv")], capture_output=True, text=True)
    assert one.returncode == 0 and "wrote 2 tasks (1 unsettled pairs)" in one.stderr
