"""The streaming reduction (DuckDB, `reading.streaming`) and the analysis from counts (`core.counted`) against the
in-memory analysis of the same records: every figure equal, on seeded shapes, the repository's examples and real
published judge data, from JSON Lines and from Parquet; and the same one-line errors for the same bad files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from conftest import shared_data, shi2024_records, write_jsonl, write_parquet
from record_shapes import SHAPES
from swapjudge.cli import app
from swapjudge.core.analysis import analyze_records, analyze_source
from swapjudge.errors import InputError
from swapjudge.reading.records import read_records
from swapjudge.reading.reduce import FrameSource
from swapjudge.reading.streaming import open_source, should_stream
from swapjudge.workflows.analyze import analyze

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _same(left: Any, right: Any, where: str = "") -> None:
    """Equal documents; floats to 1e-12 relative (sums taken in another order may differ in the last bits)."""
    if isinstance(left, float) and isinstance(right, float):
        assert (math.isnan(left) and math.isnan(right)) or math.isclose(left, right, rel_tol=1e-12, abs_tol=1e-15), \
            f"{where}: {left} != {right}"
    elif isinstance(left, dict) and isinstance(right, dict):
        assert left.keys() == right.keys(), f"{where}: keys {sorted(left)} != {sorted(right)}"
        for key in left:
            _same(left[key], right[key], f"{where}.{key}")
    elif isinstance(left, list | tuple) and isinstance(right, list | tuple):
        assert len(left) == len(right), f"{where}: length {len(left)} != {len(right)}"
        for index, (a, b) in enumerate(zip(left, right, strict=True)):
            _same(a, b, f"{where}[{index}]")
    else:
        assert left == right, f"{where}: {left!r} != {right!r}"


def _documents(results: Any) -> list[dict[str, Any]]:
    return [r.to_dict() for r in results]


def _check_all_paths(tmp_path: Path, rows: list[dict[str, Any]], allow_unpaired: bool = False,
                     **options: Any) -> list[dict[str, Any]]:
    reference = _documents(analyze_records(read_records(rows, allow_unpaired=allow_unpaired), **options))
    loaded = read_records(rows, allow_unpaired=allow_unpaired)
    _same(_documents(analyze_source(FrameSource(loaded.frame), **options)), reference, "counts in memory")
    jsonl = write_jsonl(tmp_path / "records.jsonl", rows)
    parquet = write_parquet(tmp_path / "records.parquet", rows)
    for path in (jsonl, parquet):
        with open_source(path, allow_unpaired=allow_unpaired) as source:
            _same(_documents(analyze_source(source, **options)), reference, f"streamed {path.suffix}")
        _same(_documents(analyze(path, allow_unpaired=allow_unpaired, engine="streaming", **options)), reference,
              f"analyze --engine streaming {path.suffix}")
        _same(_documents(analyze(path, allow_unpaired=allow_unpaired, engine="memory", **options)), reference,
              f"analyze --engine memory {path.suffix}")
    return reference


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_shape_gives_the_in_memory_figures(tmp_path: Path, shape: str) -> None:
    rows = SHAPES[shape]()
    reference = _check_all_paths(tmp_path, rows, allow_unpaired=shape in ("unpaired", "reshown"))
    assert reference and all("swap_consistency" in doc or "consistency" in json.dumps(doc) for doc in reference)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_head_of_a_json_lines_file_chooses_the_passes_duckdb_would(tmp_path: Path, shape: str) -> None:
    """The passes are chosen by a Python read of the file's head: the same choice as DuckDB's own sample of
    its first records, and either choice gives the same figures."""
    from swapjudge.reading.streaming import _json_head

    rows = SHAPES[shape]()
    unpaired = shape in ("unpaired", "reshown")
    path = write_jsonl(tmp_path / "records.jsonl", rows)
    _, one_pair = _json_head(str(path), None)
    with open_source(path, allow_unpaired=unpaired, split=False) as whole:
        assert one_pair == whole._mostly_simple()
        figures = _documents(analyze_source(whole))
    with open_source(path, allow_unpaired=unpaired, split=True) as split:
        _same(_documents(analyze_source(split)), figures, "split into two passes")


def test_items_of_several_pairs_or_rounds_send_a_file_to_the_pass_by_pair_key(tmp_path: Path) -> None:
    from swapjudge.reading.streaming import _mostly_one_pair

    def call(item: str, first: str, second: str, round_: int = 0) -> dict[str, Any]:
        return {"judge": "j", "item": item, "first": first, "second": second, "verdict": "tie", "round": round_}

    both_orders = [call("q", "a", "b"), call("q", "b", "a")]
    assert _mostly_one_pair(both_orders) and _mostly_one_pair([call("q", "a", "b")]) and _mostly_one_pair([])
    assert not _mostly_one_pair([*both_orders, call("q", "a", "c")])  # two pairs of systems
    assert not _mostly_one_pair([call("q", "a", "b", 0), call("q", "b", "a", 1)])  # two rounds
    assert not _mostly_one_pair([call("q", "a", "b"), call("q", "a", "b")])  # the same order twice
    assert not _mostly_one_pair([call("q", "a", "a"), call("q", "a", "a")])  # identical answers


# names the JSON reader must unescape: quotes, backslashes, escaped and raw non-ASCII, control characters
ODD_NAMES = ['say "hi"', "back\\slash", "caf\u00e9", "\U0001f600 smile", "tab\there", "\\", '"', " spaced "]


@pytest.mark.parametrize("ascii_only", [True, False], ids=["escaped", "utf8"])
def test_escaped_and_non_ascii_names_are_read_as_their_text(tmp_path: Path, ascii_only: bool) -> None:
    rows = SHAPES["mixed"]()
    rename = {old: ODD_NAMES[k % len(ODD_NAMES)] + str(k) for k, old in
              enumerate(sorted({str(r["item"]) for r in rows} | {r["first"] for r in rows}))}
    judges = {j: ODD_NAMES[-k - 1] + "judge" for k, j in enumerate(sorted({str(r.get("judge", "")) for r in rows}))}
    for row in rows:
        row.update(item=rename[str(row["item"])], first=rename[row["first"]], second=rename[row["second"]],
                   judge=judges[str(row.get("judge", ""))])
    path = tmp_path / "odd.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=ascii_only) + "\n" for r in rows), encoding="utf-8")
    reference = _documents(analyze_records(read_records(rows)))
    with open_source(path) as source:
        assert sorted(source.judges()) == sorted({r["judge"] for r in rows})
        _same(_documents(analyze_source(source)), reference, "streamed odd names")
    _check_all_paths(tmp_path, rows)


def test_a_chosen_pair_policy_and_confidence(tmp_path: Path) -> None:
    _check_all_paths(tmp_path, SHAPES["mixed"](), a="alpha", b="gamma", tie_policy="exclude", confidence=0.9,
                     judge="j2")


def test_the_example_records(tmp_path: Path) -> None:
    """examples/mtbench_gpt4_vs_vicuna.jsonl (the other examples are pairs files for `run`)."""
    text = (EXAMPLES / "mtbench_gpt4_vs_vicuna.jsonl").read_text()
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    _check_all_paths(tmp_path, rows)


@pytest.mark.parametrize(("benchmark", "judge"), [("MTBench", "gpt-4-0613"), ("DevBench", "gemini-pro")])
def test_real_judge_data(tmp_path: Path, benchmark: str, judge: str) -> None:
    rows = shi2024_records(benchmark, judge)
    assert len(rows) > 100
    reference = _check_all_paths(tmp_path, rows)
    assert reference[0]["judge"] == judge


def test_real_data_from_many_judges_at_once(tmp_path: Path) -> None:
    """The Shi et al. CSV as one file: every judge of both benchmarks (25,600 calls)."""
    import csv

    verdicts = {"A": "first", "B": "second", "C": "tie", "": None}
    with shared_data("shi2024", "verdicts_both_orders.csv").open(newline="") as f:
        rows = [{"judge": f"{r['benchmark']}/{r['judge']}", "item": r["question_id"], "first": r["model_first"],
                 "second": r["model_second"], "verdict": verdicts[r["verdict"]]}
                for r in csv.DictReader(f)]
    assert len({r["judge"] for r in rows}) > 5
    _check_all_paths(tmp_path, rows)


# ---- the same checks, the same words -----------------------------------------------------------------------


def _error(call: Any) -> str:
    with pytest.raises(InputError) as caught:
        call()
    return str(caught.value)


BAD = {
    "unknown verdict": lambda rows: rows[5].update(verdict="maybe"),
    "empty item": lambda rows: rows[7].update(item=""),
    "duplicate call": lambda rows: rows.append(dict(rows[3])),
    "one order": lambda rows: rows.pop(10),
    "missing verdict key": lambda rows: rows[4].pop("verdict"),
    "missing second": lambda rows: rows[6].pop("second"),
    "string round": lambda rows: rows[8].update(round="two"),
}


@pytest.mark.parametrize("problem", sorted(BAD))
def test_a_bad_json_lines_file_fails_with_the_in_memory_words(tmp_path: Path, problem: str) -> None:
    rows = SHAPES["two_systems"]()
    BAD[problem](rows)
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    expected = _error(lambda: read_records(path))
    assert str(path) in expected
    assert _error(lambda: open_source(path).judges()) == expected


@pytest.mark.parametrize("problem", ["unknown verdict", "duplicate call", "one order", "empty item"])
def test_a_bad_parquet_file_names_the_row_and_row_group(tmp_path: Path, problem: str) -> None:
    rows = SHAPES["two_systems"]()
    BAD[problem](rows)
    path = write_parquet(tmp_path / "bad.parquet", rows)
    expected = _error(lambda: read_records(path))
    assert "row group" in expected
    assert _error(lambda: open_source(path).judges()) == expected


def test_auto_streams_parquet_and_reads_small_json_lines_in_memory(tmp_path: Path) -> None:
    rows = SHAPES["two_systems"]()
    assert should_stream(write_parquet(tmp_path / "r.parquet", rows))
    assert not should_stream(write_jsonl(tmp_path / "r.jsonl", rows))
    assert not should_stream(write_jsonl(tmp_path / "r.jsonl", rows), "memory")
    assert should_stream(tmp_path / "r.jsonl", "streaming")
    assert not should_stream(rows, "streaming")  # a list of dicts is already in memory


TYPED = {
    "boolean item": lambda rows: rows[0].update(item=True),
    "number item": lambda rows: rows[0].update(item=1.5),
    "object item": lambda rows: rows[0].update(item={"a": 1}),
    "number judge": lambda rows: rows[0].update(judge=5),
    "number round": lambda rows: rows[0].update(round=1.0),
    "boolean round": lambda rows: rows[0].update(round=True),
    "number verdict": lambda rows: rows[0].update(verdict=1),
    "boolean verdict": lambda rows: rows[0].update(verdict=False),
    "object verdict": lambda rows: rows[0].update(verdict={"v": "first"}),
    "probability above 1": lambda rows: rows[0].update(p_first=1.5, p_second=0.1),
    "probability as text": lambda rows: rows[0].update(p_first="0.5", p_second=0.1),
    "negative probability": lambda rows: rows[0].update(p_first=0.5, p_second=-0.1),
    "boolean probability": lambda rows: rows[0].update(p_first=True, p_second=0.1),
    # the same wrong type on every call of an item, so the pairs still pair up (polars alone would read it as text)
    "boolean item on a whole item": lambda rows: _on_first_item(rows, item=True),
    "number item on a whole item": lambda rows: _on_first_item(rows, item=2.5),
    "boolean label on a whole item": lambda rows: _on_first_item(rows, label=True),
    "number judge on a whole item": lambda rows: _on_first_item(rows, judge=7),
    "empty verdict": lambda rows: rows[0].update(verdict=""),
}


def _on_first_item(rows: list[dict[str, object]], **fields: object) -> None:
    first_item = rows[0]["item"]
    for row in rows:
        if row["item"] == first_item:
            row.update(fields)


@pytest.mark.parametrize("problem", sorted(TYPED))
def test_a_field_of_the_wrong_json_type_is_refused_by_its_line_and_field(tmp_path: Path, problem: str) -> None:
    rows = SHAPES["two_systems"]()
    TYPED[problem](rows)
    path = write_jsonl(tmp_path / "typed.jsonl", rows)
    expected = _error(lambda: read_records(path, extras=False))
    assert expected.startswith(f"{path}:1: field `")
    assert _error(lambda: open_source(path).judges()) == expected


def test_without_duckdb_the_core_install_reads_parquet_in_memory_and_streaming_names_the_extra(
        tmp_path: Path) -> None:
    """DuckDB is the `scale` extra: without it `import swapjudge` works, `analyze` reads a Parquet file in memory
    with the same figures, and `--engine streaming` is one line naming the extra (exit 2)."""
    import subprocess
    import sys

    rows = SHAPES["two_systems"]()
    path = write_parquet(tmp_path / "r.parquet", rows)
    blocked = ("import sys; sys.modules['duckdb'] = None; import swapjudge; from swapjudge.cli import main; "
               "sys.argv = ['swapjudge', *sys.argv[1:]]; main()")
    plain = subprocess.run([sys.executable, "-c", blocked, "analyze", str(path), "--format", "json"],
                           capture_output=True, text=True)
    assert plain.returncode in (0, 1), plain.stderr
    document = json.loads(plain.stdout)
    document.pop("schema_version")
    _same(document, _documents(analyze_records(read_records(rows)))[0], "without duckdb")
    streaming = subprocess.run([sys.executable, "-c", blocked, "analyze", str(path), "--engine", "streaming"],
                               capture_output=True, text=True)
    assert streaming.returncode == 2
    assert streaming.stderr.strip().splitlines() == [
        "error: the streaming reduction needs DuckDB: pip install 'swapjudge[scale]'"]


@pytest.mark.parametrize("value", [1.5, -0.25, float("nan")])
def test_a_parquet_probability_outside_0_1_is_refused_by_its_row(tmp_path: Path, value: float) -> None:
    rows = SHAPES["mixed_probabilities"]()
    rows[3].update(p_first=value, p_second=0.1)
    path = write_parquet(tmp_path / "p.parquet", rows)
    expected = _error(lambda: read_records(path))
    assert "row 4 (row group 0): field `p_first`: must be a probability" in expected
    assert _error(lambda: open_source(path).judges()) == expected


def test_graded_verdicts_are_analysed_in_memory_and_the_streaming_engine_says_so(tmp_path: Path) -> None:
    """`strength` (graded verdicts) is read by the in-memory analysis only: `auto` reads such a file whole (the
    graded figures included), `streaming` refuses it in one line instead of dropping the grades."""
    from swapjudge.errors import SwapjudgeError

    rows = SHAPES["two_systems"]()
    for row in rows:
        if row["verdict"] in ("first", "second"):
            row["strength"] = 1 + len(row["item"]) % 2
    reference = _documents(analyze_records(read_records(rows)))
    assert reference[0]["graded"] is not None
    for path in (write_jsonl(tmp_path / "g.jsonl", rows), write_parquet(tmp_path / "g.parquet", rows)):
        assert not should_stream(path)
        _same(_documents(analyze(path)), reference, f"auto {path.suffix}")
        with pytest.raises(SwapjudgeError, match="graded verdicts"):
            analyze(path, engine="streaming")


@pytest.mark.slow
def test_under_an_address_space_ceiling_the_reduction_spills_instead_of_failing(tmp_path: Path) -> None:
    """`ulimit -v 2000000` (2 GB of address space, about 1.3 GB of it mapped by polars and DuckDB at start):
    DuckDB's limit follows the room left, and the figures are those of an unconstrained run."""
    import resource
    import subprocess
    import sys

    n = 3_000_000
    row = pl.int_range(0, n, eager=True)
    frame = pl.DataFrame({"judge": pl.repeat("j", n, eager=True), "item": "q" + (row // 2).cast(pl.String),
                          "first": pl.Series(["a", "b"] * (n // 2)), "second": pl.Series(["b", "a"] * (n // 2)),
                          "verdict": pl.Series(["first", "second", "tie", None, "first", "first", "second"]
                                               * (n // 7) + ["tie"] * (n % 7))})
    path = tmp_path / "big.parquet"
    frame.write_parquet(path)
    command = [sys.executable, "-m", "swapjudge", "analyze", str(path), "--format", "json", "--min-consistency", "0"]

    def ceiling() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2_000_000 * 1024, resource.RLIM_INFINITY))

    limited = subprocess.run(command, capture_output=True, text=True, preexec_fn=ceiling)
    assert limited.returncode == 0, limited.stderr
    # The unconstrained run needs no process of its own: the same command in this process, without a ceiling.
    free = CliRunner().invoke(app, command[3:], catch_exceptions=False)
    assert free.exit_code == 0, free.output
    assert json.loads(limited.stdout) == json.loads(free.stdout)
    _same(json.loads(free.stdout)["consistency"],
          _documents(analyze_records(read_records(frame)))[0]["consistency"], "consistency")
