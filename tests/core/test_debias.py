"""Debiased verdicts from both orders: order averaging and contextual calibration against a judge whose slot
prior is known, and `analyze` reporting them next to the raw audit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.special import expit
from typer.testing import CliRunner

from swapjudge.cli import app
from swapjudge.core.analysis import analyze_records
from swapjudge.core.debias import debias
from swapjudge.reading.records import read_records, records_from_dicts


def judge_calls(signal: np.ndarray, habit: float, *, probes: int = 0) -> list[dict[str, Any]]:
    """A judge whose log-odds for slot 1 are (quality of slot 1 - quality of slot 2) + habit; x = "a" is better
    when signal > 0, and the label says so. Probe calls show the same answer twice (signal 0)."""
    rows = []
    for i, s in enumerate(signal):
        label = "a" if s > 0 else "b"
        p_ab = float(expit(s + habit))  # a first
        p_ba = float(expit(-s + habit))  # b first
        verdict_ab = "first" if p_ab > 0.5 else "second"
        verdict_ba = "first" if p_ba > 0.5 else "second"
        rows.append({"judge": "j", "item": f"q{i}", "first": "a", "second": "b", "verdict": verdict_ab,
                     "label": label, "p_first": p_ab, "p_second": 1 - p_ab})
        rows.append({"judge": "j", "item": f"q{i}", "first": "b", "second": "a", "verdict": verdict_ba,
                     "label": label, "p_first": p_ba, "p_second": 1 - p_ba})
    for i in range(probes):
        p = float(expit(habit))
        rows.append({"judge": "j", "item": f"q{i}", "first": "a", "second": "a", "verdict": "first",
                     "p_first": p, "p_second": 1 - p})
    return rows


def test_order_averaging_cancels_a_slot_prior() -> None:
    rng = np.random.default_rng(4)
    signal = rng.normal(0.0, 1.0, 400)
    habit = 1.5
    frame = records_from_dicts(judge_calls(signal, habit, probes=10)).frame
    [raw] = analyze_records(frame, a="a", b="b")
    # raw: right in both orders only where the signal beats the habit
    assert raw.accuracy is not None
    assert raw.accuracy.right_both == int(np.sum(np.abs(signal) > habit))
    result = debias(frame, pair=("a", "b"))
    assert result is not None
    # sigma(s + h) + sigma(s - h) > 1 exactly when s > 0: the order-averaged verdict is always right here
    avg = result.order_averaged
    assert avg.accuracy is not None and avg.accuracy.k == 400 and avg.accuracy.n == 400
    assert avg.consistency.rate == 1.0 and avg.by_construction
    assert avg.win_rate is not None
    assert avg.win_rate.a_wins == int(np.sum(signal > 0)) and avg.win_rate.splits == 0
    # the probe measured P(slot 1) = sigma(h) on identical answers; subtracting it leaves the signal's sign
    assert result.slot_prior == pytest.approx(expit(habit))
    cal = result.calibrated
    assert cal is not None and not cal.by_construction
    assert cal.consistency.rate == 1.0 and cal.accuracy is not None and cal.accuracy.k == 400


def test_a_prior_other_than_the_probes_leaves_calibration_partial() -> None:
    # the probe says 0.5 (no prior) while the judge has one: calibration changes nothing, averaging still works
    signal = np.linspace(-1.95, 1.95, 40)  # steps of 0.1, none at 0 or at the habit's +-1
    rows = judge_calls(signal, 1.0)
    rows.append({"judge": "j", "item": "q0", "first": "a", "second": "a", "verdict": "tie",
                 "p_first": 0.5, "p_second": 0.5})
    frame = records_from_dicts(rows).frame
    result = debias(frame, pair=("a", "b"))
    assert result is not None and result.calibrated is not None
    # calibration with the probe's 0.5 leaves the raw verdicts: a flip wherever |signal| < habit
    assert result.calibrated.consistency.k == int(np.sum(np.abs(signal) > 1.0)) == 20
    assert result.order_averaged.accuracy is not None and result.order_averaged.accuracy.k == 40


def test_no_probabilities_no_debiased_section() -> None:
    rows = [{k: v for k, v in r.items() if not k.startswith("p_")} for r in judge_calls(np.ones(3), 0.0)]
    [raw] = analyze_records(records_from_dicts(rows).frame, a="a", b="b")
    assert raw.debiased is None and raw.to_dict()["debiased"] is None  # present as null, as every key


def test_analyze_reports_debiased_next_to_raw(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in judge_calls(rng.normal(0, 1, 60), 2.0, probes=5)))
    # the fast loader without extras keeps the probabilities
    assert "p_first" in read_records(path, extras=False).frame.columns
    result = CliRunner().invoke(app, ["analyze", str(path), "--format", "json"])
    assert result.exit_code == 1  # the raw judge fails the gate ...
    out = json.loads(result.stdout)
    assert out["gate"]["passed"] is False and out["win_rate"] is None
    d = out["debiased"]
    assert d["withheld"] is True and d["order_averaged"]["win_rate"] is None  # ... and so do its mitigations
    assert d["order_averaged"]["accuracy"]["rate"] == 1.0
    assert d["order_averaged"]["consistency"]["by_construction"] is True
    assert out["accuracy"]["both"] < 0.5
    text = CliRunner().invoke(app, ["analyze", str(path)])
    words = " ".join(text.stdout.split())
    assert "order-averaged" in words and "consistency is 1 by construction" in words


def test_debiased_win_rate_is_reported_when_the_gate_passes(tmp_path: Path) -> None:
    rng = np.random.default_rng(10)
    signal = rng.normal(0.5, 2.0, 80)
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in judge_calls(signal, 0.2)))
    result = CliRunner().invoke(app, ["analyze", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    rate = out["debiased"]["order_averaged"]["win_rate"]
    assert rate["value"] == pytest.approx(np.mean(signal > 0))
    assert out["debiased"]["calibrated"] is None  # no probe calls
