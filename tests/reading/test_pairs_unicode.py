"""A lone surrogate (a JSON escape such as \\udced with no partner: no UTF-8 file, request body or SQLite text can
hold it) is one line naming the file, line and field, exit 2: in a pairs file for `run`, `run --dry-run` and
`review sheet`, before any call is made, and in a records file for `analyze`; before, each of them ended in a
UnicodeEncodeError traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judge_server import JudgeServer
from runner_helpers import write_config
from swapjudge.errors import InputError
from swapjudge.reading.pairs_file import load_pairs

SRC = str(Path(__file__).resolve().parents[2] / "src")
LONE = "\udced"  # what json.loads makes of the escape "\\udced"


def pairs_file(directory: Path, **bad: str) -> Path:
    """Two items; the second gets the `bad` fields (answers.<system> for an answer, "system" for a name)."""
    rows = []
    for i in range(2):
        rows.append({"item": f"q{i}", "prompt": f"Question {i}", "answers": {"good": "yes", "bad": "no"},
                     "label": "good"})
    last = rows[1]
    for field, value in bad.items():
        if field == "system":
            last["answers"][value] = "maybe"
        elif field.startswith("answers."):
            last["answers"][field.split(".", 1)[1]] = value
        else:
            last[field] = value
    path = directory / "pairs.jsonl"
    # json.dumps writes the surrogate as the escape \udced, exactly as the hostile file has it
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert "\\udced" in path.read_text(encoding="utf-8")
    return path


@pytest.mark.parametrize(("bad", "field"), [
    ({"prompt": f"a {LONE} b"}, "prompt"),
    ({"item": f"q{LONE}"}, "item"),
    ({"answers.good": f"yes{LONE}"}, "answers.good"),
    ({"system": f"other{LONE}"}, "answers"),
    ({"label": LONE}, "label"),
])
def test_the_pairs_reader_names_the_line_and_field(tmp_path: Path, bad: dict[str, str], field: str) -> None:
    path = pairs_file(tmp_path, **bad)
    with pytest.raises(InputError) as info:
        load_pairs(path)
    assert str(info.value) == f"{path}:2: field `{field}`: not valid Unicode (lone surrogate)"


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC, "OPENAI_API_KEY": "test-key"}
    return subprocess.run([sys.executable, "-m", "swapjudge", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=120)


def test_run_dry_run_and_review_sheet_say_it_in_one_line(tmp_path: Path) -> None:
    pairs_file(tmp_path, prompt=f"a {LONE} b")
    expected = "error: pairs.jsonl:2: field `prompt`: not valid Unicode (lone surrogate)"
    with JudgeServer() as server:
        config = write_config(tmp_path, base_url=server.openai_url)
        for args in (("run", config.name, "--dry-run"), ("run", config.name, "--no-progress")):
            done = _cli(tmp_path, *args)
            assert (done.returncode, done.stderr.strip()) == (2, expected), done.stderr
        assert server.total == 0  # refused before any call was paid for
    sheet = _cli(tmp_path, "review", "sheet", "pairs.jsonl", "-o", "sheet.csv", "--key", "key.csv")
    assert (sheet.returncode, sheet.stderr.strip()) == (2, expected), sheet.stderr
    assert not (tmp_path / "sheet.csv").exists() and not (tmp_path / "key.csv").exists()


@pytest.mark.parametrize(("record", "field"), [
    ({"item": f"q{LONE}"}, "item"),
    ({"first": f"sys{LONE}"}, "first"),
    ({"raw": {"reply": f"text {LONE}"}}, "raw.reply"),
])
def test_a_records_file_names_the_line_and_field_too(tmp_path: Path, record: dict[str, str], field: str) -> None:
    rows = [{"item": "q1", "first": "a", "second": "b", "verdict": "first"},
            {"item": "q1", "first": "b", "second": "a", "verdict": "second"}]
    rows[1].update(record)
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    done = _cli(tmp_path, "analyze", "records.jsonl")
    assert (done.returncode, done.stderr.strip()) == (
        2, f"error: records.jsonl:2: field `{field}`: not valid Unicode (lone surrogate)"), done.stderr
    # a surrogate pair (an emoji written as two escapes) is a valid character and reads as one
    rows[1] = {"item": "q1", "first": "b", "second": "a", "verdict": "second", "note": "\U0001f600"}
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert "\\ud83d\\ude00" in path.read_text(encoding="utf-8")
    assert _cli(tmp_path, "analyze", "records.jsonl").returncode == 0
