"""`swapjudge analyze` and `swapjudge rank` on listwise records, through the real CLI: the JSON names, the gate's
exit 1 and the one-line errors' exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from listwise_sim import always_first, simulate
from swapjudge.cli import app

THETA = [0.9, 0.3, -0.3, -0.9]


def write(path: Path, calls: list) -> Path:
    path.write_text("".join(json.dumps(c.to_dict()) + "\n" for c in calls), encoding="utf-8")
    return path


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_always_slot_one_fails_the_gate(tmp_path: Path) -> None:
    path = write(tmp_path / "first.jsonl", always_first(items=40))
    done = invoke("analyze", str(path), "--format", "json")
    assert done.exit_code == 1
    body = json.loads(done.stdout)
    lw = body["listwise"]
    assert lw["slot_share"] == [1.0, 0.0, 0.0, 0.0]
    assert lw["consistency"]["rate"] == 0.0 and body["gate"]["passed"] is False
    assert lw["strengths"] is None and "winner consistency 0.0%" in lw["strengths_withheld"]
    assert lw["slot_test"]["p_value"] == 0.0 and len(lw["slot_effects"]) == 4
    text = invoke("analyze", str(path))
    assert text.exit_code == 1 and "withheld" in text.stdout and "a slot is preferred" in text.stdout
    assert invoke("rank", str(path), "--bootstrap", "0").exit_code == 1


def test_a_consistent_judge_passes_and_ranks(tmp_path: Path) -> None:
    calls = simulate(np.random.default_rng(0), [3.0, 0.0, -1.0, -2.0], items=60, judge="strong", label=True)
    path = write(tmp_path / "strong.jsonl", calls)
    done = invoke("analyze", str(path), "--format", "json")
    assert done.exit_code == 0, done.stdout
    lw = json.loads(done.stdout)["listwise"]
    assert set(lw) >= {"slot_share", "slot_test", "consistency", "strengths", "slot_effects"}
    assert set(lw["slot_test"]) >= {"statistic", "p_value"} and set(lw["consistency"]) >= {"rate", "low", "high"}
    assert list(lw["strengths"]) == ["s0", "s1", "s2", "s3"]
    assert {"value", "low", "high"} <= set(lw["strengths"]["s0"])
    assert lw["accuracy"]["chance"] == 0.25 and len(lw["accuracy"]["by_slot"]) == 4
    ranked = invoke("rank", str(path), "--bootstrap", "50", "--format", "json")
    assert ranked.exit_code == 0
    fitted = json.loads(ranked.stdout)
    assert fitted["outcome"] == "listwise" and list(fitted["strengths"]) == ["s0", "s1", "s2", "s3"]
    # the same fit: the same point estimates (the intervals differ with the rounds)
    assert fitted["strengths"]["s0"]["value"] == lw["strengths"]["s0"]["value"]
    markdown = invoke("analyze", str(path), "--format", "markdown")
    assert markdown.exit_code == 0 and markdown.stdout.startswith("### judge: strong")


def test_bad_records_exit_2_on_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"item": "q", "slots": ["a", "b", "c"], "pick": 1}) + "\n"
                    + json.dumps({"item": "q2", "slots": ["a", "b", "c"], "pick": 7}) + "\n")
    done = invoke("analyze", str(path))
    assert done.exit_code == 2
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "bad.jsonl:2: field `pick`" in lines[0]
    flags = invoke("analyze", str(path), "--a", "a")
    assert flags.exit_code == 2 and "--a" in flags.output


def test_report_shows_the_n_way_figures(tmp_path: Path) -> None:
    path = write(tmp_path / "first.jsonl", always_first(items=20))
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    done = invoke("report", str(path), "--html", str(html), "--markdown", str(md), "--rank-bootstrap", "20")
    assert done.exit_code == 1  # written, then the failed gate
    page = html.read_text(encoding="utf-8")
    assert "slot 1: 100.0%" in page and "winner consistency" in page and "withheld" in page
    assert "<script" not in page
    assert md.read_text(encoding="utf-8").startswith("### judge: first")


def test_python_api(tmp_path: Path) -> None:
    import swapjudge as sj

    calls = simulate(np.random.default_rng(0), [3.0, 0.0, -1.0, -2.0], items=40, judge="strong")
    rows = [c.to_dict() for c in calls]
    result = sj.analyze(rows)
    assert result.passed and result["strong"].audit.consistency.items == 40
    ranked = sj.rank(rows, bootstrap=20)
    assert not ranked.withheld and ranked.fit is not None
    assert ranked.fit.order()[0] == "s0" and ranked.fit.slot_effects is not None
    always_first = [{**row, "pick": 1} for row in rows]  # below the gate: withheld, raised only when asked
    withheld = sj.rank(always_first, bootstrap=20)
    assert withheld.withheld and withheld.fit is None and withheld.to_dict()["strengths"] is None
    with pytest.raises(sj.GateError):
        withheld.raise_for_gate()
