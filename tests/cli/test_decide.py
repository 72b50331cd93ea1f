"""`swapjudge decide` and `swapjudge plan` as a user runs them: real subprocesses, files on disk, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import swapjudge
from decision_streams import decision_yaml, stream, write

SRC = Path(__file__).resolve().parents[2] / "src"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "swapjudge", *args], capture_output=True, text=True, cwd=cwd,
                          env=ENV)


def test_exit_codes_on_the_four_files(tmp_path):
    decision = decision_yaml(tmp_path / "decision.yaml", items=400)
    win = write(tmp_path / "win.jsonl", stream(400, 0.50, 0.25, seed=1))
    loss = write(tmp_path / "loss.jsonl", stream(400, 0.25, 0.50, seed=2))
    few = write(tmp_path / "few.jsonl", stream(40, 0.50, 0.25, seed=3))
    # the candidate wins 60% of the pairs the judge decides, but half the pairs flip: consistency ~50% < 70%
    gate = write(tmp_path / "gate.jsonl", stream(400, 0.30, 0.20, seed=4))
    codes = {}
    for name, path in (("win", win), ("loss", loss), ("few", few), ("gate", gate)):
        out = cli("decide", str(decision), str(path), cwd=tmp_path)
        codes[name] = out.returncode
        assert "Traceback" not in out.stderr
        if name == "win":
            assert out.stdout.startswith("Ship: the candidate v2 wins ") and "(lower bound " in out.stdout
            assert "each item one independent unit" in out.stdout
        if name == "loss":
            assert out.stdout.startswith("Keep: the candidate v2 wins ") and "(upper bound " in out.stdout
        if name == "few":
            assert out.stdout.startswith("Inconclusive: 40 of the 400 planned items are in")
            assert "more" in out.stdout
        if name == "gate":
            assert out.stdout.startswith("Keep: the judge's swap-consistency ")
            assert "below the gate of 70%" in out.stdout and "wins" not in out.stdout.splitlines()[0]
    assert codes == {"win": 0, "loss": 1, "few": 3, "gate": 1}


def test_the_gate_keeps_although_the_candidate_wins_the_pairs_it_decides(tmp_path):
    rows = stream(400, 0.30, 0.10, seed=5)
    out = cli("decide", str(decision_yaml(tmp_path / "d.yaml")), str(write(tmp_path / "r.jsonl", rows)),
              "--format", "json", cwd=tmp_path)
    payload = json.loads(out.stdout)
    assert out.returncode == 1 and payload["verdict"] == "keep" and payload["gate"]["passed"] is False
    assert payload["counts"]["wins"] > 2 * payload["counts"]["losses"]  # it wins what is decided
    assert payload["win_rate"] is None  # no win rate read past a failed gate


@pytest.mark.parametrize(("content", "key"), [
    ("candidate: v2\nincumbent: v1\nmarign: 0.03\n", "marign"),
    ("candidate: v2\nincumbent: v1\nalpha: 0.7\n", "alpha"),
    ("candidate: v2\nincumbent: v1\nmonitoring: weekly\n", "monitoring"),
    ("candidate: v2\nmargin: 0.03\n", "incumbent"),
    ("candidate: v2\nincumbent: v1\nhypothesis: superior\nmargin: 0.03\n", "margin"),
])
def test_a_bad_decision_file_exits_2_with_one_line_naming_the_key(tmp_path, content, key):
    (tmp_path / "d.yaml").write_text(content)
    records = write(tmp_path / "r.jsonl", stream(20, 0.5, 0.2))
    out = cli("decide", "d.yaml", str(records), cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    # the key's line where the file gives the key (a missing key has none)
    line = next((f":{n}" for n, text in enumerate(content.splitlines(), 1) if text.startswith(key + ":")), "")
    assert len(lines) == 1 and lines[0].startswith(f"error: d.yaml{line}: key `{key}`")
    if key == "marign":
        assert "did you mean `margin`?" in lines[0]
    plan = cli("plan", "d.yaml", "--expect", "0.6", "--splits", "0.2", cwd=tmp_path)
    assert plan.returncode == 2 and f"key `{key}`" in plan.stderr


def test_a_key_given_twice_and_bad_records_exit_2(tmp_path):
    (tmp_path / "d.yaml").write_text("candidate: v2\nincumbent: v1\ncandidate: v3\n")
    out = cli("decide", "d.yaml", str(write(tmp_path / "r.jsonl", stream(5, 1, 0))), cwd=tmp_path)
    assert out.returncode == 2 and "key `candidate` is given twice" in out.stderr
    decision = decision_yaml(tmp_path / "ok.yaml", candidate="v3")
    out = cli("decide", str(decision), "r.jsonl", cwd=tmp_path)
    assert out.returncode == 2 and "field `candidate`: the candidate 'v3' has no calls" in out.stderr
    out = cli("decide", str(decision), "missing.jsonl", cwd=tmp_path)
    assert out.returncode == 2 and "missing.jsonl" in out.stderr and "Traceback" not in out.stderr


def test_missing_calls_keep_unless_allowed(tmp_path):
    rows = stream(400, 0.55, 0.2, seed=6)
    rows[10]["verdict"] = None  # a judge error
    del rows[21]  # a call never made (its pair has one order)
    path = write(tmp_path / "r.jsonl", rows)
    decision = decision_yaml(tmp_path / "d.yaml")
    out = cli("decide", str(decision), str(path), cwd=tmp_path)
    assert out.returncode == 1 and out.stdout.startswith("Keep: 2 judge call(s) are missing or have no verdict")
    out = cli("decide", str(decision), str(path), "--allow-missing", "1", cwd=tmp_path)
    assert out.returncode == 1 and "Keep: 2 judge call(s)" in out.stdout
    out = cli("decide", str(decision), str(path), "--allow-missing", "2", "--format", "json", cwd=tmp_path)
    payload = json.loads(out.stdout)
    # tolerated: the planned 400 items were judged, and the bound is over the 398 with a complete pair
    assert out.returncode == 0 and payload["counts"]["incomplete_pairs"] == 2 and payload["win_rate"]["n"] == 398
    assert payload["counts"]["missing_calls"] == 2 and "2 incomplete pair(s)" in payload["notes"][0]


def test_the_ledger_says_when_the_preregistration_changed(tmp_path):
    records = write(tmp_path / "r.jsonl", stream(400, 0.5, 0.25, seed=7))
    decision = decision_yaml(tmp_path / "d.yaml")
    for _ in range(2):
        out = cli("decide", "d.yaml", "r.jsonl", cwd=tmp_path)
        assert out.returncode == 0 and "pre-registration changed" not in out.stdout
    # reformatting is not a change: the hash is over the validated content
    decision.write_text("# registered before the data\n" + decision.read_text())
    assert "pre-registration changed" not in cli("decide", "d.yaml", "r.jsonl", cwd=tmp_path).stdout
    decision_yaml(decision, min_consistency=0.6)
    out = cli("decide", "d.yaml", "r.jsonl", "--format", "json", cwd=tmp_path)
    payload = json.loads(out.stdout)
    assert payload["registration_changed_after"] == 3
    assert payload["notes"][0].startswith("the pre-registration changed after 3 decision(s)")
    assert (tmp_path / "swapjudge.db").exists()
    other = tmp_path / "elsewhere.db"
    out = cli("decide", "d.yaml", str(records), "--store", str(other), cwd=tmp_path)
    assert other.exists() and "pre-registration changed" not in out.stdout


def test_plan_json_has_items_and_the_text_the_simulated_power(tmp_path):
    decision = decision_yaml(tmp_path / "d.yaml")
    out = cli("plan", "d.yaml", "--expect", "0.58", "--splits", "0.3", "--format", "json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert isinstance(payload["items"], int) and payload["calls"] == 2 * payload["items"]
    assert abs(payload["simulated_power"] - 0.8) <= 0.03 and payload["independent"] == "items"
    text = cli("plan", str(decision), "--expect", "0.58", "--splits", "0.3", cwd=tmp_path).stdout
    assert text.startswith(f"Plan: {payload['items']:,} items for 80% power") and "power check" in text
    pilot = write(tmp_path / "pilot.jsonl", stream(80, 0.45, 0.25, seed=8))
    from_pilot = json.loads(cli("plan", "d.yaml", "--pilot", str(pilot), "--format", "json", cwd=tmp_path).stdout)
    assert from_pilot["expected"]["source"] == "pilot" and from_pilot["items"] > 0
    bad = cli("plan", "d.yaml", "--expect", "0.58", cwd=tmp_path)
    assert bad.returncode == 2 and "--splits" in bad.stderr
    never = json.loads(cli("plan", "d.yaml", "--expect", "0.45", "--splits", "0.3", "--format", "json",
                           cwd=tmp_path).stdout)
    assert never["items"] is None and "no number of items ships" in never["notes"][0]


def test_plan_prices_the_calls_from_a_run_configuration(tmp_path):
    pairs = [{"item": f"q{i}", "prompt": f"Question {i}: " + "word " * 200,
              "answers": {"v1": "an answer " * 50, "v2": "another answer " * 50}} for i in range(10)]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    config = tmp_path / "run.yaml"
    config.write_text("judge: {backend: openai, model: gpt-4o-mini}\npairs: {path: pairs.jsonl, a: v2, b: v1}\n")
    decision_yaml(tmp_path / "d.yaml")
    out = cli("plan", "d.yaml", "--expect", "0.6", "--splits", "0.2", "--config", "run.yaml", "--format", "json",
              cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    dry = swapjudge.dry_run(config, store=tmp_path / "none.db").to_dict()
    per_call = dry["cost_usd"] / dry["calls_to_make"]
    assert payload["model"] == "gpt-4o-mini"
    assert payload["cost_usd"] == pytest.approx(per_call * payload["calls"], rel=1e-9)
    assert payload["batch_cost_usd"] == pytest.approx(dry["batch_cost_usd"] / dry["calls_to_make"]
                                                      * payload["calls"], rel=1e-9)
    assert payload["batch_cost_usd"] < payload["cost_usd"]
    assert not (tmp_path / "swapjudge.db").exists()  # pricing reads no store and writes none


def test_decide_markdown_and_html(tmp_path):
    records = write(tmp_path / "r.jsonl", stream(400, 0.5, 0.25, seed=9))
    decision_yaml(tmp_path / "d.yaml")
    md = cli("decide", "d.yaml", "r.jsonl", "--format", "markdown", "--html", "out.html", cwd=tmp_path)
    assert md.returncode == 0 and md.stdout.startswith("### ✅ Ship: the candidate v2 wins")
    assert "| consistency |" in md.stdout and "| flip direction |" in md.stdout
    page = (tmp_path / "out.html").read_text()
    assert page.startswith("<!doctype html>") and "Ship: the candidate v2 wins" in page
    assert records.exists()
