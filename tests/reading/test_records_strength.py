"""The `strength` field of graded verdicts (docs/records.md): 1 slightly, 2 much, null for a tie or unknown."""

import json

import pandas as pd
import polars as pl
import pytest

from swapjudge.errors import InputError
from swapjudge.reading.records import _fast_frame, read_records


def write(tmp_path, rows, name="r.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


GRADED = [
    {"item": "q1", "first": "a", "second": "b", "verdict": "first", "strength": 2},
    {"item": "q1", "first": "b", "second": "a", "verdict": "second", "strength": 1},
    {"item": "q2", "first": "a", "second": "b", "verdict": "tie", "strength": None},
    {"item": "q2", "first": "b", "second": "a", "verdict": "first"},
]


def test_strength_is_read_as_small_integers_and_paired_per_order(tmp_path):
    path = write(tmp_path, GRADED)
    for extras in (True, False):
        records = read_records(path, extras=extras)
        assert records.frame.schema["strength"] == pl.Int8
        assert records.frame.get_column("strength").to_list() == [2, 1, None, None]
        pairs = records.pairs.frame.sort("item")
        # x = a: the a-first call's strength is sx, the b-first call's sy
        assert pairs.get_column("sx").to_list() == [2, None]
        assert pairs.get_column("sy").to_list() == [1, None]


def test_a_clean_file_takes_the_fast_path(tmp_path):
    data = write(tmp_path, GRADED).read_bytes()
    frame = _fast_frame(data, is_csv=False)
    assert frame is not None and frame.get_column("strength").to_list() == [2, 1, None, None]


def test_csv_dicts_and_dataframes_read_the_same(tmp_path):
    csv = tmp_path / "r.csv"
    csv.write_text("item,first,second,verdict,strength\nq1,a,b,first,2\nq1,b,a,second,1\n"
                   "q2,a,b,tie,\nq2,b,a,first,\n")
    expected = [2, 1, None, None]
    assert read_records(csv).frame.get_column("strength").to_list() == expected
    assert read_records(GRADED).frame.get_column("strength").to_list() == expected
    # pandas holds an integer column with gaps as floats: 2.0 is 2
    assert read_records(pd.DataFrame(GRADED)).frame.get_column("strength").to_list() == expected
    assert read_records(pl.DataFrame(GRADED)).frame.get_column("strength").to_list() == expected


def test_earlier_arena_hard_names_are_read_as_numbers(tmp_path):
    rows = [dict(r) for r in GRADED]
    rows[0]["strength"], rows[1]["strength"] = "strong", "slight"
    assert read_records(write(tmp_path, rows)).frame.get_column("strength").to_list() == [2, 1, None, None]


@pytest.mark.parametrize(("index", "value", "words"), [
    (0, 3, "unknown value 3"),
    (0, 0, "unknown value 0"),
    (1, "much", 'unknown value "much"'),
    (1, True, "unknown value true"),
    (1, 1.5, "unknown value 1.5"),
    (2, 1, "1 on a tie"),
])
def test_a_bad_strength_names_file_line_and_field(tmp_path, index, value, words):
    rows = [dict(r) for r in GRADED]
    rows[index]["strength"] = value
    path = write(tmp_path, rows)
    with pytest.raises(InputError) as info:
        read_records(path)
    assert info.value.line == index + 1 and info.value.field == "strength"
    assert words in str(info.value) and str(path) in str(info.value)


def test_a_strength_on_a_null_verdict_is_an_error(tmp_path):
    rows = [dict(r) for r in GRADED]
    rows[3].update(verdict=None, strength=2)
    with pytest.raises(InputError, match=r"r.jsonl:4: field `strength`: 2 on a null verdict"):
        read_records(write(tmp_path, rows))


def test_a_bad_strength_in_a_list_names_the_row():
    rows = [dict(r) for r in GRADED]
    rows[1]["strength"] = 7
    with pytest.raises(InputError, match=r"records row 2: field `strength`"):
        read_records(rows)
