"""The public face: `import swapjudge` names, every source type analysed alike, result objects in a notebook."""

import json
import subprocess
import sys

import pandas as pd
import polars as pl
import pytest

import swapjudge as sj
from conftest import contract_400, pair, write_jsonl
from swapjudge.core.analysis import analyze_records
from swapjudge.reading.records import read_records


def test_all_names_resolve_and_nothing_else_is_public():
    for name in sj.__all__:
        assert getattr(sj, name) is not None
    assert callable(sj.analyze) and callable(sj.run) and callable(sj.rank) and callable(sj.dry_run)
    with pytest.raises(AttributeError):
        sj.no_such_name  # noqa: B018


def test_import_is_light():
    """`import swapjudge` loads none of the heavy stacks (they load when a function is first called)."""
    code = ("import sys, swapjudge; heavy = [m for m in ('polars', 'scipy', 'numpy', 'aiohttp', 'matplotlib', "
            "'pydantic', 'rich', 'typer') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_source_gives_the_file_loaders_result(tmp_path):
    rows = contract_400()
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    expected = analyze_records(read_records(path), a="A", b="B", min_consistency=0.5)[0].to_dict()
    for source in (path, str(path), rows, pl.DataFrame(rows), pd.DataFrame(rows)):
        got = sj.analyze(source, a="A", b="B", min_consistency=0.5)
        assert got[0].to_dict() == expected and got.to_dict() == {"schema_version": 1, **expected}, type(source)
    # the contract's 400 pairs: 292 consistent
    assert expected["outcomes"]["consistent"] == 292


def test_optional_columns_stay_optional_in_frames():
    rows = [r for i in range(30) for r in pair(f"q{i}", "first", "second" if i % 3 else "first")]
    base = sj.analyze(rows)[0].to_dict()
    assert base["consistency"]["rate"] == pytest.approx(20 / 30)
    # a polars frame whose optional round / judge / label columns are all null
    frame = pl.DataFrame(rows).with_columns(pl.lit(None).alias("round"), pl.lit(None, pl.String).alias("judge"),
                                            pl.lit(None).alias("label"))
    assert sj.analyze(frame)[0].to_dict() == base
    # pandas: a round column with a gap is float; NaN is missing
    pdf = pd.DataFrame(rows)
    pdf["round"] = [0.0] * (len(rows) - 1) + [float("nan")]
    assert sj.analyze(pdf)[0].to_dict() == base


@pytest.mark.parametrize("kind", ["list", "polars", "pandas"])
def test_bad_row_is_named_by_row_and_field(kind):
    rows = contract_400()[:10]
    rows[3] = {**rows[3], "verdict": "left"}
    source = {"list": rows, "polars": pl.DataFrame(rows), "pandas": pd.DataFrame(rows)}[kind]
    with pytest.raises(sj.InputError, match=r"row 4: field `verdict`: unknown value \"left\""):
        sj.analyze(source)


def test_missing_required_column_in_a_frame():
    frame = pl.DataFrame(contract_400()[:4]).drop("verdict")
    with pytest.raises(sj.InputError, match="field `verdict`: missing column"):
        sj.load_records(frame)
    with pytest.raises(sj.SwapjudgeError, match=r"^source must be a path \(str or pathlib.Path\), a list of dicts"):
        sj.load_records(42)


def test_json_keys_present_with_null():
    """A single-order file has no pair: systems, win_rate, accuracy... are null, never absent."""
    rows = [{"item": f"q{i}", "first": "A", "second": "B", "verdict": "first"} for i in range(5)]
    d = sj.analyze(rows).to_dict()
    for key in ("systems", "cross_table", "win_rate", "decision", "accuracy", "identical", "notes"):
        assert key in d
    assert d["win_rate"] is None and d["accuracy"] is None and d["single_order"] is True
    # the consistency object has the same keys as a measured one, all null
    measured = sj.analyze(contract_400())[0].to_dict()["consistency"]
    assert set(d["consistency"]) == set(measured) and set(d["consistency"].values()) == {None}


def test_to_frame_matches_to_dict_and_pandas_option():
    result = sj.analyze(contract_400(), a="A", b="B", min_consistency=0.5)
    frame = result.to_frame()
    assert isinstance(frame, pl.DataFrame) and frame.height == 1
    assert frame["consistency.rate"][0] == pytest.approx(0.73)
    assert frame["win_rate.half_credit"][0] == pytest.approx(416 / 800)
    pdf = result[0].to_frame(backend="pandas")
    assert isinstance(pdf, pd.DataFrame) and pdf["outcomes.consistent"].iloc[0] == 292
    # several judges: one row each, indexed by name too
    two = [*[{**r, "judge": "j1"} for r in contract_400()], *[{**r, "judge": "j2"} for r in contract_400()[:40]]]
    many = sj.analyze(two, a="A", b="B")
    assert many.to_frame()["judge"].to_list() == ["j1", "j2"] and many["j2"].outcomes.total == 20
    assert list(many.to_dict()) == ["schema_version", "judges"]


def test_failed_gate_is_plain_in_notebook_displays():
    """contract_400 is 73% consistent: below a 0.8 gate the HTML opens with the failure and shows no win rate."""
    result = sj.analyze(contract_400(), a="A", b="B", min_consistency=0.8)
    assert not result.passed and result.to_dict()["win_rate"] is None
    page = result._repr_html_()
    assert page.index("gate FAILED") < page.index("Swap")
    assert "no win rate is reported" in page and "Win rate withheld by the gate" in page
    md = result._repr_markdown_()
    assert "FAILED" in md and "win rate, half_credit" not in md
    # the same table the CLI prints with --format markdown
    assert md == sj.analyze(contract_400(), a="A", b="B", min_consistency=0.8)[0]._repr_markdown_()
    passed = sj.analyze(contract_400(), a="A", b="B", min_consistency=0.5)._repr_html_()
    assert "gate FAILED" not in passed and "52.0%" in passed  # 416/800 half-credit win rate


def test_markdown_repr_equals_cli_markdown(tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", contract_400())
    out = subprocess.run([sys.executable, "-m", "swapjudge", "analyze", str(path), "--a", "A", "--b", "B",
                          "--min-consistency", "0.5", "--format", "markdown"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout == sj.analyze(path, a="A", b="B", min_consistency=0.5)._repr_markdown_()


def test_rank_and_calculate_results_display():
    rows = [{**r, "first": r["first"].replace("A", "S1"), "second": r["second"].replace("A", "S1")}
            for r in contract_400()]
    ranking = sj.rank(rows, bootstrap=50)
    frame = ranking.to_frame()
    assert frame["system"].to_list()[0] in ("S1", "B") and frame.height == 2
    assert "|" in ranking._repr_markdown_() and "<pre" in ranking._repr_html_()
    calc = sj.calculate(400, 292)
    assert calc.to_frame()["consistency.rate"][0] == pytest.approx(0.73)
    assert "73.0%" in calc._repr_markdown_()


def test_json_of_api_equals_cli_json(tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", contract_400())
    out = subprocess.run([sys.executable, "-m", "swapjudge", "analyze", str(path), "--format", "json",
                          "--min-consistency", "0.5"], capture_output=True, text=True)
    assert json.loads(out.stdout) == sj.analyze(path, min_consistency=0.5).to_dict()


def test_all_matches_the_lazy_table():
    assert set(sj.__all__) - {"__version__"} == set(sj._LAZY)
