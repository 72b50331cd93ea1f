"""Say no more than the data supports: conclusions only with a test or interval behind them, one gate everywhere
(library, JSON, every renderer), report headers that say what the data is, and Holm when many tests run at once.

Every figure checked here is recomputed independently (scipy, statsmodels, or a direct count of the calls)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console
from scipy import stats
from statsmodels.stats.multitest import multipletests
from typer.testing import CliRunner

from conftest import pair, write_jsonl
from swapjudge.cli import app
from swapjudge.core.analysis import analyze_records, calculate
from swapjudge.core.stats import holm
from swapjudge.probes.panel import item_mean_interval, panel_of_records
from swapjudge.reading.records import records_from_dicts
from swapjudge.report.markdown import markdown_analysis
from swapjudge.report.text import text_analysis
from swapjudge.report.wording import flip_direction_sentence

runner = CliRunner()


def rows_of(spec: list[tuple[int, str | None, str | None]], **extra: Any) -> list[dict[str, Any]]:
    """Pairs of A and B: (count, verdict with A in slot 1, verdict with B in slot 1)."""
    rows: list[dict[str, Any]] = []
    i = 0
    for count, a_first, b_first in spec:
        for _ in range(count):
            rows += pair(f"q{i}", a_first, b_first, **extra)
            i += 1
    return rows


def text_of(rows: list[dict[str, Any]], **kw: Any) -> str:
    (a,) = analyze_records(records_from_dicts(rows), **kw)
    console = Console(width=2000, record=True)
    console.print(text_analysis(a))
    return console.export_text()


def report(tmp_path: Path, rows: list[dict[str, Any]], *args: str, ok: tuple[int, ...] = (0,)) -> tuple[str, str]:
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    page, md = tmp_path / "r.html", tmp_path / "r.md"
    done = runner.invoke(app, ["report", str(path), "--html", str(page), "--markdown", str(md), *args])
    assert done.exit_code in ok, (done.exit_code, done.output, done.exception)
    return page.read_text(), md.read_text()


# ---- 1. flip direction: a lean only when the exact test rejects ----------------------------------------------

@pytest.mark.parametrize(("to_first", "to_second", "lean"), [(1, 0, None), (10, 4, None), (30, 8, "first"),
                                                             (3, 17, "second")])
def test_flip_lean_is_claimed_only_when_the_exact_binomial_test_rejects(tmp_path, to_first, to_second, lean):
    # 200 consistent pairs keep the gate passed; the splits are flips toward one slot or the other
    rows = rows_of([(200, "first", "second"), (to_first, "first", "first"), (to_second, "second", "second")])
    (a,) = analyze_records(records_from_dicts(rows))
    p = stats.binomtest(to_first, to_first + to_second, 0.5).pvalue
    assert a.flip_direction.p_value == pytest.approx(p)
    assert (p < 0.05) == (lean is not None)  # the cases straddle the rule: p = 1, 0.18, 3e-4, 3e-3
    assert a.flip_direction.lean == lean and a.to_dict()["flip_direction"]["lean"] == lean
    html, md = report(tmp_path, rows)
    for rendered in (text_of(rows), markdown_analysis(a), md, html.lower()):
        if lean is None:
            assert "no clear lean" in rendered and "leans toward" not in rendered
        else:
            assert f"leans toward the {lean} slot" in rendered and "no clear lean" not in rendered
    assert f"{p:.3g}" in flip_direction_sentence(a.flip_direction)


def test_flip_lean_uses_the_configured_level():
    rows = rows_of([(200, "first", "second"), (14, "first", "first"), (5, "second", "second")])
    p = stats.binomtest(14, 19, 0.5).pvalue  # 0.064: no lean at 0.05, a lean at 0.10
    assert 0.05 < p < 0.10
    (at95,) = analyze_records(records_from_dicts(rows))
    (at90,) = analyze_records(records_from_dicts(rows), confidence=0.90)
    assert at95.flip_direction.lean is None and at90.flip_direction.lean == "first"


# ---- 1. the other conclusions: self-preference only when its interval lies above zero ------------------------

def test_item_mean_interval_matches_scipy_on_item_means():
    rng = np.random.default_rng(3)
    items = rng.integers(0, 25, 300)
    values = rng.normal(0.05, 0.3, 300)
    low, high, n = item_mean_interval(values, items)
    means = np.array([values[items == i].mean() for i in np.unique(items)])
    ref = stats.ttest_1samp(means, 0.0).confidence_interval(0.95)
    assert n == means.size and (low, high) == pytest.approx((ref.low, ref.high))


def _panel_rows(gpt_for_gpt: str) -> list[dict[str, Any]]:
    """Three judges over gpt-x vs llama-y on 40 items; the gpt judge's verdict for gpt-x is `gpt_for_gpt`
    (consistent in both orders), the other two judges split 50/50."""
    rows = []
    for i in range(40):
        other = "gpt-x" if i % 2 else "llama-y"
        for judge, winner in (("gpt-judge", gpt_for_gpt if gpt_for_gpt != "mixed" else other),
                              ("claude-judge", other), ("mistral-judge", other)):
            for first, second in (("gpt-x", "llama-y"), ("llama-y", "gpt-x")):
                rows.append({"judge": judge, "item": f"q{i}", "first": first, "second": second,
                             "verdict": "first" if first == winner else "second"})
    return rows


def test_self_preference_is_claimed_only_when_the_gap_is_clearly_positive():
    favoured = panel_of_records(records_from_dicts(_panel_rows("gpt-x")).frame)
    against = panel_of_records(records_from_dicts(_panel_rows("llama-y")).frame)
    same = panel_of_records(records_from_dicts(_panel_rows("mixed")).frame)
    fav, neg, zero = (next(w for w in r.self_preference if w.judge == "gpt-judge" and w.system == "gpt-x")
                      for r in (favoured, against, same))
    assert fav.gap == pytest.approx(0.5) and fav.supported and fav.items == 40
    assert "self-preference:" in fav.sentence()
    # a negative gap (the judge scores its own family lower) is measured, never called self-preference
    assert neg.gap == pytest.approx(-0.5) and not neg.supported
    assert "no clear self-preference" in neg.sentence()
    assert zero.gap == pytest.approx(0.0) and "no clear self-preference" in zero.sentence()
    assert neg.to_dict()["self_preference"] is False


# ---- 2. decision help: a question that can fail -------------------------------------------------------------

def _a_rate_from_calls(rows: list[dict[str, Any]], a_in_slot_one: bool) -> float:
    """A's half-credit score counted directly from the calls of one order (the independent computation)."""
    scores = []
    for r in rows:
        if (r["first"] == "A") != a_in_slot_one:
            continue
        named = {"first": r["first"], "second": r["second"]}.get(r["verdict"], "tie")
        scores.append(1.0 if named == "A" else 0.5 if named == "tie" else 0.0)
    return float(np.mean(scores))


def test_decision_on_two_order_data_a_lead_whose_interval_contains_half_is_no_lead():
    rows = rows_of([(12, "first", "second"), (8, "second", "first")])  # 12 A wins, 8 B wins: 60%
    (a,) = analyze_records(records_from_dicts(rows))
    d = a.decision
    assert d is not None and d.mode == "two_orders" and d.lead_clear is False
    assert a.win_rate.half_credit.low < 0.5 < a.win_rate.half_credit.high
    # the old rule (flip-rate bound 16% below the 20% margin) said "order alone cannot explain the lead"
    assert "cannot explain" not in d.sentence() and "no clear lead" in d.sentence()
    assert a.to_dict()["decision"]["lead_clear"] is False


def test_decision_on_two_order_data_with_a_clear_lead_order_cannot_reverse():
    rows = rows_of([(60, "first", "second"), (20, "second", "first"), (20, "first", "first")])
    (a,) = analyze_records(records_from_dicts(rows))
    d = a.decision
    assert d is not None and d.lead_clear and d.order_could_decide is False
    assert d.a_first_rate == pytest.approx(_a_rate_from_calls(rows, True)) == pytest.approx(0.8)
    assert d.b_first_rate == pytest.approx(_a_rate_from_calls(rows, False)) == pytest.approx(0.6)
    assert "order alone cannot explain the lead" in d.sentence()


def test_decision_on_two_order_data_a_single_order_run_would_name_the_other_system():
    # 40 A wins, 10 B wins, 50 flips toward slot 1: two orders give A 65%, but with B always in slot 1 A gets 40%
    rows = rows_of([(40, "first", "second"), (10, "second", "first"), (50, "first", "first")])
    (a,) = analyze_records(records_from_dicts(rows), min_consistency=0.4)
    d = a.decision
    assert d is not None and d.lead_clear and d.order_could_decide is True
    assert d.b_first_rate == pytest.approx(_a_rate_from_calls(rows, False)) == pytest.approx(0.4)
    assert "could have named a different leader" in d.sentence() and "cannot explain" not in d.sentence()
    assert "could have named a different leader" in markdown_analysis(a)


def test_decision_from_counts_is_the_worst_case_of_the_flip_rate_bound():
    ci = stats.binomtest(90, 100).proportion_ci(0.95, method="wilson")
    close = calculate(100, 90, margin=0.05)
    far = calculate(100, 90, margin=0.30)
    assert close.decision is not None and far.decision is not None
    assert close.decision.mode == far.decision.mode == "worst_case"
    assert close.decision.flip_rate_high == pytest.approx(1 - ci.low)
    assert close.decision.order_could_decide and not far.decision.order_could_decide
    assert "order alone cannot explain the lead" in far.decision.sentence()
    assert "could decide" in close.decision.sentence()


# ---- 3. headers say what the data is ------------------------------------------------------------------------

def test_report_headers_say_how_the_pairs_were_judged(tmp_path):
    both = rows_of([(30, "first", "second"), (10, "second", "first")])
    html, md = report(tmp_path, both)
    assert "every pair judged in both orders" in html
    assert "A scores 75.0% (a split counts half) against B" in md and "wins 75.0%" not in md

    fixed = [{"item": f"q{i}", "first": "A", "second": "B", "verdict": "first" if i % 3 else "second"}
             for i in range(30)]
    html, md = report(tmp_path, fixed, "--allow-unpaired", ok=(0, 1))
    assert "each pair judged once, in one fixed order" in html and "every pair judged in both orders" not in html
    assert "incomplete" not in html.lower() and "incomplete" not in md.lower()
    assert "Cross-table" not in html and "No cross-table: each pair was judged in one order only" in html

    coin = [{"item": f"q{i}", "first": "A" if i % 2 else "B", "second": "B" if i % 2 else "A", "verdict": "first"}
            for i in range(30)]
    html, _ = report(tmp_path, coin, "--allow-unpaired", ok=(0, 1))
    assert "each pair judged once, in a randomly chosen order" in html


def test_adaptive_export_header_counts_the_swapped_pairs():
    rows = [dict(r, registered_adaptive_swap=0.9) for r in rows_of([(12, "first", "second")])]
    rows += [{"item": f"u{i}", "first": "A", "second": "B", "verdict": "first", "registered_adaptive_swap": 0.9}
             for i in range(8)]
    (a,) = analyze_records(records_from_dicts(rows, allow_unpaired=True))
    assert a.design == "adaptive" and a.to_dict()["design"] == "adaptive"
    assert "adaptive swapping: 12 of 20 pairs judged in both orders" in markdown_analysis(a)


def test_identical_probe_under_forced_choice_is_decided_by_construction():
    rows = rows_of([(40, "first", "second")])
    rows += [{"item": f"q{i}", "first": "A", "second": "A", "verdict": "first" if i % 4 else "second"}
             for i in range(20)]
    (a,) = analyze_records(records_from_dicts(rows))
    ident = a.to_dict()["identical"]
    assert ident["decided_rate"] == 1.0 and ident["decided_by_construction"] is True
    assert ident["decided_low"] is None and ident["decided_high"] is None
    assert "100.0% by construction" in markdown_analysis(a) and "100.0% by construction" in text_of(rows)


# ---- 4. the library: no win rate through the front door when the gate fails ---------------------------------

def test_library_win_rate_is_none_when_the_gate_fails():
    rows = rows_of([(20, "first", "first")])  # every pair flips: 0% consistency, half credit 50%
    (a,) = analyze_records(records_from_dicts(rows))
    assert not a.gate.passed and a.withheld
    assert a.win_rate is not None and a.win_rate.half_credit.value is None and a.win_rate.headline.low is None
    assert a.to_dict()["win_rate"] is None
    assert a.ungated_win_rate is not None and a.ungated_win_rate.half_credit.value == 0.5  # only by name
    (ok,) = analyze_records(records_from_dicts(rows), min_consistency=0)
    assert ok.win_rate is not None and ok.win_rate.half_credit.value == 0.5


# ---- 6. win rates under other names: the length-controlled rate ---------------------------------------------

def _length_rows() -> list[dict[str, Any]]:
    rows = rows_of([(8, "first", "second"), (32, "first", "first")])  # 20% consistency: the gate fails
    for r in rows:
        r["first_length"] = 900 if r["first"] == "A" else 300
        r["second_length"] = 900 if r["second"] == "A" else 300
        r["first_text"] = "x" * r["first_length"]
        r["second_text"] = "x" * r["second_length"]
    return rows


def test_length_controlled_win_rate_is_withheld_by_the_gate(tmp_path):
    path = write_jsonl(tmp_path / "l.jsonl", _length_rows())
    args = ["probe", "length", str(path), "--a", "A", "--b", "B", "--length-controlled"]
    done = runner.invoke(app, [*args, "--format", "json"])
    assert done.exit_code == 1, done.output
    data = json.loads(done.stdout)
    assert data["gate"]["passed"] is False
    assert data["length_controlled"]["withheld"] is True and data["length_controlled"]["value"] is None
    assert data["length_controlled"]["raw_half_credit"] is None
    text = runner.invoke(app, args)
    assert "withheld (gate)" in text.stdout and "raw" not in text.stdout
    forced = runner.invoke(app, [*args, "--format", "json", "--min-consistency", "0"])
    assert forced.exit_code == 0 and json.loads(forced.stdout)["length_controlled"]["value"] is not None


def test_report_length_section_withholds_what_the_headline_withholds(tmp_path):
    html, _ = report(tmp_path, _length_rows(), ok=(0, 1))
    section = html[html.index('<section class="length">'):]
    section = section[:section.index("</section>")]
    assert "withheld (gate)" in section and "raw" not in section


# ---- 7. the gate says how sure it is ------------------------------------------------------------------------

@pytest.mark.parametrize(("consistent", "pairs", "uncertain"), [(8, 10, True), (800, 1000, False),
                                                                 (5, 10, True), (100, 400, False)])
def test_gate_is_flagged_unsure_when_the_interval_contains_the_threshold(consistent, pairs, uncertain):
    rows = rows_of([(consistent, "first", "second"), (pairs - consistent, "first", "first")])
    (a,) = analyze_records(records_from_dicts(rows))
    ci = stats.binomtest(consistent, pairs).proportion_ci(0.95, method="wilson")
    assert (ci.low <= 0.7 <= ci.high) == uncertain
    assert a.to_dict()["gate"]["uncertain"] is uncertain
    md, text = markdown_analysis(a), text_of(rows)
    assert ("not a sure" in md) == uncertain and ("not a sure" in text) == uncertain
    if uncertain and a.gate.passed:
        assert "the pass is not to be trusted" in text


def test_calc_style_gate_json_through_the_cli(tmp_path):
    path = write_jsonl(tmp_path / "g.jsonl", rows_of([(8, "first", "second"), (2, "first", "first")]))
    done = runner.invoke(app, ["analyze", str(path), "--format", "json"])
    assert done.exit_code == 0 and json.loads(done.stdout)["gate"]["uncertain"] is True
    page = tmp_path / "g.html"
    runner.invoke(app, ["report", str(path), "--html", str(page)])
    assert 'data-figure="gate.uncertain"' in page.read_text()


# ---- 13. many tests at once ---------------------------------------------------------------------------------

def test_holm_matches_statsmodels_and_skips_missing_tests():
    rng = np.random.default_rng(7)
    p = list(rng.uniform(0, 0.2, 9))
    p[3] = p[5]  # ties
    ref = multipletests(p, method="holm")[1]
    assert holm(p) == pytest.approx(list(ref))
    got = holm([0.01, None, 0.04, 0.03])
    assert got[1] is None and [got[0], got[2], got[3]] == pytest.approx(list(multipletests([0.01, 0.04, 0.03],
                                                                                          method="holm")[1]))


def test_several_judges_get_holm_adjusted_p_and_the_lean_follows_it(tmp_path):
    # three judges, each with 20 first-slot and 9 second-slot flips: raw p = 0.06 each... and one clear lean
    rows = []
    specs = {"j1": (16, 5), "j2": (15, 6), "j3": (40, 10)}
    for judge, (f, s) in specs.items():
        rows += rows_of([(200, "first", "second"), (f, "first", "first"), (s, "second", "second")], judge=judge)
    path = write_jsonl(tmp_path / "j.jsonl", rows)
    done = runner.invoke(app, ["analyze", str(path), "--format", "json"])
    data = json.loads(done.stdout)["judges"]
    raw = [stats.binomtest(f, f + s).pvalue for f, s in specs.values()]
    ref = multipletests(raw, method="holm")[1]
    assert [j["flip_direction"]["p_value"] for j in data] == pytest.approx(raw)
    assert [j["flip_direction"]["p_holm"] for j in data] == pytest.approx(list(ref))
    # j1's raw p is below 0.05, its adjusted p is not: no lean claimed for it
    assert raw[0] < 0.05 < ref[0] and data[0]["flip_direction"]["lean"] is None
    assert data[2]["flip_direction"]["lean"] == "first"
    md = runner.invoke(app, ["analyze", str(path), "--format", "markdown"]).stdout
    assert "Holm-adjusted" in md


def test_segments_get_holm_and_small_segments_are_flagged(tmp_path):
    rows = rows_of([(200, "first", "second"), (16, "first", "first"), (5, "second", "second")], task="big")
    rows += [dict(r, item="s" + str(r["item"]), task="small")
             for r in rows_of([(10, "first", "second"), (2, "first", "first")])]
    path = write_jsonl(tmp_path / "s.jsonl", rows)
    done = runner.invoke(app, ["segments", str(path), "--by", "task", "--format", "json"])
    assert done.exit_code in (0, 1), done.output
    segs = {s["value"]: s["analyses"][0] for s in json.loads(done.stdout)["segments"]}
    raw = [segs[k]["flip_direction"]["p_value"] for k in ("big", "small")]
    assert [segs[k]["flip_direction"]["p_holm"] for k in ("big", "small")] == pytest.approx(
        list(multipletests(raw, method="holm")[1]))
    assert segs["small"]["too_small_for_gate"] is True and segs["big"]["too_small_for_gate"] is False
    text = runner.invoke(app, ["segments", str(path), "--by", "task"], terminal_width=400).stdout
    assert "too small" in text
    html, md = report(tmp_path, rows, "--segment", "task")
    assert "too small (&lt; 30 pairs)" in html and "too small (< 30 pairs)" in md


def test_self_preference_score_is_withheld_when_the_judge_fails_the_gate():
    rows = _panel_rows("gpt-x")
    for r in rows:  # the gpt judge now always names slot 1: every pair flips, 0% consistency
        if r["judge"] == "gpt-judge":
            r["verdict"] = "first"
    result = panel_of_records(records_from_dicts(rows).frame)
    w = next(w for w in result.self_preference if w.judge == "gpt-judge" and w.system == "gpt-x")
    assert w.withheld and w.judge_score is None and w.gap is None and not w.supported
    assert "withheld" in w.sentence() and w.to_dict()["withheld"] is True
    kept = panel_of_records(records_from_dicts(rows).frame, min_consistency=0)
    assert next(w for w in kept.self_preference if w.judge == "gpt-judge").judge_score == pytest.approx(0.5)


def test_length_probe_of_several_judges_gets_holm_adjusted_p(tmp_path):
    rows = []
    for judge, longer_wins in (("j1", 14), ("j2", 30)):
        spec = rows_of([(longer_wins, "first", "second"), (40 - longer_wins, "second", "first")], judge=judge)
        for r in spec:  # A's answer is always the longer one
            r["first_text"] = "x" * (900 if r["first"] == "A" else 300)
            r["second_text"] = "x" * (900 if r["second"] == "A" else 300)
        rows += spec
    path = write_jsonl(tmp_path / "l2.jsonl", rows)
    done = runner.invoke(app, ["probe", "length", str(path), "--format", "json"])
    assert done.exit_code == 0, done.output
    judges = json.loads(done.stdout)["judges"]
    raw = [stats.binomtest(k, 40).pvalue for k in (14, 30)]
    assert [j["prefer_longer"]["p_value"] for j in judges] == pytest.approx(raw)
    assert [j["prefer_longer"]["p_holm"] for j in judges] == pytest.approx(list(multipletests(raw, method="holm")[1]))
    slopes = [j["slope"]["p_value"] for j in judges]
    assert [j["slope"]["p_holm"] for j in judges] == pytest.approx(list(multipletests(slopes, method="holm")[1]))


def test_a_gate_at_zero_is_called_off_not_passed():
    from swapjudge.core.policy import Gate
    from swapjudge.report.wording import gate_sentence

    assert gate_sentence(Gate(0.0, True, None)).startswith("Gate: off")
    assert gate_sentence(Gate(0.7, True, None)) == "Gate: passed (min self-consistency 70%)"


def test_a_p_value_too_small_for_a_double_is_never_printed_as_zero() -> None:
    """1,442,993 splits, 859,263 toward slot 1 (a 100M-record file's): the exact binomial p underflows to 0.0 in
    scipy as in swapjudge; every renderer then says p < 1e-300, never "p = 0", with counts grouped by thousands."""
    from swapjudge.core.swap import flip_direction
    from swapjudge.report.wording import p_equals, p_number, p_text

    assert stats.binomtest(859_263, 1_442_993).pvalue == 0.0  # the independent computation underflows too
    f = flip_direction(859_263, 1_442_993 - 859_263)
    assert f.p_value == 0.0 and f.lean == "first"
    assert p_text(f) == "p < 1e-300" and p_number(f.p_value) == "< 1e-300"
    assert p_equals(0.0312) == "p = 0.0312" and p_number(None) == "n/a" and p_equals(None) == "p = n/a"
    sentence = flip_direction_sentence(f)
    assert "exact binomial p < 1e-300" in sentence and "of 1,442,993 flips and half-ties" in sentence
    assert "p = 0" not in sentence
