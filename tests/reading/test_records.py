import json
import subprocess
import sys

import polars as pl
import pytest

from conftest import contract_400, pair, write_jsonl
from swapjudge.errors import InputError
from swapjudge.reading.records import _fast_frame, _slow_frame, read_records, records_from_dicts

CLI = [sys.executable, "-m", "swapjudge"]


def lines(*rows):
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


GOOD = [dict(item=1, first="A", second="B", verdict="first"), dict(item=1, first="B", second="A", verdict="second")]


def error_of(tmp_path, text, name="r.jsonl", **kwargs):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as info:
        read_records(path, **kwargs)
    return info.value


@pytest.mark.parametrize(("text", "line", "field", "words"), [
    (lines(GOOD[0], "{not json", GOOD[1]), 2, None, "not valid JSON"),
    (lines(GOOD[0], GOOD[1], [1, 2]), 3, None, "must be a JSON object"),
    (lines(GOOD[0], {"item": 1, "first": "B", "verdict": "first"}), 2, "second", "missing"),
    (lines(GOOD[0], {"item": 1, "first": "B", "second": "A"}), 2, "verdict", "missing"),
    (lines(GOOD[0], {"item": 1, "first": "B", "second": "A", "verdict": "A"}), 2, "verdict", "unknown value"),
    (lines(GOOD[0], {"item": None, "first": "B", "second": "A", "verdict": "tie"}), 2, "item", "non-empty"),
    (lines(*GOOD, GOOD[1]), 3, "item", "duplicate call"),
    (lines(*GOOD, {"item": 2, "first": "A", "second": "B", "verdict": "tie"}), 3, "second", "one order only"),
    (lines(*GOOD, {"item": 1, "first": "A", "second": "B", "verdict": "tie", "round": "x"}), 3, "round", "integer"),
])
def test_bad_jsonl_names_line_and_field(tmp_path, text, line, field, words):
    err = error_of(tmp_path, text)
    assert err.line == line
    assert err.field == field
    assert words in str(err)
    assert str(err).startswith(f"{tmp_path / 'r.jsonl'}:{line}")


def test_bad_csv_names_line_and_field(tmp_path):
    text = "item,first,second,verdict\n1,A,B,first\n1,B,A,second\n2,A,B,maybe\n2,B,A,first\n"
    err = error_of(tmp_path, text, name="r.csv")
    assert (err.line, err.field) == (4, "verdict")
    err = error_of(tmp_path, "item,first,verdict\n1,A,first\n", name="r.csv")
    assert (err.line, err.field) == (1, "second")


def test_csv_line_numbers_count_multiline_cells(tmp_path):
    text = 'item,first,second,verdict,raw\n1,A,B,first,"two\nlines"\n1,B,A,second,ok\n2,A,B,bogus,x\n'
    err = error_of(tmp_path, text, name="r.csv")
    assert (err.line, err.field) == (5, "verdict")


def test_jsonl_and_csv_load_the_same_frame(tmp_path):
    rows = [*pair(1, "first", "second"), *pair("q2", None, "tie"), *pair(3, "tie", "first")]
    j = read_records(write_jsonl(tmp_path / "r.jsonl", rows))
    with (tmp_path / "r.csv").open("w") as f:
        f.write("item,first,second,verdict\n")
        for r in rows:
            f.write(f"{r['item']},{r['first']},{r['second']},{r['verdict'] or ''}\n")
    c = read_records(tmp_path / "r.csv")
    cols = ["judge", "round", "item", "first", "second", "verdict", "label"]
    assert j.frame.select(cols).equals(c.frame.select(cols))
    assert j.frame.get_column("verdict").to_list() == ["first", "second", None, "tie", "tie", "first"]


def test_fast_and_slow_paths_agree(tmp_path):
    rows = contract_400()
    rows[0]["judge"] = "j"
    rows[1]["judge"] = "j"
    rows[5]["raw"] = "text"
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    fast = _fast_frame(data, is_csv=False)
    slow = _slow_frame(data, "x", is_csv=False).drop("_line")
    assert fast is not None
    cols = ["judge", "round", "item", "first", "second", "verdict", "label", "raw"]
    assert fast.select(cols).equals(slow.select(cols))


def test_mixed_item_types_and_blank_lines(tmp_path):
    text = lines(dict(item=7, first="A", second="B", verdict=None), "", "   ",
                 dict(item="7", first="B", second="A", verdict="first"))
    # integer 7 and string "7" are the same item (compared as strings): one complete-or-not pair
    recs = read_records(_write(tmp_path, text))
    assert recs.frame.get_column("item").to_list() == ["7", "7"]


def _write(tmp_path, text):
    path = tmp_path / "r.jsonl"
    path.write_text(text)
    return path


def test_single_order_file_is_accepted_and_flagged(tmp_path):
    rows = [dict(item=i, first="A", second="B", verdict="first") for i in range(5)]
    recs = read_records(write_jsonl(tmp_path / "r.jsonl", rows))
    assert recs.single_order


def test_allow_unpaired_keeps_lonely_calls(tmp_path):
    rows = [*pair(1, "first", "second"), dict(item=2, first="A", second="B", verdict="tie")]
    recs = read_records(write_jsonl(tmp_path / "r.jsonl", rows), allow_unpaired=True)
    assert len(recs) == 3 and not recs.single_order


def test_records_from_dicts_validates_rows():
    with pytest.raises(InputError, match=r"<mem>:2: field `verdict`"):
        records_from_dicts([GOOD[0], {**GOOD[1], "verdict": "left"}], source="<mem>")
    frame = records_from_dicts(GOOD).frame
    assert isinstance(frame, pl.DataFrame) and frame.height == 2


def test_cli_bad_input_is_one_line_exit_2(tmp_path):
    path = _write(tmp_path, lines(GOOD[0], {"item": 1, "first": "B", "second": "A", "verdict": "B"}))
    out = subprocess.run([*CLI, "analyze", str(path)], capture_output=True, text=True)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    msg = out.stderr.strip()
    assert msg.count("\n") == 0
    assert f"{path}:2: field `verdict`: unknown value \"B\"" in msg
    missing = subprocess.run([*CLI, "analyze", str(tmp_path / "nope.jsonl")], capture_output=True, text=True)
    assert missing.returncode == 2 and "no such file" in missing.stderr
