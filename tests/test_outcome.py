"""One way to end: every result with a verdict says its `Conclusion` through `ending()`, the library returns a withheld
result (never raises by itself on a failed gate), `raise_for_gate()` raises it, and the CLI maps the outcome to
its exit code in one place. Real files, the real application."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import swapjudge
from conftest import pair, write_jsonl
from decision_streams import decision_yaml
from swapjudge.cli import app
from swapjudge.cli.app import exit_code
from swapjudge.decision.power import PlanError
from swapjudge.errors import GateError, InputError
from swapjudge.outcome import Conclusion, Ending, gates_ending


def _flipping(tmp_path: Path) -> Path:
    """28 pairs: 16 consistent wins of A (over B and over C), 12 flips to the first slot: consistency 16/28, below
    the 70% gate."""
    rows = [r for i in range(8) for r in pair(f"w{i}", "first", "second", judge="j")]
    rows += [r for i in range(12) for r in pair(f"f{i}", "first", "first", judge="j")]
    rows += [r for i in range(8) for r in pair(f"w{i}", "first", "second", a="A", b="C", judge="j")]
    return write_jsonl(tmp_path / "flips.jsonl", rows)


def test_the_exit_codes_are_the_documented_ones() -> None:
    assert {o.name: exit_code(o) for o in Conclusion} == {
        "ok": 0, "failed": 1, "bad_input": 2, "inconclusive": 3, "interrupted": 130}
    assert exit_code(InputError("x").exit_code) == 2 and GateError("x").outcome == Conclusion.failed
    assert GateError("x", outcome=Conclusion.inconclusive).exit_code == 3


def test_gates_ending_names_each_failed_judge_once() -> None:
    class G:
        def __init__(self, passed: bool, reason: str | None) -> None:
            self.passed, self.reason = passed, reason

    ending = gates_ending([("j1", G(True, None)), ("j2", G(False, "too low")), ("j3", None), (None, G(False, "x"))])
    assert ending == Ending(Conclusion.failed, ("gate: j2: too low", "gate: (unnamed judge): x"))
    assert gates_ending([("j1", G(True, None))]).ok


def test_analyze_and_rank_treat_a_failed_gate_alike(tmp_path: Path) -> None:
    path = _flipping(tmp_path)
    analysis = swapjudge.analyze(path)
    ranking = swapjudge.rank(path)  # returns: the ranking is withheld, not raised
    assert analysis.ending().outcome is Conclusion.failed and ranking.ending().outcome is Conclusion.failed
    assert ranking.withheld and ranking.ranking is None
    assert analysis.judges[0].win_rate is None  # withheld on the analysis side too
    with pytest.raises(GateError, match=rf"^gate: j: swap-consistency {16 / 28:.1%} is below the gate of 70%") as a:
        analysis.raise_for_gate()
    with pytest.raises(GateError, match=rf"^gate: judge j: swap-consistency {16 / 28:.1%} is below") as r:
        ranking.raise_for_gate()
    assert a.value.exit_code == r.value.exit_code == 1
    assert "min_consistency 0 ranks anyway" in str(r.value)  # the library names its argument
    document = ranking.to_dict()
    assert "systems" not in document and document["withheld"] == r.value.template
    passed = swapjudge.rank(path, min_consistency=0, bootstrap=0)
    assert passed.ending().ok and not passed.withheld
    passed.raise_for_gate()  # nothing to raise


def test_the_cli_ends_a_failed_gate_through_the_one_mapping(tmp_path: Path) -> None:
    path = _flipping(tmp_path)
    runner = CliRunner()
    ranked = runner.invoke(app, ["rank", str(path)])
    assert ranked.exit_code == 1 and ranked.stdout == ""
    assert "--min-consistency 0 ranks anyway" in ranked.stderr  # the CLI names the flag
    analyzed = runner.invoke(app, ["analyze", str(path)])
    assert analyzed.exit_code == 1 and "swap-consistency" in analyzed.stdout  # shown, then ended
    assert analyzed.stderr.startswith(f"gate: j: swap-consistency {16 / 28:.1%}")


def test_plan_argument_rules_are_one_for_the_library_and_the_cli(tmp_path: Path) -> None:
    decision = decision_yaml(tmp_path / "decision.yaml", items=400)
    cases = [({}, []), ({"expect": 0.6}, ["--expect", "0.6"]),
             ({"pilot": str(tmp_path / "p.jsonl"), "splits": 0.2}, ["--pilot", str(tmp_path / "p.jsonl"),
                                                                    "--splits", "0.2"])]
    runner = CliRunner()
    for kwargs, flags in cases:
        with pytest.raises(PlanError) as caught:
            swapjudge.plan(decision, **kwargs)  # type: ignore[arg-type]
        out = runner.invoke(app, ["plan", str(decision), *flags])
        assert out.exit_code == 2
        # the same rule, said with Python names by the library and with flags by the CLI
        assert caught.value.named(lambda name: "--" + name) in out.stderr.replace("\n", " ")
