"""Records written as Parquet (`reading.parquet_out`): read back by both loaders as the same records, whatever
types the rows mix; `import ... -o x.parquet` gives the analysis its JSON Lines twin gives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from conftest import shared_data
from record_shapes import SHAPES
from swapjudge.core.analysis import analyze_records
from swapjudge.errors import InputError
from swapjudge.reading.parquet_out import records_frame, write_records_parquet
from swapjudge.reading.records import read_records


def test_mixed_types_are_kept_as_the_loaders_read_them(tmp_path: Path) -> None:
    rows = [{"item": 7, "first": "a", "second": "b", "verdict": "first", "score": 1, "meta": {"k": [1, 2]}},
            {"item": "q8", "first": "b", "second": "a", "verdict": None, "score": 2.5, "meta": "plain"}]
    frame = records_frame(rows)
    assert frame.schema["item"] == pl.String and frame.get_column("item").to_list() == ["7", "q8"]
    assert frame.get_column("score").to_list() == [1.0, 2.5]
    assert frame.get_column("meta").to_list() == ['{"k": [1, 2]}', "plain"]
    assert frame.get_column("verdict").to_list() == ["first", None]


@pytest.mark.parametrize("shape", ["mixed", "mixed_probabilities", "adaptive"])
def test_a_written_file_analyses_as_its_records(tmp_path: Path, shape: str) -> None:
    rows = SHAPES[shape]()
    path = tmp_path / "records.parquet"
    assert write_records_parquet(rows, path) == len(rows)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    expected = [r.to_dict() for r in analyze_records(read_records(rows))]
    assert [r.to_dict() for r in analyze_records(read_records(path))] == expected


def test_a_missing_folder_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="output folder does not exist"):
        write_records_parquet([{"item": "q", "first": "a", "second": "b", "verdict": None}],
                              tmp_path / "nope" / "r.parquet")


def test_import_writes_parquet_with_the_json_lines_figures(tmp_path: Path) -> None:
    """Shi et al.'s verdict table imported twice, as JSON Lines and as Parquet, then analysed by the CLI."""
    source = shared_data("shi2024", "verdicts_both_orders.csv")
    cli = [sys.executable, "-m", "swapjudge"]
    outputs = {}
    for name in ("records.jsonl", "records.parquet"):
        target = tmp_path / name
        done = subprocess.run([*cli, "import", "shi2024", str(source), "-o", str(target)], capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr
        analysed = subprocess.run([*cli, "analyze", str(target), "--format", "json", "--min-consistency", "0"],
                                  capture_output=True, text=True)
        assert analysed.returncode == 0, analysed.stderr
        outputs[name] = json.loads(analysed.stdout)
    jsonl = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert len(pl.read_parquet(tmp_path / "records.parquet")) == len(jsonl) > 10_000
    assert outputs["records.parquet"] == outputs["records.jsonl"]


@pytest.mark.parametrize("command", [["rank", "--judge", "j1", "--min-consistency", "0", "--format", "json"],
                                     ["segments", "--by", "category", "--judge", "j2", "--format", "json"],
                                     ["agreement", "--format", "json"]])
def test_the_other_commands_read_parquet_as_its_json_lines_twin(tmp_path: Path, command: list[str]) -> None:
    from typer.testing import CliRunner

    from swapjudge.cli import app
    from swapjudge.importers.base import write_records

    rows = SHAPES["mixed"]()
    jsonl, parquet = tmp_path / "r.jsonl", tmp_path / "r.parquet"
    write_records(rows, jsonl)
    write_records(rows, parquet)
    runner = CliRunner()
    outputs = [runner.invoke(app, [command[0], str(path), *command[1:]]) for path in (jsonl, parquet)]
    assert outputs[0].exit_code in (0, 1) and outputs[0].exit_code == outputs[1].exit_code
    assert json.loads(outputs[0].stdout) == json.loads(outputs[1].stdout)


def test_report_reads_parquet_as_its_json_lines_twin(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from swapjudge.cli import app
    from swapjudge.importers.base import write_records

    rows = SHAPES["two_systems"]()
    texts = []
    for name in ("r.jsonl", "r.parquet"):
        write_records(rows, tmp_path / name)
        out = tmp_path / f"{name}.md"
        done = CliRunner().invoke(app, ["report", str(tmp_path / name), "--markdown", str(out)])
        assert done.exit_code in (0, 1), done.stderr
        texts.append([line for line in out.read_text().splitlines() if "sha256" not in line])
    assert texts[0] == texts[1] and len(texts[0]) > 10
