"""`swapjudge segments` from the streaming engine's counts (DuckDB) against the segments of records read whole:
every figure equal on seeded shapes with a segment field (text, numbers, missing values), real published judge
verdicts, from JSON Lines and Parquet; the same one-line errors for the same bad files and fields."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, same_on_both_engines, shi2024_records, write_parquet
from record_shapes import SHAPES
from swapjudge.workflows.probe import segments


def _check(tmp_path: Path, rows: list[dict[str, Any]], **options: Any) -> list[tuple[str, Any]]:
    return same_on_both_engines(tmp_path, rows, lambda path, **o: segments(path, **o).to_dict(), **options)


def _tagged(rows: list[dict[str, Any]], field: str = "task") -> list[dict[str, Any]]:
    """A segment fixed per pair: from the item, as a number for some items and missing for others."""
    out = []
    for row in rows:
        key = sum(map(ord, str(row["item"]))) % 5
        value: Any = ("math", "code", 3, 10, None)[key]
        out.append({**row, field: value} if value is not None else dict(row))
    return out


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_shape_segments_the_same_from_counts(tmp_path: Path, shape: str) -> None:
    rows = _tagged(SHAPES[shape]())
    unpaired = shape in ("unpaired", "reshown")
    (status, document), _ = _check(tmp_path, rows, by="task", min_consistency=0, allow_unpaired=unpaired)
    assert status == "ok", document
    values = [s["value"] for s in document["segments"]]
    assert values[-1] == "(missing)" and values[:2] == ["3", "10"]  # numbers in numeric order, missing last


@pytest.mark.parametrize("options", [{"judge": "j2"}, {"a": "alpha", "b": "gamma", "tie_policy": "exclude"},
                                     {"confidence": 0.9, "min_consistency": 0.6}])
def test_the_existing_segment_field_with_choices(tmp_path: Path, options: dict[str, Any]) -> None:
    status, document = _check(tmp_path, SHAPES["mixed"](), by="category", **options)[0]
    assert status in ("ok", "GateError")
    if status == "ok":
        assert {s["value"] for s in document["segments"]} == {"math", "code", "writing"}


def test_real_judge_data(tmp_path: Path) -> None:
    rows = [{**r, "kind": int(r["item"]) % 4} for r in shi2024_records("MTBench", "gpt-4-0613")]
    status, document = _check(tmp_path, rows, by="kind", min_consistency=0)[0]
    assert status == "ok" and len(document["segments"]) == 4


def test_bad_fields_and_files_are_said_alike(tmp_path: Path) -> None:
    rows = SHAPES["mixed"]()
    assert "no field 'nope' in the records; fields: judge, round, item, label, category" in \
        _check(tmp_path, rows, by="nope")[0][1]
    assert "cannot segment by 'verdict'" in _check(tmp_path, rows, by="verdict")[0][1]
    split = [dict(r) for r in rows]
    split[1]["category"] = "other"  # the second call of the first pair
    assert "differs between the calls of a pair" in _check(tmp_path, split, by="category")[0][1]
    broken = [dict(r) for r in rows]
    broken[3]["verdict"] = "maybe"
    status, words = _check(tmp_path, broken, by="category")[0]
    assert status == "InputError" and "records.jsonl" in words and "\n" not in words
    assert "system 'nobody'" in _check(tmp_path, rows, by="nope", a="nobody", b="alpha")[0][1]


def test_the_command_streams_and_prints_what_memory_prints(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "r.parquet", SHAPES["mixed"]())
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    runs = [subprocess.run([sys.executable, "-m", "swapjudge", "segments", str(path), "--by", "category",
                            "--format", "json", "--min-consistency", "0", "--engine", engine],
                           capture_output=True, text=True, env=env, timeout=300) for engine in ("streaming", "memory")]
    assert runs[0].returncode == runs[1].returncode == 0, runs[0].stderr + runs[1].stderr
    assert json.loads(runs[0].stdout) == json.loads(runs[1].stdout)
