"""The small-file reader (`reading.small`, the standard library alone) against the in-memory reduction
(`reading.reduce.FrameSource`, polars) of the same file: the same counts for every judge and pair, the same
documents byte for byte, on seeded shapes and the repository's examples; and no answer (the usual reader's turn)
for every file it does not read, so a problem is still named by its line."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest

from conftest import shi2024_records, write_jsonl
from record_shapes import SHAPES
from swapjudge.core.analysis import analyze_records, analyze_source
from swapjudge.errors import InputError
from swapjudge.reading.records import read_records
from swapjudge.reading.reduce import FrameSource, Kinds, PairCounts
from swapjudge.reading.small import SMALL_BYTES, small_source
from swapjudge.workflows.analyze import analyze

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# shapes whose records carry a field only the usual reader reads (probabilities, an adaptive run's threshold, a
# live review's re-show share)
DEFERRED_SHAPES = {"mixed_probabilities", "adaptive", "reshown"}


def _kinds(kinds: Kinds) -> dict[tuple[tuple[int, int], ...], int]:
    """Each kind's multiset of pair types (type, pairs) -> its items: the same kinds in any order."""
    found: dict[tuple[tuple[int, int], ...], int] = {}
    for k, items in enumerate(kinds.items.tolist()):
        key = tuple(sorted((int(t), int(c)) for kind, t, c in zip(kinds.kind, kinds.ptype, kinds.count, strict=True)
                           if kind == k))
        found[key] = found.get(key, 0) + int(items)
    return found


def _same_counts(small: PairCounts, memory: PairCounts) -> None:
    assert small.pairs == memory.pairs
    assert _kinds(small.kinds) == _kinds(memory.kinds)
    assert (small.rounds, small.probes, small.reshow, small.debias) == \
        (memory.rounds, memory.probes, memory.reshow, memory.debias)
    assert small.type_counts.tolist() == memory.type_counts.tolist()


def _json(results: Any) -> str:
    return json.dumps([r.to_dict() for r in results], allow_nan=False)


def _check(path: Path, allow_unpaired: bool = False, **options: Any) -> None:
    small = small_source(path, allow_unpaired=allow_unpaired)
    assert small is not None
    loaded = read_records(path, allow_unpaired=allow_unpaired, extras=False)
    memory = FrameSource(loaded.frame)
    assert small.judges() == memory.judges()
    for judge in memory.judges():
        systems = memory.systems(judge)
        assert small.systems(judge) == systems
        for pair in [None, *combinations(systems, 2), *((b, a) for a, b in combinations(systems, 2))]:
            _same_counts(small.counts(judge, pair), memory.counts(judge, pair))
    for column in ("registered_tie_policy", "registered_a", "registered_b"):
        assert small.registered(column) == memory.registered(column)
    # the documents: to the last bit the in-memory analysis of the loaded records, and `analyze` takes this road
    reference = _json(analyze_records(loaded, **options))
    assert _json(analyze_source(small, **options)) == reference
    assert _json(analyze(path, allow_unpaired=allow_unpaired, **options)) == reference


@pytest.mark.parametrize("shape", sorted(set(SHAPES) - DEFERRED_SHAPES))
def test_every_plain_shape_gives_the_in_memory_counts_and_documents(tmp_path: Path, shape: str) -> None:
    path = write_jsonl(tmp_path / "records.jsonl", SHAPES[shape]())
    _check(path, allow_unpaired=shape == "unpaired")
    _check(path, allow_unpaired=shape == "unpaired", tie_policy="exclude", confidence=0.9, min_consistency=0.2)


def test_the_example_gives_the_in_memory_counts_and_documents() -> None:
    _check(EXAMPLES / "mtbench_gpt4_vs_vicuna.jsonl")


@pytest.mark.parametrize(("benchmark", "judge"), [("MTBench", "gpt-4-0613"), ("MTBench", "gemini-pro")])
def test_real_judge_data_gives_the_in_memory_counts_and_documents(tmp_path: Path, benchmark: str, judge: str) -> None:
    """Shi et al.'s verdicts in both orders (ties, unparsed calls, many systems per item)."""
    _check(write_jsonl(tmp_path / "shi.jsonl", shi2024_records(benchmark, judge)))


def test_a_registered_policy_and_pair_are_read_as_the_loader_reads_them(tmp_path: Path) -> None:
    rows = [{**row, "registered_tie_policy": "no_credit", "registered_a": "cand", "registered_b": "base"}
            for row in SHAPES["two_systems"]()]
    path = write_jsonl(tmp_path / "registered.jsonl", rows)
    _check(path)
    (only,) = analyze(path)
    assert only.pair == ("cand", "base") and only.ungated_win_rate is not None
    assert str(only.ungated_win_rate.policy) == "no_credit"


@pytest.mark.parametrize("shape", sorted(DEFERRED_SHAPES))
def test_fields_only_the_usual_reader_reads_are_left_to_it(tmp_path: Path, shape: str) -> None:
    path = write_jsonl(tmp_path / "records.jsonl", SHAPES[shape]())
    assert small_source(path, allow_unpaired=True) is None


@pytest.mark.parametrize(("change", "line"), [
    (lambda rows: [*rows, rows[0]], 161),  # a call twice: named on its second line
    (lambda rows: rows[1:], 1),  # a pair judged in one order only
    (lambda rows: [{**rows[0], "verdict": "left"}, *rows[1:]], 1),  # a verdict that is none
    (lambda rows: [{**rows[0], "strength": 2}, *rows[1:]], None),  # graded verdicts
    (lambda rows: [{**rows[0], "registered_a": 3}, *rows[1:]], None),  # provenance that is not text
])
def test_a_file_with_a_problem_or_an_unread_field_is_left_to_the_usual_reader(tmp_path: Path, change: Any,
                                                                              line: int | None) -> None:
    path = write_jsonl(tmp_path / "records.jsonl", change(SHAPES["two_systems"]()))
    assert small_source(path) is None
    if line is None:
        return
    with pytest.raises(InputError) as err:  # the usual reader's one line, naming the place
        analyze(path)
    assert err.value.line == line


def test_not_json_lines_stdin_and_large_files_are_left_to_the_usual_reader(tmp_path: Path) -> None:
    rows = SHAPES["two_systems"]()
    csv = tmp_path / "records.csv"
    lines = [f"{r['item']},{r['first']},{r['second']},{r['verdict'] or ''}\n" for r in rows]
    csv.write_text("item,first,second,verdict\n" + "".join(lines))
    assert small_source(csv) is None and small_source("-") is None
    assert small_source(tmp_path / "absent.jsonl") is None
    big = write_jsonl(tmp_path / "big.jsonl", [{**r, "item": f"{r['item']}-{k}"} for k in range(200) for r in rows])
    assert big.stat().st_size > SMALL_BYTES
    assert small_source(big) is None
    assert small_source(write_jsonl(tmp_path / "fits.jsonl", rows)) is not None
