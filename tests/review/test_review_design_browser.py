"""The review page end to end on an active design: the real server (`review serve --design active`), a real
headless Chromium voting with the keyboard as simulated reviewers would, the real export feeding `calibrate`,
whose 1/pi-weighted interval covers the simulated reviewers' true win rate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from review_server import ENV, ReviewServer, write_pairs

playwright = pytest.importorskip("playwright.sync_api", reason="playwright is in the [dev] extra")

from test_review_browser import _open, _wait_for_task_change, wait_until  # noqa: E402

A, B = "sysA", "sysB"


def test_a_browser_votes_on_an_active_design_and_calibrate_covers(tmp_path: Path) -> None:
    rng = np.random.default_rng(21)
    n = 120
    clear = rng.random(n) < 0.7
    # each item's chance that a reviewer names A; the truth is their mean over the items
    p = np.where(clear, np.where(rng.random(n) < 0.65, 0.95, 0.05), rng.uniform(0.2, 0.8, n))
    items = [{"item": f"q{i:03d}", "prompt": f"Question {i}?",
              "answers": {A: f"First kind {i}.", B: f"Other kind {i}."}} for i in range(n)]
    pairs = write_pairs(tmp_path / "pairs.jsonl", items)
    judge_rows = []
    for i in range(n):
        for first, second in ((A, B), (B, A)):  # sure and right where clear, a coin per order (flips) elsewhere
            names_a = (p[i] > 0.5) if clear[i] else (rng.random() < 0.5)
            pick = A if names_a else B
            judge_rows.append({"judge": "j", "item": f"q{i:03d}", "first": first, "second": second,
                               "verdict": "first" if pick == first else "second"})
    judge_file = tmp_path / "judge.jsonl"
    judge_file.write_text("".join(json.dumps(r) + "\n" for r in judge_rows))
    store = tmp_path / "review.db"
    system_of = {text: name for it in items for name, text in it["answers"].items()}
    prob = {it["prompt"]: float(p[i]) for i, it in enumerate(items)}
    votes = 0
    with ReviewServer(pairs, store, ["alice"], "--seed", "5", "--reshow", "0", "--design", "active", "--budget",
                      "30", "--judge-records", str(judge_file), "--a", A, "--b", B) as srv, \
            playwright.sync_playwright() as pw:
        context = _open(pw, tmp_path / "profile")
        page = context.new_page()
        page.goto(srv.links["alice"])
        wait_until(page, "() => ['task', 'done'].includes(document.body.dataset.state)", timeout=15)
        while page.evaluate("document.body.dataset.state") == "task":
            task = page.evaluate("document.body.dataset.task")
            first = system_of[page.text_content("#response_1") or ""]
            names_a = rng.random() < prob[page.text_content("#prompt") or ""]
            page.keyboard.press("1" if (A if names_a else B) == first else "2")
            _wait_for_task_change(page, task)
            votes += 1
        context.close()
        said = [line for line in srv.stderr_lines if "active design:" in line]
        assert said and "budget 30" in said[0], srv.stderr_lines
    assert votes >= 10
    out = tmp_path / "human.jsonl"
    subprocess.run([sys.executable, "-m", "swapjudge", "review", "export", "--store", str(store), "-o", str(out)],
                   check=True, env=ENV, capture_output=True)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == votes and {r["design"] for r in records} == {"active"}
    assert len({r["pi"] for r in records}) > 1  # unequal probabilities, recorded with every vote
    done = subprocess.run([sys.executable, "-m", "swapjudge", "calibrate", str(judge_file), "--human", str(out),
                           "--a", A, "--b", B, "--format", "json"], capture_output=True, text=True, env=ENV)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    truth = float(p.mean())
    print(f"{votes} votes, corrected {result['corrected']}, truth {truth:.4f}, people-only {result['human_only']}")
    assert result["design"] == "active" and result["n_human"] == votes
    assert result["corrected"]["low"] <= truth <= result["corrected"]["high"], (result["corrected"], truth)
