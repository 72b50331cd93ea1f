"""`swapjudge rank` from the streaming engine's counts (DuckDB) against the ranking of records read whole: every
figure equal (ratings, intervals with the same seed, rank ranges, tallies, the gate) on seeded shapes, the
repository's example, real published judge verdicts and a generated arena-like file, from JSON Lines and
Parquet; the same one-line errors for the same bad files; and the rankings that need the rows refused in one
line by `--engine streaming` and read in memory by `auto`."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import ROOT, same_on_both_engines, shared_data, shi2024_records, write_parquet
from record_shapes import SHAPES, mixed
from swapjudge.errors import ArgumentError, SwapjudgeError
from swapjudge.ranking.bradley_terry import Comparisons, fit_ranking
from swapjudge.workflows.rank import rank_judge

EXAMPLE = ROOT / "examples" / "mtbench_gpt4_vs_vicuna.jsonl"


def _check(tmp_path: Path, rows: list[dict[str, Any]], **options: Any) -> list[tuple[str, Any]]:
    """The ranking (or the error) of `rows` from JSON Lines and Parquet, streamed and in memory: all equal (to the
    last bit: the counts are integers, summed alike, and the bootstrap draws the same items)."""
    return same_on_both_engines(tmp_path, rows, _gated_ranking, **options)


def _gated_ranking(path: Path, **options: Any) -> dict[str, Any]:
    """The ranking's document, or the `GateError` its gate raises (as the CLI ends it)."""
    result = rank_judge(path, **options)
    result.raise_for_gate()
    return result.to_dict()


def _judges(rows: list[dict[str, Any]]) -> list[str]:
    return sorted({str(r.get("judge", "")) for r in rows})


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("outcome", ["swap", "calls"])
def test_every_shape_ranks_the_same_from_counts(tmp_path: Path, shape: str, outcome: str) -> None:
    rows = SHAPES[shape]()
    oks = 0
    for judge in _judges(rows):
        for found in _check(tmp_path, rows, judge=judge or None, outcome=outcome, bootstrap=60, seed=3,
                            min_consistency=0):
            oks += found[0] == "ok"
    # swap refuses a pair judged once (unpaired, reshown: rank has no allow_unpaired); single-order data has no
    # complete pair
    assert oks or (outcome == "swap" and shape in ("unpaired", "reshown", "single_order", "random_order"))


@pytest.mark.parametrize("model", ["rao-kupper", "davidson", "bt-half"])
@pytest.mark.parametrize("interval", ["percentile", "bca"])
def test_every_model_and_interval_on_the_mixed_shape(tmp_path: Path, model: str, interval: str) -> None:
    rows = mixed(80, seed=11)
    found = _check(tmp_path, rows, judge="j2", model=model, interval=interval, bootstrap=150, seed=9,
                   confidence=0.9, min_consistency=0)
    status, document = found[0]
    assert status == "ok" and document["bootstrap"]["rounds"] == 150
    assert all(row["low"] is not None for row in document["systems"])  # real intervals were compared


def test_the_gate_blocks_alike(tmp_path: Path) -> None:
    rows = SHAPES["mixed"]()
    found = _check(tmp_path, rows, judge="j1", min_consistency=0.99, bootstrap=10)
    assert found[0][0] == "GateError" and "no ranking reported" in found[0][1]
    # the library returns the withheld ranking, the same from both engines: the gate, why, and no systems
    (status, withheld), *_ = same_on_both_engines(
        tmp_path, rows, lambda path, **o: rank_judge(path, **o).to_dict(), judge="j1", min_consistency=0.99,
        bootstrap=10)
    assert status == "ok" and "systems" not in withheld and not withheld["gate"]["passed"]
    assert withheld["withheld"].startswith("gate: judge j1: swap-consistency")
    passed = _check(tmp_path, rows, judge="j1", min_consistency=0.2, bootstrap=10)[0][1]
    assert passed["gate"]["passed"] and passed["consistency"]["rate"] is not None


def test_the_example_records(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines() if line.strip()]
    for outcome in ("swap", "calls"):
        status, document = _check(tmp_path, rows, outcome=outcome, bootstrap=200, min_consistency=0)[0]
        assert status == "ok" and len(document["systems"]) > 10  # gpt-4, vicuna and the others it met


@pytest.mark.parametrize(("benchmark", "judge"), [("MTBench", "gpt-4-0613"), ("DevBench", "gemini-pro")])
def test_real_judge_data(tmp_path: Path, benchmark: str, judge: str) -> None:
    rows = shi2024_records(benchmark, judge)
    for outcome in ("swap", "calls"):
        status, document = _check(tmp_path, rows, outcome=outcome, bootstrap=200, seed=5, min_consistency=0)[0]
        assert status == "ok" and document["judge"] == judge and document["items"] > 10


def test_real_data_of_many_judges_in_one_file(tmp_path: Path) -> None:
    """The whole Shi et al. CSV as one file (25,600 calls): a judge must be named, and each ranks alike."""
    verdicts = {"A": "first", "B": "second", "C": "tie", "": None}
    with shared_data("shi2024", "verdicts_both_orders.csv").open(newline="") as f:
        rows = [{"judge": f"{r['benchmark']}/{r['judge']}", "item": r["question_id"], "first": r["model_first"],
                 "second": r["model_second"], "verdict": verdicts[r["verdict"]]}
                for r in csv.DictReader(f)]
    judges = _judges(rows)
    unnamed = _check(tmp_path, rows, bootstrap=0)
    assert unnamed[0][0] == "InputError" and f"records hold {len(judges)} judges" in unnamed[0][1]
    for judge in (judges[0], judges[-1]):
        assert _check(tmp_path, rows, judge=judge, bootstrap=100, min_consistency=0)[0][0] == "ok"
    assert "no records of judge 'nobody'" in _check(tmp_path, rows, judge="nobody")[0][1]


def test_a_generated_arena_like_file(tmp_path: Path) -> None:
    """bench/scale_records.py's shape (four judges, eight systems, an item per pair), 40,000 records."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from scale_records import write
    finally:
        sys.path.remove(str(ROOT / "bench"))
    path = tmp_path / "arena.parquet"
    write(40_000, path)
    options = {"judge": "judge-b", "bootstrap": 100, "seed": 1, "min_consistency": 0}
    reference = rank_judge(path, engine="memory", **options).to_dict()
    assert rank_judge(path, engine="streaming", **options).to_dict() == reference
    assert reference["items"] > 1000 and len(reference["systems"]) == 8


def test_items_are_drawn_in_the_order_of_their_names(tmp_path: Path) -> None:
    """The bootstrap numbers items as numpy sorts their names (by code point): names DuckDB could order
    otherwise (case, accents, digits, non-Latin scripts) give the same resamples."""
    rng = np.random.default_rng(4)
    names = ["Zeta", "alpha", "Émile", "émile", "10", "9", "日本", "x y", "ß", "a\u0301"]
    rows = []
    for i in range(60):
        item = f"{names[i % len(names)]}-{i // len(names)}"
        for x, y in (("m1", "m2"), ("m2", "m3"))[: 1 + i % 2]:
            v = rng.choice(["first", "second", "tie"], size=2)
            rows += [{"item": item, "first": x, "second": y, "verdict": v[0]},
                     {"item": item, "first": y, "second": x, "verdict": v[1]}]
    assert _check(tmp_path, rows, bootstrap=200, seed=2, min_consistency=0)[0][0] == "ok"


# ---- the weighted battle table itself -------------------------------------------------------------------------


def test_counted_rows_fit_and_resample_as_the_rows_they_stand_for() -> None:
    """Comparisons with `count` against the same comparisons repeated row by row (an independent expansion)."""
    rng = np.random.default_rng(0)
    n = 300
    item = rng.integers(0, 40, n)
    left = rng.integers(0, 4, n)
    right = (left + rng.integers(1, 4, n)) % 4
    outcome = rng.integers(0, 3, n)
    count = rng.integers(1, 5, n)
    counted = Comparisons(("a", "b", "c", "d"), item, left, right, outcome.astype(np.int8), count=count)
    expanded = Comparisons(("a", "b", "c", "d"), np.repeat(item, count), np.repeat(left, count),
                           np.repeat(right, count), np.repeat(outcome, count).astype(np.int8))
    for interval in ("percentile", "bca"):
        a = fit_ranking(counted, rounds=200, seed=7, interval=interval).to_dict()
        b = fit_ranking(expanded, rounds=200, seed=7, interval=interval).to_dict()
        assert a == b
    assert a["comparisons"] == int(count.sum())
    with pytest.raises(ValueError, match="count must be at least 1"):
        Comparisons(("a", "b"), [0], [0], [1], np.array([0], dtype=np.int8), count=[0])


# ---- the same errors, and what needs the rows ----------------------------------------------------------------

BAD = {
    "unknown verdict": lambda rows: rows[5].update(verdict="maybe"),
    "empty item": lambda rows: rows[7].update(item=""),
    "duplicate call": lambda rows: rows.append(dict(rows[3])),
    "one order": lambda rows: rows.pop(10),
    "missing verdict key": lambda rows: rows[4].pop("verdict"),
    "string round": lambda rows: rows[8].update(round="two"),
}


@pytest.mark.parametrize("problem", sorted(BAD))
def test_a_bad_file_fails_with_the_in_memory_words(tmp_path: Path, problem: str) -> None:
    rows = SHAPES["two_systems"]()
    BAD[problem](rows)
    for outcome in ("swap", "calls"):
        found = _check(tmp_path, rows, outcome=outcome, bootstrap=10, min_consistency=0)
        status, words = found[0]
        if problem == "one order" and outcome == "calls":
            assert status == "ok"  # single calls need no twin
            continue
        assert status == "InputError" and "records.jsonl" in words, (problem, found)
        assert "\n" not in words


def test_no_complete_pair_or_no_parsed_call_is_said_alike(tmp_path: Path) -> None:
    rows = [{"item": f"q{i}", "first": a, "second": b, "verdict": "first"}
            for i in range(5) for a, b in (("m1", "m2"), ("m2", "m1"))]
    lonely = [r for r in rows if r["first"] == "m1"]
    status, words = _check(tmp_path, lonely, bootstrap=0, min_consistency=0)[0]
    assert status == "InputError" and "no pair has usable verdicts in both orders" in words
    unparsed = [{**r, "verdict": None} for r in rows]
    assert "no parsed calls to rank" in _check(tmp_path, unparsed, outcome="calls", bootstrap=0,
                                               min_consistency=0)[0][1]
    # without the gate switched off, the gate speaks first (no consistency measured), alike
    assert _check(tmp_path, lonely, bootstrap=0)[0][0] == "GateError"


def test_rankings_that_need_the_rows_are_refused_by_streaming_and_read_whole_by_auto(tmp_path: Path) -> None:
    rows = SHAPES["mixed"]()
    path = write_parquet(tmp_path / "r.parquet", rows)
    with pytest.raises(ArgumentError) as caught:
        rank_judge(path, judge="j1", order_effect=True, engine="streaming")
    assert str(caught.value).startswith("order_effect and control fit single calls from the records in memory")
    auto = rank_judge(path, judge="j1", order_effect=True, bootstrap=20, min_consistency=0)
    assert auto.to_dict() == rank_judge(path, judge="j1", order_effect=True, bootstrap=20, min_consistency=0,
                                        engine="memory").to_dict()
    with pytest.raises(ArgumentError, match="outcome graded ranks graded verdicts"):
        rank_judge(path, judge="j1", outcome="graded", engine="streaming")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "swapjudge", "rank", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def test_the_command_streams_and_prints_what_memory_prints(tmp_path: Path) -> None:
    rows = SHAPES["mixed"]()
    path = write_parquet(tmp_path / "r.parquet", rows)
    streamed = _cli(str(path), "--judge", "j2", "--format", "json", "--engine", "streaming", "--bootstrap", "100",
                    "--min-consistency", "0")
    whole = _cli(str(path), "--judge", "j2", "--format", "json", "--engine", "memory", "--bootstrap", "100",
                 "--min-consistency", "0")
    assert streamed.returncode == whole.returncode == 0, streamed.stderr + whole.stderr
    assert json.loads(streamed.stdout) == json.loads(whole.stdout)
    gated = [_cli(str(path), "--judge", "j2", "--engine", engine, "--min-consistency", "0.99") for engine in
             ("streaming", "memory")]
    assert gated[0].returncode == gated[1].returncode == 1 and gated[0].stderr == gated[1].stderr
    refused = _cli(str(path), "--judge", "j2", "--engine", "streaming", "--order-effect")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "--order-effect and --control fit single calls" in refused.stderr and "--engine memory" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    BAD["unknown verdict"](rows)
    bad = write_parquet(tmp_path / "bad.parquet", rows)
    errors = [_cli(str(bad), "--judge", "j2", "--engine", engine) for engine in ("streaming", "memory")]
    assert errors[0].returncode == errors[1].returncode == 2
    assert errors[0].stderr == errors[1].stderr and "row group" in errors[0].stderr


@pytest.mark.parametrize("n_items", [1, 2, 7, 1000, 65_537, 300_001])
def test_the_bootstraps_int32_draws_are_numpys_int64_draws(n_items: int) -> None:
    """The bootstrap draws items as int32 to halve its memory: the same stream as int64 draws (numpy draws any
    bound below 2^32 through one 32-bit path), so the intervals of a seed did not move."""
    wide = np.random.default_rng(11).integers(0, n_items, size=(3, n_items))
    narrow = np.random.default_rng(11).integers(0, n_items, size=(3, n_items), dtype=np.int32)
    assert np.array_equal(wide, narrow)


def test_the_bootstrap_gives_the_same_intervals_whatever_the_rounds_drawn_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Many items make the bootstrap draw fewer rounds at once (its memory is bounded): numpy fills every batch
    from one stream in order, so a seed's resamples, and the intervals, are those of one big batch."""
    import swapjudge.ranking.bradley_terry as bt
    from swapjudge.ranking.battles import comparisons_from_records
    from swapjudge.reading.records import read_records

    data = comparisons_from_records(read_records(mixed(60, seed=3)), judge="j1")
    whole = fit_ranking(data, rounds=37, seed=5).to_dict()
    n_items = int(np.unique(data.item).size)
    for rounds_at_once in (1, 4):
        monkeypatch.setattr(bt, "_DRAW_BYTES", rounds_at_once * 4 * n_items)
        assert fit_ranking(data, rounds=37, seed=5).to_dict() == whole
    monkeypatch.setattr(bt, "_DRAW_BYTES", 4 * n_items)
    assert fit_ranking(data, rounds=37, seed=6).to_dict() != whole  # the test can tell resamples apart


def test_the_python_api_streams_with_the_engine_it_is_given(tmp_path: Path) -> None:
    import swapjudge

    rows = SHAPES["two_systems"]()
    path = write_parquet(tmp_path / "records.parquet", rows)
    streamed = swapjudge.rank(path, engine="streaming", bootstrap=50, min_consistency=0).to_dict()
    assert streamed == swapjudge.rank(path, engine="memory", bootstrap=50, min_consistency=0).to_dict()
    with pytest.raises(SwapjudgeError, match="engine must be one of"):
        swapjudge.rank(path, engine="spark")
