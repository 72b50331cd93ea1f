"""`decide` anchored in people: a self-preferring judge whose bias alone would ship does not make people's
labels ship more than alpha of the time; the verdict line names the labels and the design; a failing judge gate
is reported without forcing keep; the registration's hash is unchanged for files without `human`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from review_server import ENV
from swapjudge.decision.file import parse_decision
from swapjudge.workflows.decide import decide

A, B = "v2", "v1"


def study(rng: np.random.Generator, n: int, *, people_rate: float, self_preference: float,
          flip: float = 0.2) -> tuple[list[dict], np.ndarray]:
    """People name A on an item with probability p_i (mean `people_rate`); the judge names the people's choice,
    moved toward A by `self_preference` (a judge that prefers the candidate's answers), and flips a share of
    pairs (names slot 1 in both orders)."""
    p = np.clip(rng.normal(people_rate, 0.25, n), 0.0, 1.0)
    people = rng.random(n) < p
    rows = []
    for i in range(n):
        favours_a = people[i] or rng.random() < self_preference
        flipped = rng.random() < flip
        for first, second in ((A, B), (B, A)):
            pick = first if flipped else (A if favours_a else B)
            rows.append({"judge": "j", "item": f"q{i}", "first": first, "second": second,
                         "verdict": "first" if pick == first else "second"})
    return rows, people.astype(float)


def write_labels(path: Path, people: np.ndarray, labelled: np.ndarray, pi: float | None = None) -> Path:
    with path.open("w") as handle:
        for i in np.flatnonzero(labelled):
            row = {"judge": "human:ann", "item": f"q{i}", "first": A, "second": B,
                   "verdict": "first" if people[i] == 1.0 else "second"}
            if pi is not None:
                row["pi"] = pi
            handle.write(json.dumps(row) + "\n")
    return path


@pytest.mark.slow
def test_a_self_preferring_judge_does_not_ship_through_the_people(tmp_path: Path) -> None:
    # people: 50% (at the bar); the judge alone: 0.9 x (0.5 + 0.5 x 0.267) + 0.1 x 0.5 = 62%, +12 points
    alpha, reps, n, labelled_share = 0.05, 150, 400, 0.3
    shipped = judge_ships = 0
    for rep in range(reps):
        rng = np.random.default_rng(900 + rep)
        rows, people = study(rng, n, people_rate=0.5, self_preference=0.267, flip=0.1)
        labels = write_labels(tmp_path / f"h{rep}.jsonl", people, rng.random(n) < labelled_share)
        spec = {"candidate": A, "incumbent": B, "alpha": alpha, "min_consistency": 0.5}
        judge_only = decide(rows, spec)
        judge_ships += judge_only.verdict == "ship"
        anchored = decide(rows, {**spec, "human": {"labels": str(labels), "design": "uniform"}})
        shipped += anchored.verdict == "ship"
        assert anchored.human is not None and anchored.human["design"] == "uniform"
    print(f"ship rate: judge alone {judge_ships / reps:.3f}, anchored in people {shipped / reps:.3f}")
    assert judge_ships / reps > 0.9  # the judge's bias alone ships
    assert binomtest(shipped, reps, alpha, alternative="greater").pvalue > 0.01, shipped / reps


def test_a_failing_judge_gate_is_reported_not_deciding(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    rows, people = study(rng, 600, people_rate=0.75, self_preference=0.0, flip=0.45)
    labels = write_labels(tmp_path / "h.jsonl", people, rng.random(600) < 0.5, pi=0.5)
    spec = {"candidate": A, "incumbent": B, "min_consistency": 0.7}
    assert decide(rows, spec).verdict == "keep"  # the gate alone keeps
    anchored = decide(rows, {**spec, "human": {"labels": str(labels), "design": "uniform"}})
    assert anchored.verdict == "ship", anchored.headline
    assert "people's labels (uniform design)" in anchored.headline and "gate fails" in anchored.headline
    assert f"{anchored.human['labels']:,}" in anchored.headline
    assert anchored.gate.passed is False  # still reported as failed
    assert any("reported, not deciding" in note for note in anchored.notes)


def test_registered_design_must_match_the_labels(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    rows, people = study(rng, 200, people_rate=0.6, self_preference=0.0)
    labels = write_labels(tmp_path / "h.jsonl", people, rng.random(200) < 0.3)
    decision = tmp_path / "d.yaml"
    decision.write_text(f"candidate: {A}\nincumbent: {B}\nhuman:\n  labels: h.jsonl\n  design: active\n")
    records = tmp_path / "judge.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = subprocess.run([sys.executable, "-m", "swapjudge", "decide", str(decision), str(records)],
                          capture_output=True, text=True, env=ENV)
    assert done.returncode == 2 and "carry no `pi`" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert labels.exists()


@pytest.mark.slow
def test_sequential_monitoring_checked_every_ten_votes_ships_at_most_alpha(tmp_path: Path) -> None:
    # the same self-preferring judge (alone at 62%, people at the bar), labels in a random order; a study
    # "ships" when any look after 10, 20, ... votes ships: the sequence's first crossing comes by the last look
    alpha, reps, n = 0.05, 120, 400
    shipped = 0
    for rep in range(reps):
        rng = np.random.default_rng(4000 + rep)
        rows, people = study(rng, n, people_rate=0.5, self_preference=0.267, flip=0.1)
        chosen = rng.permutation(n)[:200]  # a random sample, voted in a random order
        labels = tmp_path / f"s{rep}.jsonl"
        with labels.open("w") as handle:
            for i in chosen:
                handle.write(json.dumps({"judge": "human:ann", "item": f"q{i}", "first": A, "second": B,
                                         "verdict": "first" if people[i] == 1.0 else "second"}) + "\n")
        verdict = decide(rows, {"candidate": A, "incumbent": B, "alpha": alpha, "monitoring": "sequential",
                                "human": {"labels": str(labels)}})
        looks = range(10, 201, 10)
        ship_at = verdict.bound.ship_at if verdict.bound is not None else None
        shipped += ship_at is not None and ship_at <= looks[-1]
    print(f"sequential ship rate over looks every 10 votes: {shipped / reps:.3f}")
    assert binomtest(shipped, reps, alpha, alternative="greater").pvalue > 0.01, shipped / reps


def test_sequential_ships_a_real_improvement_and_says_when(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    rows, people = study(rng, 600, people_rate=0.8, self_preference=0.0, flip=0.1)
    labels = write_labels(tmp_path / "h.jsonl", people, rng.random(600) < 0.5)
    verdict = decide(rows, {"candidate": A, "incumbent": B, "monitoring": "sequential",
                            "human": {"labels": str(labels)}})
    assert verdict.verdict == "ship" and verdict.bound is not None and verdict.bound.ship_at is not None
    assert verdict.bound.method == "ppi_betting_cs" and "uniform design" in verdict.headline


def test_hash_unchanged_without_human_and_sequential_refused() -> None:
    plain = parse_decision({"candidate": A, "incumbent": B})
    assert "human" not in plain.to_dict()
    with_human = parse_decision({"candidate": A, "incumbent": B, "human": {"labels": "h.jsonl"}})
    assert with_human.content_hash != plain.content_hash and with_human.to_dict()["human"]["design"] == "uniform"
    from swapjudge.decision.file import DecisionFileError

    with pytest.raises(DecisionFileError, match="human"):
        parse_decision({"candidate": A, "incumbent": B, "monitoring": "sequential",
                        "human": {"labels": "h", "design": "active"}})
