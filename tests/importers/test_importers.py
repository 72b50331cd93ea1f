"""Each importer on a small fixture written in its source's exact schema (tests/fixtures/importers/README.md),
awkward rows included: every record's slots and verdict, and every awkward row's place, kind and reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swapjudge.core.analysis import analyze_records
from swapjudge.errors import InputError
from swapjudge.importers import FORMATS, ImportOptions, ImportResult, import_files, write_records
from swapjudge.importers.arena_hard import label_verdict
from swapjudge.importers.csv_table import parse_map
from swapjudge.reading.records import read_records, records_from_dicts

FIX = Path(__file__).parents[1] / "fixtures" / "importers"


def calls(result: ImportResult) -> dict[tuple[str, str, str], str | None]:
    """(item, first, second) -> verdict for every record."""
    return {(r["item"], r["first"], r["second"]): r["verdict"] for r in result.records}


def awkward(result: ImportResult) -> list[tuple[str, str]]:
    """(location suffix after the file name, kind) for every awkward row, sorted."""
    out = []
    for a in result.awkward:
        loc = a.location
        out.append((loc[loc.rindex("["):] if loc.endswith("]") else loc.rsplit(":", 1)[1], a.kind))
    return sorted(out)


def test_registry_names_every_format_with_its_source() -> None:
    assert list(FORMATS) == ["fastchat", "arena-hard", "judgebench", "llmbar", "alpaca-eval", "shi2024",
                             "inspect", "promptfoo", "promptfoo-select-best", "deepeval-arena", "langwatch",
                             "label-studio", "csv"]
    for fmt in FORMATS.values():
        assert fmt.source and fmt.summary and "judge_name" in fmt.options


def test_the_registry_loads_no_importer_until_one_is_used() -> None:
    # listing FORMATS (every command's start builds `swapjudge import --help`) must not load the importers
    import subprocess
    import sys

    code = ("import sys, swapjudge.importers as m; "
            "print(sorted(k for k in sys.modules if k.startswith(m.__name__ + '.'))); "
            "m.write_records; import swapjudge.importers.base as b; print(m.write_records is b.write_records)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["[]", "True"]
    import swapjudge.importers as package

    for name, home in package._HOMES.items():  # every lazily exported name is its home module's object
        module = __import__(f"swapjudge.importers.{home}", fromlist=[name])
        assert getattr(package, name) is getattr(module, name), name
    with pytest.raises(AttributeError):
        package.no_such_name  # noqa: B018


def test_fastchat_games_map_to_slots_and_awkward_rows_are_reported() -> None:
    res = import_files("fastchat", [FIX / "fastchat" / "gpt-4_pair.jsonl"])
    v, m = "vicuna-13b-v1.3", "alpaca-13b"
    assert calls(res) == {
        # line 1 is superseded by line 9 (same calls): model_2 won both games -> alpaca consistently
        ("81:turn1", v, m): "second", ("81:turn1", m, v): "first",
        # 82: game 1 model_1 (slot A), game 2 model_2 (slot A): a flip toward the first slot
        ("82:turn1", v, m): "first", ("82:turn1", m, v): "first",
        ("83:turn1", v, m): "tie", ("83:turn1", m, v): "tie",  # "tie (bothbad)" is a tie
        ("84:turn1", v, m): None, ("84:turn1", m, v): "first",  # "error" is no verdict
        ("85:turn2", v, m): "first", ("85:turn2", m, v): "first",  # winners given as model names
        ("86:turn1", v, m): "second",  # game 2 absent
    }
    judges = {r["item"]: r["judge"] for r in res.records}
    assert judges["82:turn1"] == "gpt-4/pair-v2" and judges["85:turn2"] == "gpt-4/pair-v2-multi-turn"
    assert {r["raw"] for r in res.records if r["item"] == "82:turn1"} == {
        "judgment text game 1 q82", "judgment text game 2 q82"}
    assert awkward(res) == sorted([("7", "error"), ("11", "error"), ("6", "skipped"), ("4", "null_verdict"),
                            ("8", "game_missing"), ("1", "duplicate"), ("1", "duplicate")])
    report = res.reports[0]
    assert (report.rows, report.records) == (10, 11)
    assert report.counts == {"error": 2, "skipped": 1, "null_verdict": 1, "game_missing": 1, "duplicate": 2}
    assert "missing field model_2" in {a.reason for a in res.awkward}


def test_arena_hard_keeps_strength_and_reports_nulls_and_missing_games() -> None:
    path = FIX / "arena_hard" / "gpt-4.1" / "model-x.jsonl"
    res = import_files("arena-hard", [path])
    x, base = "model-x", "o3-mini"
    assert calls(res) == {
        ("u1", base, x): "first", ("u1", x, base): "second",  # game 1 baseline in A; A>>B = baseline
        ("u2", base, x): "tie", ("u2", x, base): "first",
        ("u3", base, x): None, ("u3", x, base): "second",
        ("u4", base, x): None, ("u4", x, base): "second",  # A<B: B wins
        ("u5", base, x): "first",
        ("u7", base, x): None, ("u7", x, base): "first",
    }
    strength = {(r["item"], r["game"]): (r["strength"], r["score"]) for r in res.records}
    assert strength[("u1", 1)] == (2, "A>>B")
    assert strength[("u1", 2)] == (1, "B>A")
    assert strength[("u2", 1)] == (None, "A=B")
    assert res.records[0]["raw"] == "My final verdict is: [[A>>B]]"
    assert res.records[0]["category"] == "hard_prompt"
    assert awkward(res) == sorted([("6", "error"), ("3", "null_verdict"), ("4", "null_verdict"),
                                   ("7", "null_verdict"),
                            ("5", "game_missing")])
    # the v0.1 row has no `baseline` field: --baseline supplies it
    again = import_files("arena-hard", [path], ImportOptions(baseline="gpt-4-0314"))
    assert calls(again)[("q6", "gpt-4-0314", x)] == "second"
    assert calls(again)[("q6", x, "gpt-4-0314")] == "first"
    assert "error" not in again.reports[0].counts


@pytest.mark.parametrize(("label", "expected"), [
    ("A>>B", ("first", 2)), ("A>B", ("first", 1)), ("A=B", ("tie", None)),
    ("B>A", ("second", 1)), ("B>>A", ("second", 2)), ("A<B", ("second", 1)),
    ("A<<B", ("second", 2)), ("B<A", ("first", 1)), ("B<<A", ("first", 2)),
    ("B=A", ("tie", None)), ("[[A>B]]", ("first", 1)), (" a>b ", ("first", 1)),
    (None, None), ("A>A", None), ("A?B", None), ("", None),
])
def test_arena_labels(label: Any, expected: Any) -> None:
    assert label_verdict(label) == expected


def test_judgebench_decisions_are_read_in_each_calls_own_frame() -> None:
    res = import_files("judgebench", sorted((FIX / "judgebench").glob("*.jsonl")))
    a, b = "response_A", "response_B"
    assert calls(res) == {
        ("p1", a, b): "first", ("p1", b, a): "second",  # B>A in the swapped call names response_A
        ("p2", a, b): "first", ("p2", b, a): "first",
        ("p3", a, b): "tie", ("p3", b, a): None,
        ("p4", a, b): None, ("p4", b, a): "second",
        ("p5", a, b): "second",
        ("p6", a, b): "first", ("p6", b, a): "second",
    }
    labels = {r["item"]: r["label"] for r in res.records}
    assert labels == {"p1": a, "p2": b, "p3": a, "p4": b, "p5": a, "p6": None}
    # JudgeBench's arena-hard prompt answers on the graded scale: one `>` is slightly better, a tie has none
    assert {(r["item"], r["game"]): r["strength"] for r in res.records if r["item"] in ("p1", "p3")} == {
        ("p1", 1): 1, ("p1", 2): 1, ("p3", 1): None, ("p3", 2): None}
    assert {r["judge"] for r in res.records} == {"arena_hard/gpt-4o-mini"}
    assert awkward(res) == sorted([("3", "null_verdict"), ("4", "null_verdict"), ("5", "game_missing"),
                            ("6", "warning")])


def test_judgebench_labels_feed_the_accuracy_analysis() -> None:
    res = import_files("judgebench", sorted((FIX / "judgebench").glob("*.jsonl")))
    result = analyze_records(records_from_dicts(res.records, allow_unpaired=True))[0].to_dict()
    # complete labelled pairs: p1 (right twice), p2 (label B; first call wrong, second right)
    assert result["pairs"]["complete"] == 3 and result["accuracy"]["pairs"] == 2


def test_llmbar_rounds_labels_and_skipped_evaluators() -> None:
    path = FIX / "llmbar" / "Natural" / "evaluators" / "GPT-4" / "Swap_CoT" / "result.json"
    last = import_files("llmbar", [path])
    o1, o2 = "output_1", "output_2"
    assert calls(last) == {
        ("Natural:0", o1, o2): "second", ("Natural:0", o2, o1): "first",  # synthesis round: output_2 both
        ("Natural:1", o1, o2): "first", ("Natural:1", o2, o1): "second",
        ("Natural:2", o1, o2): None, ("Natural:2", o2, o1): "second",
        ("Natural:5", o1, o2): "second", ("Natural:5", o2, o1): "second",  # aux [text, reason] entry skipped
    }
    assert {r["judge"] for r in last.records} == {"GPT-4/Swap_CoT"}
    assert {r["item"]: r["label"] for r in last.records}["Natural:0"] == o2
    assert awkward(last) == sorted([("[4]", "error"), ("[3]", "skipped"), ("[2]", "null_verdict")])
    first = import_files("llmbar", [path], ImportOptions(round_choice="first"))
    assert calls(first)[("Natural:0", o1, o2)] == "first"  # the initial round disagreed: a flip
    assert calls(first)[("Natural:0", o2, o1)] == "first"
    assert [r["llmbar_round"] for r in first.records if r["item"] == "Natural:0"] == [0, 0]
    assert [r["llmbar_round"] for r in last.records if r["item"] == "Natural:0"] == [1, 1]


def test_alpaca_eval_single_order_with_recorded_switches() -> None:
    path = FIX / "alpaca_eval" / "model-x" / "alpaca_eval_cot_gpt4_turbo_fn" / "annotations.json"
    res = import_files("alpaca-eval", [path])
    by_item = {r["instruction"]: r for r in res.records}
    ref, mod = "gpt4_1106_preview", "model-x"
    got = {k: (r["first"], r["second"], r["verdict"], r["order_source"]) for k, r in by_item.items()}
    assert got == {
        "i0": (mod, ref, "second", "ranking"),  # "m" (shown first) ranked 2nd, output_1 won: output_2 was "m"
        "i1": (ref, mod, "second", "ranking"),
        "i2": (mod, ref, "tie", "is_switched_outputs"),
        "i3": (ref, mod, "second", "is_switched_outputs"),  # 1.73 leans to output_2
        "i4": (mod, ref, None, "is_switched_outputs"),
        # m/M annotators: the token names the winner's slot, the preference the winner's output
        "i7": (mod, ref, "first", "raw_completion"),  # m far likelier, output_2 preferred: output_2 shown first
        "i8": (mod, ref, "second", "raw_completion"),  # M likelier (though "m" was sampled), output_1 preferred
        "i9": (ref, mod, "second", "raw_completion"),  # plain "M", output_2 preferred: not switched
    }
    assert awkward(res) == sorted([("[5]", "error"), ("[6]", "error"), ("[4]", "null_verdict")])
    assert not any(a.kind == "single_order" for a in res.awkward)  # one order per pair is the design
    assert any("swap-consistency" in n for n in res.reports[0].notes)
    stored = import_files("alpaca-eval", [path], ImportOptions(order="as-stored"))
    row5 = next(r for r in stored.records if r["instruction"] == "i5")
    assert (row5["first"], row5["second"], row5["verdict"], row5["order_source"]) == (ref, mod, "first",
                                                                                      "as-stored")


def test_alpaca_eval_analysis_says_consistency_cannot_be_measured() -> None:
    path = FIX / "alpaca_eval" / "model-x" / "alpaca_eval_cot_gpt4_turbo_fn" / "annotations.json"
    res = import_files("alpaca-eval", [path])
    loaded = records_from_dicts(res.records)
    assert loaded.single_order
    out = analyze_records(loaded, judge="alpaca_eval_cot_gpt4_turbo_fn")[0].to_dict()
    assert out["single_order"] is True and out["consistency"]["rate"] is None
    # usable verdicts: i0 second, i1 second, i3 second, i2 tie -> first-slot rate 0 of 3
    assert (out["verdicts"]["first"], out["verdicts"]["second"], out["verdicts"]["tie"]) == (0, 3, 1)
    assert out["verdicts"]["first_slot_rate"] == 0.0
    assert not out["gate"]["passed"]
    weighted = analyze_records(loaded, judge="weighted_alpaca_eval_gpt4_turbo")[0].to_dict()
    assert weighted["verdicts"]["first_slot_rate"] == 0.5 and weighted["consistency"]["rate"] is None


def test_csv_maps_columns_and_reports_twins_missing() -> None:
    opts = ImportOptions(item="q", first="shown_1", second="shown_2", verdict="outcome",
                         map="A=first,B=second,C=tie", judge="grader", label="truth", round="rep")
    res = import_files("csv", [FIX / "csv" / "calls.csv"], opts)
    assert calls(res) == {
        ("q1", "sysA", "sysB"): "first", ("q1", "sysB", "sysA"): "second",
        ("q2", "sysA", "sysB"): "tie", ("q2", "sysB", "sysA"): "first",
        ("q3", "sysA", "sysB"): None, ("q3", "sysB", "sysA"): None,
        ("q4", "sysA", "sysB"): "first",
        ("q6", "sysA", "sysB"): "second", ("q6", "sysB", "sysA"): "first",
    }
    assert {r["item"]: r["round"] for r in res.records}["q6"] == 1
    assert {r["item"]: r["label"] for r in res.records}["q1"] == "sysA"
    # the quoted two-line note makes q2's second row line 6, so every later line number counts physical lines
    assert awkward(res) == sorted([("10", "error"), ("7", "null_verdict"), ("8", "null_verdict"),
                                   ("9", "single_order")])
    assert any("--allow-unpaired" in n for n in res.reports[0].notes)


def test_csv_round_trip_equals_analysing_the_native_records(tmp_path: Path) -> None:
    """A table of presentation records imported through `csv` analyses exactly like the table itself."""
    native = tmp_path / "native.csv"
    rows = ["item,first,second,verdict,judge"]
    outcomes = [("first", "second")] * 7 + [("second", "first")] * 4 + [("first", "first")] * 3
    outcomes += [("tie", "")]  # one pair with a missing verdict
    for i, (v1, v2) in enumerate(outcomes):
        rows += [f"i{i},A,B,{v1},j", f"i{i},B,A,{v2},j"]
    native.write_text("\n".join(rows) + "\n")
    res = import_files("csv", [native], ImportOptions(item="item", first="first", second="second",
                                                      verdict="verdict", judge="judge",
                                                      map="first=first,second=second,tie=tie"))
    out = tmp_path / "imported.jsonl"
    write_records(res.records, out)
    direct = analyze_records(read_records(native), a="A", b="B")[0].to_dict()
    imported = analyze_records(read_records(out), a="A", b="B")[0].to_dict()
    assert imported == direct
    assert direct["outcomes"]["consistent"] == 11 and direct["outcomes"]["flips_first"] == 3


def test_parse_map_rejects_bad_targets() -> None:
    assert parse_map("A=first, B=second,C=tie,D=null") == {"A": "first", "B": "second", "C": "tie", "D": None}
    assert parse_map("x=y=first") == {"x=y": "first"}
    with pytest.raises(InputError, match=r"^map entry 'A=winner'"):
        parse_map("A=winner")
    with pytest.raises(InputError, match=r"^map is empty"):
        parse_map(" , ")


def test_options_that_do_not_apply_are_refused() -> None:
    with pytest.raises(InputError, match="option baseline does not apply to format fastchat"):
        import_files("fastchat", [FIX / "fastchat" / "gpt-4_pair.jsonl"], ImportOptions(baseline="x"))
    with pytest.raises(InputError, match="format csv needs item, first, second, verdict, map"):
        import_files("csv", [FIX / "csv" / "calls.csv"])
    with pytest.raises(InputError, match="unknown import format 'mtbench'"):
        import_files("mtbench", [])


def test_missing_column_names_the_file_and_the_columns(tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("q,a,b\n1,x,y\n")
    with pytest.raises(InputError, match=r"t\.csv:1: missing columns shown_1, outcome \(header has: q, a, b"):
        import_files("csv", [table], ImportOptions(item="q", first="shown_1", second="b", verdict="outcome",
                                                   map="A=first"))


def test_write_records_is_atomic_and_leaves_no_temp_file(tmp_path: Path) -> None:
    out = tmp_path / "records.jsonl"
    out.write_text("old content\n")
    rows = [{"item": "1", "first": "a", "second": "b", "verdict": "first", "raw": "line\nbreak ü"}]
    assert write_records(rows, out) == 1
    assert [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()] == rows
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records.jsonl"]

    with pytest.raises(TypeError):  # the second row cannot be serialised: the write fails midway
        write_records([rows[0], {"item": object()}], out)
    assert [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()] == rows  # untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records.jsonl"]


def test_write_records_csv_round_trips_through_the_loader(tmp_path: Path) -> None:
    res = import_files("fastchat", [FIX / "fastchat" / "gpt-4_pair.jsonl"])
    out = tmp_path / "records.csv"
    write_records(res.records, out)
    loaded = read_records(out, allow_unpaired=True)
    assert len(loaded) == len(res.records) == 11
    assert loaded.frame.get_column("verdict").null_count() == 1


def test_pairs_are_matched_across_files_and_duplicates_across_files_reported(tmp_path: Path) -> None:
    head = "q,s1,s2,v\n"
    (tmp_path / "a.csv").write_text(head + "q1,x,y,A\nq2,x,y,B\n")
    (tmp_path / "b.csv").write_text(head + "q1,y,x,B\nq2,y,x,B\nq2,x,y,A\n")
    opts = ImportOptions(item="q", first="s1", second="s2", verdict="v", map="A=first,B=second")
    res = import_files("csv", [tmp_path / "a.csv", tmp_path / "b.csv"], opts)
    assert [r.counts for r in res.reports] == [{"duplicate": 1}, {}]
    assert res.awkward[0].location == f"{tmp_path / 'a.csv'}:3"
    assert f"seen again at {tmp_path / 'b.csv'}:4" in res.awkward[0].reason
    assert calls(res) == {("q1", "x", "y"): "first", ("q1", "y", "x"): "second",
                          ("q2", "y", "x"): "second", ("q2", "x", "y"): "first"}
