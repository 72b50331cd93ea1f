"""Listwise (best-of-N) records: what is read, and one line naming file, line and field for each problem."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from swapjudge.errors import InputError
from swapjudge.reading.listwise import is_listwise, load_listwise

GOOD = {"item": "q1", "slots": ["a", "b", "c"], "pick": 2, "judge": "j", "round": 0, "label": "b",
        "ranking": [2, 1, 3], "model": "m"}


def write(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "lw.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_reads_the_fields(tmp_path: Path) -> None:
    rows = [GOOD, {"item": "q1", "slots": ["b", "c", "a"], "pick": None, "judge": "j"},
            {"item": 7, "slots": ["x", "y", "z", "w"], "pick": 4}]
    loaded = load_listwise(write(tmp_path, rows))
    first, unparsed, third = loaded.calls
    assert (first.slots, first.pick, first.picked, first.ranking, first.label, first.line) == (
        ("a", "b", "c"), 2, "b", (2, 1, 3), "b", 1)
    assert unparsed.pick is None and unparsed.picked is None
    assert third.item == "7" and third.judge == "" and third.n == 4
    assert loaded.judges == ["", "j"]
    # a ranking without a pick gives its first slot as the pick
    ranked = load_listwise([{"item": "q", "slots": ["a", "b", "c"], "pick": None, "ranking": [3, 1, 2]}])
    assert ranked.calls[0].pick == 3


def test_detected_beside_pairwise(tmp_path: Path) -> None:
    assert is_listwise(write(tmp_path, [GOOD]))
    pairwise = tmp_path / "pw.jsonl"
    pairwise.write_text(json.dumps({"item": "q", "first": "a", "second": "b", "verdict": "first"}) + "\n")
    assert not is_listwise(pairwise)
    assert is_listwise([GOOD]) and not is_listwise([{"item": "q", "first": "a"}])
    frame = pl.DataFrame([GOOD])
    assert is_listwise(frame) and load_listwise(frame).calls[0].slots == ("a", "b", "c")


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"pick": 4}, "pick", "must be a slot from 1 to 3"),
    ({"pick": 0}, "pick", "must be a slot from 1 to 3"),
    ({"pick": True}, "pick", "must be a slot"),
    ({"pick": "2"}, "pick", "must be a slot"),
    ({"slots": ["a", "b", "a"]}, "slots", "'a' is in slot 1 and slot 3"),
    ({"slots": ["a", "b"], "pick": 1, "ranking": None, "label": None}, "slots", "has 2 answers"),
    ({"slots": "a,b,c"}, "slots", "must be a list"),
    ({"slots": ["a", "", "c"]}, "slots", "slot 2 must name a system"),
    ({"ranking": [2, 2, 1]}, "ranking", "names a slot twice"),
    ({"ranking": [1, 2, 3]}, "ranking", "ranks slot 1 best but the pick is slot 2"),
    ({"ranking": [2, 5]}, "ranking", "every entry must be a slot from 1 to 3"),
    ({"label": "z"}, "label", "must name one of the systems shown"),
    ({"round": -1}, "round", "whole number"),
    ({"judge": 3}, "judge", "must be a string"),
    ({"item": ""}, "item", "non-empty"),
])
def test_one_line_naming_file_line_and_field(tmp_path: Path, change: dict, field: str, words: str) -> None:
    other = {"item": "q0", "slots": ["a", "b", "c"], "pick": 1}
    path = write(tmp_path, [other, {**GOOD, **change}])
    with pytest.raises(InputError) as caught:
        load_listwise(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:2: field `{field}`: ") and words in message and "\n" not in message
    assert (caught.value.line, caught.value.field) == (2, field)


def test_missing_pick_and_repeated_calls(tmp_path: Path) -> None:
    row = {k: v for k, v in GOOD.items() if k != "pick"}
    with pytest.raises(InputError, match=r":1: field `pick`: missing"):
        load_listwise(write(tmp_path, [row]))
    with pytest.raises(InputError, match=r":2: field `slots`: the same call .* already on line 1"):
        load_listwise(write(tmp_path, [GOOD, GOOD]))
    with pytest.raises(InputError, match=r":2: field `slots`: item 'q1' showed other systems before"):
        load_listwise(write(tmp_path, [GOOD, {**GOOD, "slots": ["a", "b", "d"], "label": None}]))
    with pytest.raises(InputError, match=r"records row 1: field `pick`"):
        load_listwise([{**GOOD, "pick": 9}])


def test_csv_and_broken_json(tmp_path: Path) -> None:
    csv = tmp_path / "lw.csv"
    csv.write_text("item,slots,pick\nq,a,1\n")
    with pytest.raises(InputError, match="listwise records are read from JSON Lines"):
        load_listwise(csv)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(GOOD) + "\n{not json\n")
    with pytest.raises(InputError, match=r"broken.jsonl:2: not valid JSON"):
        load_listwise(broken)
