"""The shi2024 importer on the real Shi et al. 2024 tables in ../shared/data/shi2024.

Per pair, the imported records must give the counts the analysis is specified to find; per call, the
`per_call_consistency` view must reproduce the "N out of M answers are consistent" lines of the source
repository's own published logs, read from the logs here rather than typed in.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from conftest import ROOT, shared_data
from swapjudge.core.analysis import analyze_records
from swapjudge.importers import ImportResult, import_files, per_call_consistency, write_records
from swapjudge.reading.records import read_records, records_from_dicts

LOG_LINE = re.compile(r"^(\d+) out of (\d+) answers are consistent\.", re.M)


def shared(name: str) -> Path:
    return shared_data("shi2024", name)


@cache
def imported() -> ImportResult:
    return import_files("shi2024", [shared("verdicts_both_orders.csv")])


def published(benchmark: str, judge: str) -> tuple[int, int]:
    text = shared("repo_logs").joinpath(f"{benchmark}__{judge}.log.txt").read_text(encoding="utf-8")
    found = LOG_LINE.findall(text)
    assert len(found) == 1, f"expected one consistency line in the {benchmark} {judge} log"
    return int(found[0][0]), int(found[0][1])


def test_every_row_becomes_a_record_and_the_empty_verdicts_are_listed() -> None:
    res = imported()
    report = res.reports[0]
    assert (report.rows, report.records) == (25_600, 25_600)
    assert report.counts == {"null_verdict": 37}  # no single-order pair, no duplicate
    first = res.records[0]
    assert first == {
        "item": "DevBench/idcenter_uml_class-complexity", "first": "human", "second": "gpt-3.5-turbo-1106",
        "verdict": "second", "judge": "DevBench/claude-3-haiku-20240307", "round": 0, "label": None,
        "raw": None,
        "benchmark": "DevBench", "judge_model": "claude-3-haiku-20240307", "task": "uml_class-complexity",
        "question_id": "idcenter_uml_class-complexity",
    }
    assert all(a.location.startswith(str(shared("verdicts_both_orders.csv"))) for a in res.awkward)


@pytest.mark.parametrize(("judge", "complete", "total", "consistent", "to_first", "to_second"), [
    ("MTBench/gpt-4-0613", 2400, 2400, 1957, 198, 245),
    ("DevBench/claude-3-haiku-20240307", 1117, 1120, 253, 15, 849),
])
def test_per_pair_counts(judge: str, complete: int, total: int, consistent: int, to_first: int,
                         to_second: int) -> None:
    result = analyze_records(records_from_dicts(imported().records), judge=judge)[0].to_dict()
    assert result["pairs"]["complete"] == complete and result["pairs"]["total"] == total
    assert result["outcomes"]["consistent"] == consistent
    assert result["flip_direction"]["first"] == to_first
    assert result["flip_direction"]["second"] == to_second


def test_per_call_view_matches_every_published_log_for_the_judges_in_the_table() -> None:
    rows = per_call_consistency(imported().records)
    assert len(rows) == 8  # MTBench x 3 judges, DevBench x 5 judges
    for row in rows:
        judge_model = row.judge.split("/", 1)[1]
        consistent, parsed = published(row.benchmark, judge_model)
        assert (row.consistent, row.parsed_calls) == (consistent, parsed), row
        assert row.log_line().startswith(f"{consistent} out of {parsed} answers are consistent.")
    mt = next(r for r in rows if r.judge == "MTBench/gpt-4-0613")
    assert (mt.consistent, mt.parsed_calls, mt.calls) == (3914, 4800, 4800)


def test_per_call_and_per_pair_differ_where_verdicts_are_missing() -> None:
    """DevBench claude-3-haiku: 3 unparsed calls; per call each twin counts as consistent (253 x 2 + 3)."""
    row = next(r for r in per_call_consistency(imported().records)
               if r.judge == "DevBench/claude-3-haiku-20240307")
    assert (row.consistent, row.parsed_calls, row.calls) == (509, 2237, 2240)
    assert row.consistent == 2 * 253 + (row.calls - row.parsed_calls)


def test_repetition_column_becomes_round() -> None:
    res = import_files("shi2024", [shared("repetition_sample_verdicts_both_orders.csv")])
    assert len(res.records) == 9072
    assert sorted({r["round"] for r in res.records}) == [1, 2, 3]
    assert not any(a.kind in ("single_order", "duplicate", "error") for a in res.awkward)
    calls = {(r.judge, r.round): r.calls for r in per_call_consistency(res.records)}
    assert len(calls) == 2 * 9 * 3  # 9 judges on each benchmark, 3 runs each
    # 96 pairs per judge and run on MTBench, 72 on DevBench, two calls each
    assert {n for (judge, _), n in calls.items() if judge.startswith("MTBench/")} == {192}
    assert {n for (judge, _), n in calls.items() if judge.startswith("DevBench/")} == {144}


def test_round_trip_matches_the_native_example_file(tmp_path: Path) -> None:
    """Records written by the importer and read back analyse exactly like the project's native example of
    the same calls (examples/mtbench_gpt4_vs_vicuna.jsonl), apart from the judge's name."""
    out = tmp_path / "shi.jsonl"
    write_records(imported().records, out)
    mine = analyze_records(read_records(out), judge="MTBench/gpt-4-0613")[0].to_dict()
    native = analyze_records(read_records(ROOT / "examples" / "mtbench_gpt4_vs_vicuna.jsonl"))[0].to_dict()
    assert mine.pop("judge") == "MTBench/gpt-4-0613" and native.pop("judge") == "gpt-4-0613"
    assert json.dumps(mine, sort_keys=True) == json.dumps(native, sort_keys=True)
    assert mine["outcomes"]["consistent"] == 1957


def test_raw_judgments_jsonl_carries_the_judges_text_and_agrees_with_the_table() -> None:
    raw = import_files("shi2024", [shared("MTBench__gpt-4-0613__raw_judgments.jsonl")])
    assert (raw.reports[0].rows, raw.reports[0].records, raw.awkward) == (4800, 4800, ())
    table = {(r["item"], r["first"], r["second"]): r["verdict"] for r in imported().records
             if r["judge"] == "MTBench/gpt-4-0613"}
    assert {(r["item"], r["first"], r["second"]): r["verdict"] for r in raw.records} == table
    first = raw.records[0]
    assert first["raw"].endswith("[[A]]") and first["verdict"] == "first"
