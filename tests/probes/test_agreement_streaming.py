"""`swapjudge agreement` from the streaming engine's counts (DuckDB) against agreement from records read whole:
every figure equal (accuracy, consistency, every kappa and its item-bootstrap interval) on seeded shapes and
real published verdicts, from JSON Lines and Parquet; kappa from counts against scikit-learn."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from conftest import ROOT, same_on_both_engines, shi2024_records, write_parquet
from record_shapes import SHAPES, mixed
from swapjudge.errors import ArgumentError
from swapjudge.probes.agreement import kappa, kappa_of_counts
from swapjudge.workflows.probe import agreement


def _check(tmp_path: Path, rows: list[dict[str, Any]], **options: Any) -> tuple[str, Any]:
    return same_on_both_engines(tmp_path, rows, lambda path, **o: [r.to_dict() for r in agreement(path, **o)],
                                **options)[0]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_shape_agrees_the_same_from_counts(tmp_path: Path, shape: str) -> None:
    status, documents = _check(tmp_path, SHAPES[shape](), allow_unpaired=shape in ("unpaired", "reshown"))
    assert status == "ok", documents


def test_labelled_records_of_several_judges(tmp_path: Path) -> None:
    status, documents = _check(tmp_path, mixed(120, seed=21), confidence=0.9)
    assert status == "ok" and len(documents) == 2
    labels = documents[0]["kappa"]["labels"]
    assert labels["x_first"]["low"] is not None and labels["per_call"]["calls"] > 100
    assert _check(tmp_path, mixed(30, seed=2), judge="j2")[1][0]["judge"] == "j2"
    assert "no records for judge 'j9'" in _check(tmp_path, mixed(30, seed=2), judge="j9")[1]


def test_real_judge_data_and_its_published_kappa(tmp_path: Path) -> None:
    status, [document] = _check(tmp_path, shi2024_records("MTBench", "gpt-4-0613"))
    assert status == "ok"
    assert document["kappa"]["orders"]["pairs"] == 2400
    assert document["kappa"]["orders"]["value"] == pytest.approx(0.6732, abs=1e-4)  # as tests/probes pins it


def test_kappa_of_counts_is_kappa_of_the_rows_and_scikit_learns() -> None:
    rng = np.random.default_rng(8)
    a, b = rng.integers(0, 3, 200), rng.integers(0, 3, 200)
    b = np.where(rng.random(200) < 0.6, a, b)
    count, cluster = rng.integers(1, 4, 200), rng.integers(0, 30, 200)
    names = np.array(["first", "second", "tie"], dtype=object)
    # the row path numbers clusters by their names' order; zero-padded names keep the counted path's numbers
    items = np.array([f"item{c:03d}" for c in cluster], dtype=object)
    rows = kappa(np.repeat(names[a], count), np.repeat(names[b], count), cluster=np.repeat(items, count))
    counted = kappa_of_counts(a, b, count, cluster)
    assert counted == rows
    assert counted.value == pytest.approx(cohen_kappa_score(np.repeat(a, count), np.repeat(b, count)), abs=1e-12)


def test_a_labels_file_is_joined_in_memory_only(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "r.parquet", mixed(20))
    labels = tmp_path / "labels.csv"
    labels.write_text("item,label\nq001,alpha\n")
    with pytest.raises(ArgumentError, match="labels files are joined to the records in memory"):
        agreement(path, labels=labels, engine="streaming")


def test_the_command_streams_and_prints_what_memory_prints(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "r.parquet", mixed(60))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    runs = [subprocess.run([sys.executable, "-m", "swapjudge", "agreement", str(path), "--format", "json",
                            "--engine", engine], capture_output=True, text=True, env=env, timeout=300)
            for engine in ("streaming", "memory")]
    assert runs[0].returncode == runs[1].returncode == 0, runs[0].stderr + runs[1].stderr
    assert json.loads(runs[0].stdout) == json.loads(runs[1].stdout)


@pytest.mark.parametrize("problem", ["unknown verdict", "one order", "duplicate call"])
def test_a_bad_file_fails_with_the_in_memory_words(tmp_path: Path, problem: str) -> None:
    rows = SHAPES["two_systems"]()
    if problem == "unknown verdict":
        rows[5]["verdict"] = "maybe"
    elif problem == "one order":
        rows.pop(10)
    else:
        rows.append(dict(rows[3]))
    status, words = _check(tmp_path, rows)
    assert status == "InputError" and "records.jsonl" in words and "\n" not in words
