"""`swapjudge import` through the real command line (typer's runner on the real app)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import shared_data
from swapjudge.cli import app

FIX = Path(__file__).parents[1] / "fixtures" / "importers"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_help_lists_every_format_and_its_options(runner: CliRunner) -> None:
    res = runner.invoke(app, ["import", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    for name in ("fastchat", "arena-hard", "judgebench", "llmbar", "alpaca-eval", "shi2024", "inspect", "promptfoo",
                 "csv"):
        assert f"{name}:" in res.output
    assert "--round first|last" in res.output and "--map" in res.output and "--per-call" in res.output
    assert "--keep COL" in res.output and "--seed" in res.output


def test_import_writes_records_and_reports_awkward_rows(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "fc.jsonl"
    source = FIX / "fastchat" / "gpt-4_pair.jsonl"
    res = runner.invoke(app, ["import", "fastchat", str(source), "-o", str(out)])
    assert res.exit_code == 0, res.output
    lines = res.stderr.splitlines()
    assert lines[0].endswith("fastchat: 10 rows -> 11 records, 2 error, 1 skipped, 1 null verdict, "
                             "1 game missing, 2 duplicate")
    assert any(line.strip().endswith("gpt-4_pair.jsonl:7: not valid JSON (Expecting ':' delimiter)")
               for line in lines)
    assert any("gpt-4_pair.jsonl:8: g2_winner absent" in line for line in lines)
    assert lines[-1] == f"wrote 11 records to {out}"
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 11
    assert {r["judge"] for r in records} == {"gpt-4/pair-v2", "gpt-4/pair-v2-multi-turn"}
    # the records are analysable as they are (the lonely game needs --allow-unpaired, as the note says)
    assert any("--allow-unpaired" in line for line in lines)
    analysed = runner.invoke(app, ["analyze", str(out), "--allow-unpaired", "--judge", "gpt-4/pair-v2",
                                   "--format", "json"])
    assert analysed.exit_code in (0, 1), analysed.output
    result = json.loads(analysed.stdout)
    assert result["pairs"] == {"total": 5, "complete": 3, "incomplete": 2}
    assert result["outcomes"]["consistent"] == 2 and result["outcomes"]["flips_first"] == 1


def test_max_listed_and_full_report(runner: CliRunner, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    res = runner.invoke(app, ["import", "arena-hard", str(FIX / "arena_hard" / "gpt-4.1" / "model-x.jsonl"),
                              "-o", str(tmp_path / "ah.jsonl"), "--max-listed", "1", "--report", str(report)])
    assert res.exit_code == 0, res.output
    assert "... and 2 more (--report FILE lists them all)" in res.stderr
    data = json.loads(report.read_text())
    assert data["records"] == 11
    assert data["files"][0]["counts"] == {"error": 1, "null_verdict": 3, "game_missing": 1}
    assert len(data["files"][0]["awkward"]) == 5


def test_per_call_view_prints_the_published_figures(runner: CliRunner) -> None:
    csv = shared_data("shi2024", "verdicts_both_orders.csv")
    res = runner.invoke(app, ["import", "shi2024", str(csv), "--per-call", "--format", "json"])
    assert res.exit_code == 0, res.output
    rows = {r["judge"]: r for r in json.loads(res.stdout)}
    figures = {judge: (r["consistent"], r["parsed_calls"]) for judge, r in rows.items()}
    assert figures["MTBench/gpt-4-0613"] == (3914, 4800)
    assert figures["MTBench/gemini-pro"] == (2751, 4787)
    text = runner.invoke(app, ["import", "shi2024", str(csv), "--per-call"], env={"COLUMNS": "160"})
    assert "MTBench/gpt-4-0613" in text.stdout and "81.54%" in text.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["fastchat", "nope.jsonl", "-o", "x.jsonl"], "error: nope.jsonl: no such file"),
    (["fastchat", "F", "-o", "x.jsonl", "--baseline", "gpt-4"],
     "--baseline does not apply to format fastchat"),
    (["fastchat", "F", "-o", "x.jsonl", "--round", "last"], "--round does not apply to format fastchat"),
    (["llmbar", "F", "-o", "x.jsonl", "--round", "middle"], "--round must be first or last for llmbar"),
    (["mtbench", "F", "-o", "x.jsonl"], "unknown import format 'mtbench'; known: fastchat, arena-hard"),
    (["fastchat", "F"], "give -o RECORDS.jsonl (or --per-call"),
    (["csv", "F", "-o", "x.jsonl", "--item", "q"], "format csv needs --first, --second, --verdict, --map"),
])
def test_user_errors_are_one_line_exit_2(runner: CliRunner, tmp_path: Path, args: list[str],
                                         message: str) -> None:
    args = [str(FIX / "fastchat" / "gpt-4_pair.jsonl") if a == "F" else a for a in args]
    args = [str(tmp_path / a) if a == "x.jsonl" else a for a in args]
    res = runner.invoke(app, ["import", *args], env={"COLUMNS": "300"})
    assert res.exit_code == 2, res.output
    assert message in res.stderr
    assert "Traceback" not in res.output and len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.jsonl").exists()


def test_failed_import_leaves_an_existing_output_untouched(runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "records.jsonl"
    out.write_text('{"keep": true}\n')
    bad = tmp_path / "bad.csv"
    bad.write_text("q,a\n1,2\n")
    res = runner.invoke(app, ["import", "shi2024", str(bad), "-o", str(out)])
    assert res.exit_code == 2
    assert "missing columns benchmark, judge, question_id, model_first, model_second, verdict" in res.stderr
    assert out.read_text() == '{"keep": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "records.jsonl"]
