"""Verdict probabilities (`p_first`, `p_second`) that are not a finite number in [0, 1] are refused with the row
and field, from every source records come from; before, NaN, infinities, negatives and text went into the
debiased verdicts (a debiased win rate of 100% read as 87.5%)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pytest

import swapjudge
from swapjudge.errors import InputError

N = 8


def rows(bad: Any = None, field: str = "p_first") -> list[dict[str, Any]]:
    """8 pairs a judge decides for `a` in both orders, confidently; row 3 carries `bad` in `field` if given."""
    out: list[dict[str, Any]] = []
    for i in range(N):
        out.append({"item": f"q{i}", "first": "a", "second": "b", "verdict": "first", "p_first": 0.9,
                    "p_second": 0.1})
        out.append({"item": f"q{i}", "first": "b", "second": "a", "verdict": "second", "p_first": 0.1,
                    "p_second": 0.9})
    if bad is not None:
        out[2][field] = bad
    return out


def jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


BAD = [float("nan"), float("inf"), float("-inf"), -0.5, 1.5, "high", "0.7", True, [0.5]]
SHOWN = ["NaN", "Infinity", "-Infinity", "-0.5", "1.5", '"high"', '"0.7"', "true", "[0.5]"]


@pytest.mark.parametrize(("bad", "shown"), list(zip(BAD, SHOWN, strict=True)))
@pytest.mark.parametrize("field", ["p_first", "p_second"])
def test_a_file_with_a_bad_probability_names_its_line_and_field(tmp_path: Path, bad: Any, shown: str,
                                                                 field: str) -> None:
    path = jsonl(tmp_path / "r.jsonl", rows(bad, field))
    for extras in (True, False):  # the analysis reads core columns only: the check holds there too
        with pytest.raises(InputError) as info:
            swapjudge.load_records(path, extras=extras)
        assert str(info.value) == (f"{path}:3: field `{field}`: must be a probability between 0 and 1 (or null), "
                                   f"got {shown}")


def test_the_analysis_of_clean_probabilities_is_unchanged(tmp_path: Path) -> None:
    result = swapjudge.analyze(jsonl(tmp_path / "r.jsonl", rows()), a="a", b="b")
    debiased = result[0].debiased
    assert debiased is not None and debiased.order_averaged.pairs == N
    assert debiased.order_averaged.win_rate is not None and debiased.order_averaged.win_rate.a_wins == N
    # 0 and 1 are probabilities; null means the judge gave none (the pair is left out of the debiased verdicts)
    edge = rows()
    edge[0]["p_first"], edge[0]["p_second"] = 1, 0
    edge[2]["p_first"] = None
    debiased = swapjudge.analyze(edge, a="a", b="b")[0].debiased
    assert debiased is not None and debiased.order_averaged.pairs == N - 1


@pytest.mark.parametrize("cell", ["high", "nan", "-0.1", "2"])
def test_a_csv_cell_that_is_not_a_probability_is_refused(tmp_path: Path, cell: str) -> None:
    records = rows()
    header = list(records[0])
    lines = [",".join(header)] + [",".join(str(r[k]) for k in header) for r in records]
    lines[3] = lines[3].replace(",0.9,", f",{cell},", 1)  # record 3 (line 4 of the file): its p_first
    path = tmp_path / "r.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        swapjudge.load_records(path)
    assert (info.value.line, info.value.field) == (4, "p_first")
    assert "must be a probability between 0 and 1" in str(info.value)
    # a CSV's numbers are text and read as numbers; an empty cell is null
    lines[3] = lines[3].replace(f",{cell},", ",,", 1)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    debiased = swapjudge.analyze(path, a="a", b="b")[0].debiased
    assert debiased is not None and debiased.order_averaged.pairs == N - 1


def test_dataframes_and_lists_name_the_row(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^records row 3: field `p_first`: must be a probability .* got -0.5$"):
        swapjudge.load_records(rows(-0.5))
    with pytest.raises(InputError, match=r"^DataFrame row 3: field `p_second`: .* got NaN$"):
        swapjudge.load_records(pl.DataFrame(rows(float("nan"), "p_second")))
    with pytest.raises(InputError, match=r"^DataFrame row 3: field `p_first`: .* got Infinity$"):
        swapjudge.load_records(pd.DataFrame(rows(float("inf"))))
    # pandas writes a missing value as NaN: there it is null, as an empty cell is
    frame = pd.DataFrame(rows())
    frame.loc[2, "p_first"] = float("nan")
    debiased = swapjudge.analyze(frame, a="a", b="b")[0].debiased
    assert debiased is not None and debiased.order_averaged.pairs == N - 1


def test_the_cli_says_it_in_one_line_with_exit_2(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "r.jsonl", rows(float("nan")))
    done = subprocess.run([sys.executable, "-m", "swapjudge", "analyze", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (f"error: {path}:3: field `p_first`: must be a probability between 0 and 1 "
                                   "(or null), got NaN")
