"""Issue-17 importer fixes through the real command line: a FastChat single-answer file is one skipped line,
`import csv --keep COL` carries a column into the records so `segments --by` works, and the unpaired note asks
for `--allow-unpaired` only when analyze needs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swapjudge.cli import app

FIX = Path(__file__).parents[1] / "fixtures" / "importers"
CSV_ARGS = ["--item", "q", "--first", "shown_1", "--second", "shown_2", "--verdict", "outcome",
            "--map", "A=first,B=second,C=tie"]


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_fastchat_single_answer_file_is_skipped_with_one_line(runner: CliRunner, tmp_path: Path) -> None:
    single = FIX / "fastchat" / "gpt-4_single.jsonl"
    res = runner.invoke(app, ["import", "fastchat", str(single), str(FIX / "fastchat" / "gpt-4_pair.jsonl"),
                              "-o", str(tmp_path / "out.jsonl")])
    assert res.exit_code == 0, res.output
    mentions = [line for line in res.stderr.splitlines() if "gpt-4_single.jsonl" in line]
    assert mentions[0].endswith("gpt-4_single.jsonl: fastchat: 3 rows -> 0 records, 1 skipped")
    assert len([m for m in mentions if "single-answer grading file (3 rows" in m]) == 1
    assert not any("error" in m or "missing field" in m for m in mentions)


def test_single_answer_rows_inside_a_pairwise_file_are_skipped_one_by_one(tmp_path: Path) -> None:
    from swapjudge.importers import import_files

    pair = (FIX / "fastchat" / "gpt-4_pair.jsonl").read_text(encoding="utf-8").splitlines()[0]
    single = (FIX / "fastchat" / "gpt-4_single.jsonl").read_text(encoding="utf-8").splitlines()[0]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(pair + "\n" + single + "\n", encoding="utf-8")
    res = import_files("fastchat", [mixed])
    assert [(a.location.rsplit(":", 1)[1], a.kind) for a in res.awkward] == [("2", "skipped")]
    assert len(res.records) == 2


def write_calls(path: Path, rows: list[tuple[str, str, str, str, str]]) -> Path:
    lines = ["q,shown_1,shown_2,outcome,group"] + [",".join(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_csv_keep_carries_a_column_that_segments_by_reads(runner: CliRunner, tmp_path: Path) -> None:
    rows = []
    for i in range(8):  # group g1: 4 consistent pairs; group g2: 2 consistent, 2 flips toward slot 1
        group = "g1" if i < 4 else "g2"
        flip = group == "g2" and i % 2 == 1
        rows += [(f"q{i}", "x", "y", "A", group), (f"q{i}", "y", "x", "A" if flip else "B", group)]
    source = write_calls(tmp_path / "calls.csv", rows)
    out = tmp_path / "records.jsonl"
    res = runner.invoke(app, ["import", "csv", str(source), *CSV_ARGS, "--keep", "group", "-o", str(out)])
    assert res.exit_code == 0, res.output
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert {r["group"] for r in records} == {"g1", "g2"}
    seg = runner.invoke(app, ["segments", str(out), "--by", "group", "--format", "json"])
    assert seg.exit_code in (0, 1), seg.output
    text = seg.stdout
    payload = json.loads(text)
    found = json.dumps(payload)
    assert '"g1"' in found and '"g2"' in found
    # the per-group consistency: 4/4 and 2/4
    rates = sorted(v for v in _find_rates(payload))
    assert 0.5 in rates and 1.0 in rates


def _find_rates(obj: object) -> list[float]:
    """Every consistency rate anywhere in the segments JSON."""
    out: list[float] = []
    if isinstance(obj, dict):
        cons = obj.get("consistency")
        if isinstance(cons, dict) and isinstance(cons.get("rate"), float | int):
            out.append(float(cons["rate"]))
        for v in obj.values():
            out += _find_rates(v)
    elif isinstance(obj, list):
        for v in obj:
            out += _find_rates(v)
    return out


def test_csv_keep_may_not_overwrite_a_record_field(runner: CliRunner, tmp_path: Path) -> None:
    source = write_calls(tmp_path / "calls.csv", [("q1", "x", "y", "A", "g1"), ("q1", "y", "x", "B", "g1")])
    res = runner.invoke(app, ["import", "csv", str(source), *CSV_ARGS, "--keep", "label", "-o",
                              str(tmp_path / "o.jsonl")])
    assert res.exit_code == 2
    assert "--keep label would overwrite the record field" in res.stderr
    missing = runner.invoke(app, ["import", "csv", str(source), *CSV_ARGS, "--keep", "nope", "-o",
                                  str(tmp_path / "o.jsonl")])
    assert missing.exit_code == 2 and "missing column nope" in missing.stderr


def test_unpaired_note_asks_for_allow_unpaired_only_when_analyze_needs_it(runner: CliRunner,
                                                                         tmp_path: Path) -> None:
    single = write_calls(tmp_path / "single.csv", [("q1", "x", "y", "A", "g"), ("q2", "y", "x", "B", "g")])
    out = tmp_path / "single.jsonl"
    res = runner.invoke(app, ["import", "csv", str(single), *CSV_ARGS, "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "--allow-unpaired" not in res.stderr and "single-order data" in res.stderr
    analysis = runner.invoke(app, ["analyze", str(out), "--format", "json"])
    assert analysis.exit_code != 2, analysis.output  # no "pass --allow-unpaired" error: it was not needed
    assert json.loads(analysis.stdout)["single_order"] is True

    mixed = write_calls(tmp_path / "mixed.csv", [("q1", "x", "y", "A", "g"), ("q1", "y", "x", "B", "g"),
                                                 ("q2", "x", "y", "A", "g")])
    out = tmp_path / "mixed.jsonl"
    res = runner.invoke(app, ["import", "csv", str(mixed), *CSV_ARGS, "-o", str(out)])
    assert "--allow-unpaired" in res.stderr
    assert runner.invoke(app, ["analyze", str(out), "--format", "json"]).exit_code == 2  # needed here
    assert runner.invoke(app, ["analyze", str(out), "--allow-unpaired", "--format", "json"]).exit_code in (0, 1)
