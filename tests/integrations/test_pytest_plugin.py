"""The pytest plugin, run by pytest itself (pytester): a passing decision, a failing one, an inconclusive one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from decision_streams import DECISION, stream

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
# the entry point may or may not be installed in this environment: block it by name, load the module by name
PLUGIN = ("-p", "no:swapjudge", "-p", "swapjudge.integrations.pytest_plugin")


def _files(pytester) -> None:
    for name, rows in (("win", stream(400, 0.5, 0.25, seed=1)), ("loss", stream(400, 0.25, 0.5, seed=2)),
                       ("few", stream(50, 0.5, 0.25, seed=3))):
        (pytester.path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (pytester.path / "decision.json").write_text(json.dumps(DECISION))


def test_a_shipping_candidate_passes_and_the_others_fail_with_the_verdict(pytester):
    _files(pytester)
    pytester.makepyfile(test_plugin_candidates="""
        import json
        from swapjudge.integrations.pytest_plugin import assert_ships

        DECISION = json.load(open("decision.json"))

        def test_win(swapjudge_decide):
            verdict = swapjudge_decide("win.jsonl", DECISION)
            assert verdict.verdict == "ship"

        def test_loss(swapjudge_decide):
            swapjudge_decide("loss.jsonl", DECISION)

        def test_few():
            assert_ships("few.jsonl", DECISION)

        def test_few_skipped():
            assert_ships("few.jsonl", DECISION, inconclusive="skip")
    """)
    result = pytester.runpytest(*PLUGIN, "-rs")
    result.assert_outcomes(passed=1, failed=2, skipped=1)
    out = result.stdout.str()
    assert "swapjudge: v2 does not ship (keep)" in out and "Keep: the candidate v2 wins" in out
    assert "swapjudge: inconclusive: the data do not decide whether v2 ships yet" in out
    assert "Inconclusive: 50 of the 400 planned items are in" in out
    assert "Traceback" not in out  # the verdict is the failure's whole text


def test_the_plugin_is_registered_for_pytest_and_light_to_load():
    entry = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    assert entry == {"swapjudge": "swapjudge.integrations.pytest_plugin"}
    code = ("import sys; import swapjudge.integrations.pytest_plugin; "
            "print(sorted(m for m in ('polars', 'numpy', 'scipy', 'yaml', 'pydantic', 'rich', 'typer') "
            "if m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
