"""The Action's step: run as the composite action runs it (a subprocess, inputs in the environment), with
temporary GITHUB_STEP_SUMMARY and GITHUB_OUTPUT files whose contents are checked."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from decision_streams import decision_yaml, stream, write
from swapjudge.integrations.github_action import ENV as ACTION_ENV

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}


def parse_outputs(text: str) -> dict[str, str]:
    """$GITHUB_OUTPUT as GitHub reads it: `name=value` lines and `name<<DELIM` ... `DELIM` blocks."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if "<<" in lines[i] and "=" not in lines[i].split("<<")[0]:
            name, delim = lines[i].split("<<", 1)
            end = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1:end])
            i = end + 1
        else:
            name, value = lines[i].split("=", 1)
            out[name] = value
            i += 1
    return out


def step(tmp: Path, **inputs: str) -> tuple[int, str, dict[str, str], str]:
    summary, output = tmp / "summary.md", tmp / "output.txt"
    summary.write_text("earlier step\n")
    output.write_text("")
    env = {**ENV, "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(output),
           **{ACTION_ENV[k]: v for k, v in inputs.items()}}
    done = subprocess.run([sys.executable, "-m", "swapjudge.integrations.github_action"], capture_output=True,
                          text=True, cwd=tmp, env=env)
    return done.returncode, summary.read_text(), parse_outputs(output.read_text()), done.stdout + done.stderr


def test_ship_writes_the_summary_and_the_outputs(tmp_path):
    decision_yaml(tmp_path / "decision.yaml")
    write(tmp_path / "r.jsonl", stream(400, 0.5, 0.25, seed=1))
    code, summary, outputs, _ = step(tmp_path, decision="decision.yaml", records="r.jsonl")
    assert code == 0
    assert summary.startswith("earlier step\n### ✅ Ship: the candidate v2 wins ")  # appended, not overwritten
    assert outputs["verdict"] == "ship" and outputs["exit-code"] == "0"
    assert outputs["headline"].startswith("Ship: the candidate v2 wins")
    assert outputs["markdown"].startswith("### ✅ Ship") and "| flip direction |" in outputs["markdown"]
    assert len(outputs["markdown"].splitlines()) > 5 and (tmp_path / "swapjudge.db").exists()


def test_keep_fails_the_step_and_inconclusive_fails_unless_it_may_pass(tmp_path):
    decision_yaml(tmp_path / "decision.yaml")
    write(tmp_path / "loss.jsonl", stream(400, 0.25, 0.5, seed=2))
    write(tmp_path / "few.jsonl", stream(50, 0.5, 0.25, seed=3))
    code, summary, outputs, _ = step(tmp_path, decision="decision.yaml", records="loss.jsonl")
    assert code == 1 and outputs["verdict"] == "keep" and "### ❌ Keep" in summary
    code, summary, outputs, _ = step(tmp_path, decision="decision.yaml", records="few.jsonl")
    assert code == 3 and outputs["verdict"] == "inconclusive" and outputs["exit-code"] == "3"
    code, summary, outputs, _ = step(tmp_path, decision="decision.yaml", records="few.jsonl", inconclusive="pass")
    assert code == 0 and outputs["verdict"] == "inconclusive" and outputs["exit-code"] == "0"
    assert "Inconclusive passes this step" in summary and "### ⚠️ Inconclusive: 50 of the 400" in summary


def test_bad_input_is_an_error_in_the_summary_with_exit_2(tmp_path):
    (tmp_path / "decision.yaml").write_text("candidate: v2\nincumbent: v1\nalhpa: 0.05\n")
    write(tmp_path / "r.jsonl", stream(10, 0.5, 0.25))
    code, summary, outputs, log = step(tmp_path, decision="decision.yaml", records="r.jsonl")
    assert code == 2 and outputs["verdict"] == "error" and "key `alhpa`" in summary and "Traceback" not in log


def test_a_run_configuration_is_run_then_decided(tmp_path):
    calls = stream(400, 0.5, 0.25, seed=4)
    write(tmp_path / "judge.jsonl", calls)
    pairs = [{"item": f"q{i}", "prompt": f"q {i}", "answers": {"v1": f"old {i}", "v2": f"new {i}"}} for i in range(400)]
    write(tmp_path / "pairs.jsonl", pairs)
    (tmp_path / "run.yaml").write_text(yaml.safe_dump({
        "judge": {"backend": "replay", "path": "judge.jsonl", "name": "replayed"},
        "pairs": {"path": "pairs.jsonl", "a": "v2", "b": "v1"}}))
    decision_yaml(tmp_path / "decision.yaml")
    code, _summary, outputs, log = step(tmp_path, decision="decision.yaml", config="run.yaml")
    assert code == 0, log
    assert outputs["verdict"] == "ship" and "swapjudge.db run 1" in outputs["markdown"]


def test_action_yml_passes_every_input_the_script_reads():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    decide = next(s for s in steps if s.get("id") == "decide")
    assert decide["run"].strip() == "python -m swapjudge.integrations.github_action"
    assert set(decide["env"]) == set(ACTION_ENV.values())
    for name, expr in decide["env"].items():
        key = re.fullmatch(r"\$\{\{ inputs\.([a-z-]+) \}\}", expr)
        assert key and key.group(1) in action["inputs"], name
    assert {"decision", "records", "config", "version", "inconclusive"} <= set(action["inputs"])
    assert action["inputs"]["inconclusive"]["default"] == "fail"
    install = next(s for s in steps if s.get("name") == "Install swapjudge")
    assert "${{" not in install["run"]  # inputs reach the shell through the environment only
    for out in ("verdict", "markdown"):
        assert action["outputs"][out]["value"] == f"${{{{ steps.decide.outputs.{out} }}}}"


@pytest.mark.parametrize("bad", [{"records": "r.jsonl", "config": "run.yaml"}, {}])
def test_records_or_a_configuration_exactly_one(tmp_path, bad):
    decision_yaml(tmp_path / "decision.yaml")
    code, _, outputs, _ = step(tmp_path, decision="decision.yaml", **bad)
    assert code == 2 and outputs["verdict"] == "error"
