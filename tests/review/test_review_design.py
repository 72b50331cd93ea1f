"""The review's sampling design: an active draw by the judge's uncertainty (`review serve --design active`),
its probabilities recorded with every pair in the real store, carried by the export, and weighted by 1/pi in
`calibrate`; the corrected interval covers the simulated reviewers' true win rate. A label file without `pi`
is read as uniform and says so; a bad `pi` is one line naming the field."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

from review_server import ENV
from swapjudge.core.policy import Gate
from swapjudge.probes.calibrate import NO_PI_NOTE, calibrate_records
from swapjudge.reading.pairs_file import PairItem
from swapjudge.reading.records import records_from_dicts
from swapjudge.review.assign import pair_of, plan_review
from swapjudge.review.design import item_uncertainty
from swapjudge.review.export import export_review, review_records
from swapjudge.review.votes import ReviewStore
from swapjudge.workflows.review import open_review

A, B = "sysA", "sysB"


def items_of(n: int) -> list[PairItem]:
    return [PairItem(f"q{i}", f"prompt {i}", {A: f"text a {i}", B: f"text b {i}"}, None, i + 1) for i in range(n)]


def world(rng: np.random.Generator, n: int) -> tuple[np.ndarray, list[dict]]:
    """Each item's chance that a person names A, and a judge's records in both orders: sure and right on clear
    items (it names the people's favourite in both orders), a coin per order on unclear ones (so it flips there,
    and its order-cancelled score misses the people's)."""
    clear = rng.random(n) < 0.7
    p = np.where(clear, np.where(rng.random(n) < 0.6, 0.95, 0.05), rng.uniform(0.2, 0.8, n))
    rows = []
    for i in range(n):
        for first, second in ((A, B), (B, A)):
            names_a = (p[i] > 0.5) if clear[i] else (rng.random() < 0.5)
            pick = A if names_a else B
            rows.append({"judge": "j", "item": f"q{i}", "first": first, "second": second,
                         "verdict": "first" if pick == first else "second"})
    return p, rows


def vote_all(store: Path, plan_pairs: dict[str, float], rng: np.random.Generator, plan: object) -> None:
    opened, _ = ReviewStore.create_or_resume(store, lambda: plan, {})
    try:
        for name in opened.reviewers:
            while (task := opened.next_task(name)) is not None:
                first = A if task.response_1.startswith("text a") else B
                pick = A if rng.random() < plan_pairs[task.prompt] else B
                opened.vote(name, task.task, "1" if pick == first else "2")
    finally:
        opened.close()


def test_active_design_records_pi_exports_it_and_calibrate_covers(tmp_path: Path) -> None:
    n, budget, replications = 200, 40, 100
    covered, widths, flips_pi, clear_pi = 0, [], [], []
    shm = Path("/dev/shm")
    folder = Path(tempfile.mkdtemp(dir=shm)) if shm.is_dir() else tmp_path  # votes commit fast on tmpfs
    for rep in range(replications):
        rng = np.random.default_rng(500 + rep)
        items = items_of(n)
        p, judge_rows = world(rng, n)
        judged = records_from_dicts(judge_rows)
        u, unseen = item_uncertainty(judged, items, [pair_of(it, None, None, None) for it in items])
        assert unseen == 0
        plan = plan_review(items, ["ann", "ben"], seed=rep, reshow=0.0, design="active", budget=budget,
                           uncertainty=u)
        pis = np.array([pair.pi for pair in plan.pairs])
        flips_pi += [pair.pi for pair in plan.pairs if u[int(pair.item[1:])] == 0.25]
        clear_pi += [pair.pi for pair in plan.pairs if u[int(pair.item[1:])] < 0.25]
        assert plan.design == "active" and np.all((pis > 0) & (pis <= 1))
        store = folder / f"r{rep}.db"
        vote_all(store, {it.prompt: float(p[i]) for i, it in enumerate(items)}, rng, plan)
        human = review_records(store)
        assert {r["design"] for r in human} == {"active"} and {r["seed"] for r in human} == {rep}
        result = calibrate_records(judged.frame, records_from_dicts(human, allow_unpaired=True).frame, A, B,
                                   gate=Gate(0.7, True, None))
        assert result.design == "active" and result.pi_recorded
        truth = float(p.mean())  # the reviewers' true win rate of A over these items
        c = result.ppi.corrected
        covered += c.low <= truth <= c.high
        widths.append(c.high - c.low)
    if folder != tmp_path:
        shutil.rmtree(folder)
    assert min(flips_pi) > max(clear_pi)  # the draw leans on the pairs the judge flipped
    assert binomtest(covered, replications, 0.95).pvalue > 0.01, covered / replications


def test_store_keeps_pi_and_the_export_carries_it(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    items = items_of(60)
    _, judge_rows = world(rng, 60)
    pairs_file = tmp_path / "pairs.jsonl"
    pairs_file.write_text("".join(json.dumps({"item": it.item, "prompt": it.prompt, "answers": it.answers}) + "\n"
                                  for it in items))
    judge_file = tmp_path / "judge.jsonl"
    judge_file.write_text("".join(json.dumps(r) + "\n" for r in judge_rows))
    store = tmp_path / "review.db"
    live = open_review(pairs_file, store, "ann", reshow=0.0, seed=9, queue=judge_file, design="active", budget=6)
    live.store.close()
    db = sqlite3.connect(store)
    drawn = db.execute("SELECT d.pi, d.design, p.origin FROM draws d JOIN pairs p ON p.pair = d.pair").fetchall()
    queued = db.execute("SELECT COUNT(*) FROM pairs WHERE origin = 'queue' AND pair NOT IN "
                        "(SELECT pair FROM draws)").fetchone()[0]
    db.close()
    assert drawn and {d for _, d, _ in drawn} == {"active"} and {o for _, _, o in drawn} == {"sample"}
    assert queued > 0  # flipped pairs the draw left out: reviewed from the queue, with no pi
    # resuming with another design is refused, naming the option
    again = subprocess.run([sys.executable, "-c", (
        "from swapjudge.workflows.review import open_review\n"
        f"open_review({str(pairs_file)!r}, {str(store)!r}, 'ann', reshow=0.0, seed=9, queue={str(judge_file)!r}, "
        "design='uniform', budget=6)")], capture_output=True, text=True, env=ENV)
    assert "design" in again.stderr and again.returncode != 0
    opened = ReviewStore.open(store)
    try:
        while (task := opened.next_task("ann")) is not None:
            opened.vote("ann", task.task, "1")
    finally:
        opened.close()
    out = tmp_path / "votes.jsonl"
    export_review(store, out)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["origin"] for r in records if r["pi"] is None} == {"queue"}
    assert all(0 < r["pi"] <= 1 and r["design"] == "active" and r["seed"] == 9 for r in records
               if r["origin"] == "sample")
    done = subprocess.run([sys.executable, "-m", "swapjudge", "calibrate", str(judge_file), "--human", str(out),
                           "--a", A, "--b", B, "--format", "json"], capture_output=True, text=True, env=ENV)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["design"] == "active" and report["pi_recorded"] is True
    assert report["n_human"] == sum(r["origin"] == "sample" for r in records)


def test_labels_without_pi_are_read_as_uniform_and_bad_pi_is_one_line(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    p, judge_rows = world(rng, 80)
    judge_file = tmp_path / "judge.jsonl"
    judge_file.write_text("".join(json.dumps(r) + "\n" for r in judge_rows))
    people = [{"judge": "human:ann", "item": f"q{i}", "first": A, "second": B,
               "verdict": "first" if rng.random() < p[i] else "second"} for i in range(0, 80, 4)]

    def run(rows: list[dict]) -> subprocess.CompletedProcess[str]:
        path = tmp_path / "human.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return subprocess.run([sys.executable, "-m", "swapjudge", "calibrate", str(judge_file), "--human",
                               str(path), "--a", A, "--b", B, "--format", "json"], capture_output=True, text=True,
                              env=ENV)

    plain = run(people)
    assert plain.returncode == 0, plain.stderr
    report = json.loads(plain.stdout)
    assert report["design"] == "uniform" and report["pi_recorded"] is False and NO_PI_NOTE in report["notes"]
    equal = json.loads(run([{**r, "pi": 0.25} for r in people]).stdout)
    assert equal["corrected"] == report["corrected"] and equal["pi_recorded"] is True
    text = subprocess.run([sys.executable, "-m", "swapjudge", "calibrate", str(judge_file), "--human",
                           str(tmp_path / "human.jsonl"), "--a", A, "--b", B], capture_output=True, text=True,
                          env=ENV)
    assert "uniform sample" in text.stdout
    bad = run([{**r, "pi": 0.0 if i == 3 else 0.25} for i, r in enumerate(people)])
    assert bad.returncode == 2 and "field `pi`" in bad.stderr and "q12" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    mixed = run([{**r, "pi": 0.25} if i else r for i, r in enumerate(people)])
    assert mixed.returncode == 2 and "without `pi`" in mixed.stderr
