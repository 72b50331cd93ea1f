"""`plan --human`: the label budget a target width needs, uniform and active, predicted from a pilot and checked
by simulating label draws at the planned budgets; the command end to end on real files."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from review_server import ENV
from swapjudge.core.active_ppi import ACTIVE, UNIFORM, draw, inclusion_probabilities, label_budget
from swapjudge.core.ppi import ppi_mean

_spec = importlib.util.spec_from_file_location("active_sim", Path(__file__).parents[1] / "core" / "test_active_ppi.py")
assert _spec is not None and _spec.loader is not None
sim = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sim)


def test_planned_budgets_reach_the_width_they_promise() -> None:
    target, realised, budgets = 0.06, {UNIFORM: [], ACTIVE: []}, {UNIFORM: [], ACTIVE: []}
    rng = np.random.default_rng(12)
    for _ in range(4):
        y, f, u = sim.judge_population(rng, 3000)
        pilot = rng.choice(3000, 150, replace=False)
        plan = label_budget(f, u, pilot, y[pilot], None, width=target)
        assert plan.uniform is not None and plan.active is not None
        for design, n in ((UNIFORM, plan.uniform), (ACTIVE, plan.active)):
            budgets[design].append(n)
            drawing = inclusion_probabilities(u, n, design=design)
            pi = np.asarray(drawing.pi)
            for _ in range(60):
                c = sim.estimate(design, y, f, pi, draw(drawing, rng)).corrected
                realised[design].append(c.high - c.low)
    for design in (UNIFORM, ACTIVE):
        assert abs(np.mean(realised[design]) / target - 1) < 0.15, (design, np.mean(realised[design]))
    assert np.mean(budgets[ACTIVE]) < 0.85 * np.mean(budgets[UNIFORM])  # the flips mark the errors here


def test_uniform_plan_of_an_uninformative_judge_is_the_people_alone_sample_size() -> None:
    # a judge with one score for every item: lambda 0, so n = var(y) (2 z / w)^2, as for the people's mean alone
    rng = np.random.default_rng(3)
    y_all = (rng.random(5000) < 0.3).astype(float)
    f = np.full(5000, 0.5)
    pilot = rng.choice(5000, 400, replace=False)
    plan = label_budget(f, np.full(5000, 0.25), pilot, y_all[pilot], None, width=0.05)
    var = float(np.var(y_all[pilot]))
    expected = var * (2 * 1.959963984540054 / 0.05) ** 2
    assert plan.uniform is not None and abs(plan.uniform - expected) <= 1.0
    m = np.zeros(5000, dtype=bool)
    m[rng.choice(5000, plan.uniform, replace=False)] = True
    width = ppi_mean(y_all[m], f[m], f[~m]).corrected
    assert abs((width.high - width.low) / 0.05 - 1) < 0.1


def test_plan_human_command(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    y, f, _ = sim.judge_population(rng, 400)
    judge_rows, human_rows = [], []
    for i in range(400):
        # the judge's calls in both orders, rebuilt from its order-cancelled score (0.5: a flip)
        a_first = "first" if f[i] >= 0.5 else "second"
        b_first = "second" if f[i] == 1.0 else "first"
        judge_rows += [{"judge": "j", "item": f"q{i}", "first": "v2", "second": "v1", "verdict": a_first},
                       {"judge": "j", "item": f"q{i}", "first": "v1", "second": "v2", "verdict": b_first}]
        if i % 5 == 0:
            human_rows.append({"judge": "human:ann", "item": f"q{i}", "first": "v2", "second": "v1",
                               "verdict": "first" if y[i] == 1 else "second"})
    judge_file, human_file, decision = tmp_path / "judge.jsonl", tmp_path / "human.jsonl", tmp_path / "d.yaml"
    judge_file.write_text("".join(json.dumps(r) + "\n" for r in judge_rows))
    human_file.write_text("".join(json.dumps(r) + "\n" for r in human_rows))
    decision.write_text("candidate: v2\nincumbent: v1\nalpha: 0.05\n")

    def plan(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "swapjudge", "plan", str(decision), "--pilot", str(judge_file),
                               *extra], capture_output=True, text=True, env=ENV)

    done = plan("--human", str(human_file), "--width", "0.1", "--format", "json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["pilot_labels"] == 80 and out["items"] == 400 and abs(out["confidence"] - 0.90) < 1e-12
    assert out["uniform"]["labels"] >= 2 and out["active"]["labels"] >= 2
    assert out["uniform"]["width"] <= 0.1 and out["active"]["width"] <= 0.1
    assert any("no `pi`" in note for note in out["notes"])
    text = plan("--human", str(human_file), "--width", "0.1")
    assert text.returncode == 0 and "uniform:" in text.stdout and "active:" in text.stdout
    missing = plan("--human", str(human_file))
    assert missing.returncode == 2 and "--width" in missing.stderr
