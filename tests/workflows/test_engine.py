"""The one place a workflow learns which engine computes its counts (`workflows.engine.streams`)."""

from __future__ import annotations

import ast
from pathlib import Path

import polars as pl
import pytest

from swapjudge.errors import ArgumentError
from swapjudge.reading.streaming import available
from swapjudge.workflows.engine import RowsNeeded, streams

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "mtbench_gpt4_vs_vicuna.jsonl"
NEEDS = RowsNeeded("{labels} files are joined in memory: {engine} memory", ("labels", "engine"))


def test_memory_never_streams_and_a_small_json_lines_file_is_read_whole() -> None:
    assert streams(EXAMPLE, "memory") is False
    assert streams(EXAMPLE, "memory", needs_rows=NEEDS) is False
    # 4,800 records are far below the size auto streams from
    assert streams(EXAMPLE, "auto") is False
    assert streams("-", "auto") is False


@pytest.mark.skipif(not available(), reason="the streaming engine needs DuckDB (the scale extra)")
def test_streaming_and_auto_on_parquet(tmp_path: Path) -> None:
    parquet = tmp_path / "records.parquet"
    pl.read_ndjson(EXAMPLE).write_parquet(parquet)
    assert streams(EXAMPLE, "streaming") is True
    assert streams(parquet, "auto") is True
    # a statistic the counts do not hold: auto reads the rows, streaming says why it cannot
    assert streams(parquet, "auto", needs_rows=NEEDS) is False
    with pytest.raises(ArgumentError) as caught:
        streams(parquet, "streaming", needs_rows=NEEDS)
    assert str(caught.value) == "labels files are joined in memory: engine memory"
    assert caught.value.arguments == ("labels", "engine")


def test_an_unknown_engine_names_the_argument() -> None:
    with pytest.raises(ArgumentError) as caught:
        streams(EXAMPLE, "disk")
    assert "engine" in caught.value.arguments


def test_no_other_workflow_asks_the_reader_which_engine() -> None:
    """`should_stream` is called from workflows/engine.py alone: no command decides on its own."""
    callers = []
    for path in sorted((ROOT / "src" / "swapjudge" / "workflows").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Name | ast.alias) and "should_stream" in (getattr(node, "id", None),
                                                                               getattr(node, "name", None)):
                callers.append(path.name)
    assert set(callers) == {"engine.py"}
