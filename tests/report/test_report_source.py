"""The report's source abstraction: provenance of a records file, a run's registered policy and gate."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from conftest import pair, write_jsonl
from swapjudge.reading.records import records_from_dicts
from swapjudge.report.html import render_html
from swapjudge.report.markdown import render_report
from swapjudge.workflows.report import prepare_report
from swapjudge.workflows.sources import ReportSource, load_source


def rows() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for i in range(8):
        out += pair(i, "first", "second", cost_usd=0.25, input_tokens=100)
    out += pair(8, "first", "first", cost_usd=0.25, input_tokens=100) + pair(9, "tie", "second")
    return out


def test_records_file_provenance(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", rows())
    source = load_source(path)
    prov = source.provenance
    assert prov["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert prov["calls"] == 20 and prov["systems"] == 2 and prov["judges"] == ["(unnamed)"]
    assert prov["total_cost_usd"] == pytest.approx(18 * 0.25) and prov["total_input_tokens"] == 1800
    html = render_html(prepare_report(source))
    assert prov["sha256"] in html and "total_cost_usd" in html


def test_a_run_reports_under_its_registered_policy_and_gate() -> None:
    config = {"tie_policy": "exclude", "gates": {"min_self_consistency": 0.9}}
    source = ReportSource(records_from_dicts(rows()), "store.sqlite (run 3)",
                          {"kind": "run store", "config": config, "config_hash": "c0ffee"})
    inputs = prepare_report(source)
    [a] = inputs.analyses
    # 8 consistent A wins, 1 flip, 1 half-tie: 80% consistent, below the registered 90% gate
    assert inputs.settings["tie_policy"] == "exclude" and a.gate.min_self_consistency == 0.9
    assert not a.gate.passed and inputs.policy_mismatch is None
    passing = prepare_report(source, min_consistency=0.7)
    [b] = passing.analyses
    assert b.win_rate is not None and b.win_rate.policy.value == "exclude" and b.win_rate.exclude.value == 1.0
    other = prepare_report(source, tie_policy="half_credit", min_consistency=0.7)
    assert other.policy_mismatch is not None and "registered with exclude" in other.policy_mismatch
    assert "registered with exclude" in render_html(other) and "registered with exclude" in render_report(other)
    assert "c0ffee" in render_report(other)


def test_labels_probe_and_pair_limit_sections() -> None:
    data: list[dict[str, object]] = []
    for i in range(6):  # labelled B better; the judge names slot 1 every time: right only when B sits first
        data += pair(i, "first", "first", label="B")
    data += [{"item": f"p{i}", "first": s, "second": s, "verdict": v}
             for i, (s, v) in enumerate([("A", "first"), ("B", "tie"), ("A", "first")])]
    source = ReportSource(records_from_dicts(data), "mem")
    inputs = prepare_report(source, min_consistency=0.0)
    html = render_html(inputs, max_pairs=2)
    [a] = inputs.analyses
    assert a.accuracy is not None and a.identical is not None
    assert "Agreement with labels (6 labelled pairs in both orders, 0 labelled tie)" in html
    # better answer in slot 1: always named (100%); in slot 2: never (0%); each with its denominator
    assert "<td>better answer in slot 1 (of 6 pairs)</td><td class=\"n\">100.0%</td>" in html
    assert "<td>better answer in slot 2 (of 6 pairs)</td><td class=\"n\">0.0%</td>" in html
    assert "<td>per call (of 12 labelled calls)</td><td class=\"n\">50.0%</td>" in html
    assert "Identical-answer probe" in html and "2 / 0 / 1 / 0" in html
    assert html.count('<article class="pair"') == 2 and "Showing the first 2 of 6" in html
