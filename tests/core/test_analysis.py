import json
import subprocess
import sys

import pytest

from conftest import contract_300, contract_400, pair, shi2024_records, write_jsonl
from swapjudge.core.analysis import analyze_records
from swapjudge.errors import SwapjudgeError
from swapjudge.reading.records import read_records, records_from_dicts

CLI = [sys.executable, "-m", "swapjudge"]


def one(rows, **kwargs):
    [result] = analyze_records(records_from_dicts(rows), **kwargs)
    return result


def test_400_pairs_worked_example():
    r = one(contract_400(), a="A", b="B", min_consistency=0.5)
    d = r.to_dict()
    assert d["pairs"] == {"total": 400, "complete": 400, "incomplete": 0}
    assert d["outcomes"]["consistent"] == 292
    assert (d["outcomes"]["flips_first"], d["outcomes"]["flips_second"]) == (90, 18)
    assert d["consistency"]["rate"] == pytest.approx(0.73)
    assert d["win_rate"]["half_credit"] == pytest.approx(416 / 800)
    assert d["win_rate"]["exclude"] == pytest.approx(154 / 292)
    # the cross-table: rows = verdict with A in slot 1, columns = with B in slot 1
    counts = d["cross_table"]["counts"]
    assert counts[0][1] == 154 and counts[1][0] == 138 and counts[0][0] == 90 and counts[1][1] == 18
    # over calls, slot 1 won 154+138+2*90 = 472 of 800 verdicts
    assert d["verdicts"]["first"] == 472 and d["verdicts"]["first_slot_rate"] == pytest.approx(472 / 800)


def test_300_pairs_tie_policies_and_interval_over_pairs():
    r = one(contract_300(), a="B", b="A")
    w = r.win_rate
    assert r.consistency.rate == pytest.approx(241 / 300)
    assert w.half_credit.value == pytest.approx((148 + 29.5) / 300)
    assert w.exclude.value == pytest.approx(148 / 241)
    assert w.no_credit.value == pytest.approx(148 / 300)
    separate = (w.separate_a.value, w.separate_b.value, w.separate_split.value)
    assert separate == pytest.approx((148 / 300, 0.31, 59 / 300))
    half_width = (w.half_credit.high - w.half_credit.low) / 2
    # per-pair scores (1, 0.5, 0): sd 0.4386 over 300 pairs -> t interval half-width 0.0498
    assert half_width == pytest.approx(0.0498, abs=5e-4)
    assert r.gate.passed
    assert not one(contract_300(), a="B", b="A", min_consistency=0.85).gate.passed


def test_doubling_calls_never_narrows_the_interval():
    # the same 300 pairs: the interval is over pairs, so it must not depend on treating calls as samples
    r = one(contract_300(), a="B", b="A")
    n_pairs = r.win_rate.pairs
    assert n_pairs == 300


def test_tie_option_example():
    r = one(contract_300(with_ties=True), a="B", b="A", min_consistency=0.5)
    assert r.outcomes.consistent_ties == 88
    assert r.outcomes.half_ties_first == 30
    assert r.win_rate.exclude.value == pytest.approx(118 / 152)


def test_gate_withholds_win_rate_and_cli_exits_1(tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", contract_300())
    out = subprocess.run([*CLI, "analyze", str(path), "--a", "B", "--b", "A", "--min-consistency", "0.85",
                          "--format", "json"], capture_output=True, text=True)
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert data["gate"]["passed"] is False and data["win_rate"] is None
    assert "below the gate of 85%" in out.stderr
    text = subprocess.run([*CLI, "analyze", str(path), "--a", "B", "--b", "A", "--min-consistency", "0.85"],
                          capture_output=True, text=True)
    assert "No win rate" in text.stdout and "59.2%" not in text.stdout


def test_identical_probe_counts():
    rows = contract_400()
    for k, v in enumerate(["first"] * 58 + ["second"] * 21 + ["tie"] * 21):
        rows.append(dict(item=f"p{k}", first="A", second="A", verdict=v))
    d = one(rows, min_consistency=0.5).to_dict()
    assert d["identical"]["decided_rate"] == pytest.approx(0.79)
    assert (d["identical"]["first"], d["identical"]["second"], d["identical"]["tie"]) == (58, 21, 21)
    # probe calls are not pairs and not in the verdict split
    assert d["pairs"]["total"] == 400 and d["verdicts"]["first"] + d["verdicts"]["second"] == 800


def test_label_accuracy_matches_hand_count():
    rows = []
    # labelled better = A unless said; verdicts positional (A first, B first)
    rows += pair(1, "first", "second", label="A")   # right in both
    rows += pair(2, "first", "first", label="A")    # right with A first only
    rows += pair(3, "second", "second", label="A")  # right with A second only
    rows += pair(4, "second", "first", label="A")   # wrong in both (B consistent)
    rows += pair(5, "second", "first", label="B")   # right in both
    rows += pair(6, "tie", "first", label="B")      # right with B first only
    rows += pair(7, "first", "second", label="tie") # tie label, A both times: wrong in both
    rows += pair(9, "tie", "tie", label="tie")      # tie label, consistent tie: right in both
    rows += pair(8, None, "second", label="A")      # incomplete: only its one call counts (per call)
    d = one(rows, a="A", b="B", min_consistency=0).to_dict()["accuracy"]
    assert d["pairs"] == 8 and d["tie_pairs"] == 2 and d["incomplete_pairs"] == 1
    # better in slot 1 right: pairs 1, 2, 5, 6 ; in slot 2 right: 1, 3, 5 (over the 6 pairs naming an answer)
    assert d["decided_pairs"] == 6
    assert d["better_first"] == pytest.approx(4 / 6)
    assert d["better_second"] == pytest.approx(3 / 6)
    # both: 1, 5 and the consistent tie 9, over all 8 labelled complete pairs
    assert d["both"] == pytest.approx(3 / 8)
    # consistent pairs among them: 1, 4, 5, 7, 9 -> 3 of 5 right
    assert d["consistent_pairs"] == 5 and d["consistent"] == pytest.approx(3 / 5)
    # per call: right calls 2+1+1+0+2+1+0+2 over 16, plus pair 8's one call (B first, "second" = A: right)
    assert d["per_call"]["calls"] == 17 and d["per_call"]["right"] == 10
    assert d["per_call"]["value"] == pytest.approx(10 / 17)
    assert d["denominators"] == {"better_first": 6, "better_second": 6, "both": 8, "consistent": 5, "per_call": 17}


def test_incomplete_pairs_shown_and_excluded():
    rows = [*pair(1, "first", "second"), *pair(2, None, "first"), *pair(3, "first", "first")]
    r = one(rows, min_consistency=0)
    assert (r.outcomes.total, r.outcomes.complete, r.outcomes.incomplete) == (3, 2, 1)
    assert r.consistency.rate == pytest.approx(0.5)
    assert r.verdicts.unparsed == 1


def test_several_judges_give_one_object_each(tmp_path):
    rows = [dict(r, judge="j1") for r in contract_400()] + [dict(r, judge="j2") for r in contract_300()]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    out = subprocess.run([*CLI, "analyze", str(path), "--format", "json", "--min-consistency", "0.5"],
                         capture_output=True, text=True)
    data = json.loads(out.stdout)
    assert [j["judge"] for j in data["judges"]] == ["j1", "j2"]
    assert data["judges"][1]["consistency"]["rate"] == pytest.approx(241 / 300)
    with pytest.raises(SwapjudgeError, match="no records for judge 'j3'"):
        analyze_records(read_records(path), judge="j3")


def test_single_order_data_reports_first_slot_rate_only():
    rows = [dict(item=i, first="A" if i % 2 else "B", second="B" if i % 2 else "A",
                 verdict="first" if i < 7 else "second") for i in range(10)]
    r = one(rows)
    assert r.single_order and r.consistency is None and not r.gate.passed
    assert r.verdicts.first_slot_rate == pytest.approx(0.7)
    assert "cannot be measured" in r.notes[0]
    assert r.to_dict()["win_rate"] is None


def test_unknown_system_is_a_user_error():
    with pytest.raises(SwapjudgeError, match="system 'C' is not in the records"):
        one(contract_400(), a="C", b="A")


def test_real_mtbench_gpt4_counts():
    r = one(shi2024_records("MTBench", "gpt-4-0613"))
    assert (r.outcomes.total, r.outcomes.complete) == (2400, 2400)
    assert r.outcomes.consistent == 1957
    assert (r.outcomes.toward_first, r.outcomes.toward_second) == (198, 245)
    assert len(r.systems) == 31


def test_real_devbench_haiku_counts():
    r = one(shi2024_records("DevBench", "claude-3-haiku-20240307"), min_consistency=0)
    assert (r.outcomes.total, r.outcomes.complete) == (1120, 1117)
    assert r.outcomes.consistent == 253
    assert (r.outcomes.toward_first, r.outcomes.toward_second) == (15, 849)
    # 864 inconsistent pairs over 112 items (8 systems a question): the test counts items, design effect ~1.17
    f = r.flip_direction
    assert f.independence is not None and (f.independence.units, f.independence.clusters) == ("items", 112)
    assert 1.1 < f.independence.design_effect < 1.25
    assert f.p_value < 1e-40 and f.lean == "second"
    assert r.consistency.band == "high"


def test_registered_tie_policy_is_the_default_and_a_change_is_said(tmp_path):
    rows = [dict(r, registered_tie_policy="exclude") for r in contract_300()]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    for extras in (True, False):
        recs = read_records(path, extras=extras)
        assert recs.registered_tie_policy == "exclude"
        [default] = analyze_records(recs, a="B", b="A")
        assert default.win_rate.policy.value == "exclude" and not default.notes
        [other] = analyze_records(recs, a="B", b="A", tie_policy="half_credit")
        assert "registered with exclude" in other.notes[-1]
    out = subprocess.run([*CLI, "analyze", str(path), "--a", "B", "--b", "A", "--tie-policy", "no_credit",
                          "--format", "json"], capture_output=True, text=True)
    data = json.loads(out.stdout)
    assert data["win_rate"]["policy"] == "no_credit"
    assert any("registered with exclude" in n for n in data["notes"])


def test_several_rounds_are_flagged():
    rows = [dict(r, round=k) for k in (1, 2) for r in contract_400()]
    r = one(rows, min_consistency=0.5)
    assert r.outcomes.total == 800
    assert any("2 rounds" in note for note in r.notes)
    assert not any("rounds" in note for note in one(contract_400(), min_consistency=0.5).notes)
