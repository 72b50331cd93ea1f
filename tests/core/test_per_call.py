"""win_rate.per_call: each call counted, a tie half a win in that call (FastChat's per-game view), beside the
headline and never in it."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import pair, shi2024_records, write_jsonl
from swapjudge.core.analysis import analyze_records
from swapjudge.reading.records import records_from_dicts


def _one(rows, **kwargs):
    [result] = analyze_records(records_from_dicts(rows), **kwargs)
    return result


def test_a_half_tie_pair_is_worth_three_quarters_per_call():
    # A wins in one order and the other says tie: half credit 1/2, per call (1 + 1/2) / 2 = 3/4
    rows = pair(1, "first", "tie") + pair(2, "first", "second") + pair(3, "second", "first") \
        + pair(4, "tie", "tie") + pair(5, "first", "first")
    w = _one(rows, a="A", b="B", min_consistency=0).win_rate
    assert w.half_credit.value == pytest.approx((0.5 + 1 + 0 + 0.5 + 0.5) / 5)
    assert w.per_call.value == pytest.approx((0.75 + 1 + 0 + 0.5 + 0.5) / 5)
    d = w.to_dict()
    assert d["value"] == w.half_credit.value  # the headline stays half credit
    assert d["per_call"]["value"] == pytest.approx(0.55) and "per call" in d["per_call"]["convention"]
    assert d["per_call"]["low"] < 0.55 < d["per_call"]["high"]


def test_per_call_equals_counting_calls_on_real_mtbench_judgments():
    """gpt-4-0613 on MT-Bench (Shi et al.): per call, every verdict between two systems counted on its own."""
    rows = shi2024_records("MTBench", "gpt-4-0613")
    a, b = "vicuna-13b-v1.3", "baize-v2-13b"
    mine = [r for r in rows if {r["first"], r["second"]} == {a, b}]
    by_item: dict[str, list[dict]] = {}
    for r in mine:
        by_item.setdefault(str(r["item"]), []).append(r)
    # every usable call counts on its own, also one whose twin call has no verdict
    score = [0.5 if r["verdict"] == "tie" else float((r["first"] if r["verdict"] == "first" else r["second"]) == a)
             for rs in by_item.values() for r in rs if r["verdict"]]
    result = _one(mine, a=a, b=b, min_consistency=0)
    assert result.win_rate.per_call.value == pytest.approx(np.mean(score), rel=1e-12)
    assert result.win_rate.per_call.value != pytest.approx(result.win_rate.half_credit.value, abs=1e-3)


def test_per_call_in_the_cli_json(tmp_path):
    rows = [r for i in range(12) for r in pair(i, "first", "tie")]
    rows += [r for i in range(12, 20) for r in pair(i, "second", "first")]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    out = subprocess.run([sys.executable, "-m", "swapjudge", "analyze", str(path), "--a", "A", "--b", "B",
                          "--min-consistency", "0", "--format", "json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)["win_rate"]
    assert d["per_call"]["value"] == pytest.approx((12 * 0.75) / 20)
    assert d["half_credit"] == pytest.approx((12 * 0.5) / 20)
    # 40 calls on 20 items: the interval treats each item (its pair's two calls) as one unit
    assert d["per_call"]["independent"] == "items" and d["per_call"]["clusters"] == 20


def test_a_call_whose_twin_failed_still_counts_per_call():
    rows = pair(1, "first", None) + pair(2, "first", "second") + pair(3, "second", "first")
    w = _one(rows, a="A", b="B", min_consistency=0).win_rate
    assert w.pairs == 2 and w.half_credit.value == pytest.approx(0.5)
    assert w.per_call.value == pytest.approx((1 + 1 + 1 + 0 + 0) / 5)
