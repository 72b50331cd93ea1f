"""`rank --outcome graded`: Bradley-Terry on weighted outcomes (a graded pair's order-averaged score s counted as
s of a win and 1 - s of a loss). Exact recovery on noise-free data, item-bootstrap coverage on data whose graded
scores have the model's mean, and the command's errors."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from swapjudge.ranking.battles import comparisons_from_records
from swapjudge.ranking.bradley_terry import Model, fit, fit_ranking
from swapjudge.reading.records import read_records
from swapjudge.workflows.rank import rank_judge

LEVEL_OF_SCORE = {1.0: ("first", 2), 0.75: ("first", 1), 0.5: ("tie", None), 0.25: ("second", 1),
                  0.0: ("second", 2)}


def pair_rows(item: str, x: str, y: str, x_first_score: float, y_first_score: float) -> list[dict]:
    """Both calls of a pair from x's score in each call (1, 0.75, 0.5, 0.25, 0)."""
    rows = []
    for first, second, score in ((x, y, x_first_score), (y, x, 1 - y_first_score)):
        verdict, strength = LEVEL_OF_SCORE[score]  # the slot-1 answer's score
        rows.append({"item": item, "first": first, "second": second, "verdict": verdict, "strength": strength})
    return rows


def test_noise_free_graded_scores_recover_the_strengths_exactly() -> None:
    """Strengths 1 : 3 : 9, so P(a beats b) = 1/4, P(b beats c) = 1/4, P(a beats c) = 1/10; each pair of systems
    gets items whose graded scores average exactly that probability."""
    rows = []
    for i in range(4):  # a vs b: every pair at 1/4 (slightly worse in both orders)
        rows += pair_rows(f"ab{i}", "a", "b", 0.25, 0.25)
        rows += pair_rows(f"bc{i}", "b", "c", 0.25, 0.25)
    for i in range(5):  # a vs c: one pair at 1/2 (tie twice), four at 0 (much worse twice): mean 1/10
        rows += pair_rows(f"ac{i}", "a", "c", 0.5 if i == 0 else 0.0, 0.5 if i == 0 else 0.0)
    data = comparisons_from_records(read_records(rows), outcome="graded")
    truth = np.log([1.0, 3.0, 9.0])
    truth -= truth.mean()
    exact = fit(data, Model.bt_half, ridge=0.0)
    assert exact.converged
    assert np.abs(exact.scores - truth).max() < 1e-9
    # the default ridge (a N(0, 10^2) prior) pulls them in by less than 0.01 on these 13 pairs
    assert 0 < np.abs(fit(data, Model.bt_half).scores - truth).max() < 1e-2
    ranked = rank_judge(read_records(rows), outcome="graded", bootstrap=0, min_consistency=0)
    assert ranked.outcome == "graded" and ranked.ranking.model is Model.bt_half
    assert ranked.ranking.comparisons == 13 and ranked.ranking.items == 13
    by_name = {r.system: r for r in ranked.ranking.rows}
    # c's shares: 4 x 3/4 against b, 4 x 1 + 1/2 against a = 7.5 wins, 1.5 losses (rounded to whole numbers)
    assert (by_name["c"].wins, by_name["c"].losses, by_name["c"].pairs) == (8, 2, 9)


def simulate(rng: np.random.Generator, strength: np.ndarray, n_items: int, pairs_per_item: int) -> list[dict]:
    """Graded pairs whose graded score has mean P(x beats y) = sigmoid(s_x - s_y): each call's score for x is
    Binomial(4, p) / 4, in both orders."""
    k = strength.size
    names = [f"s{i}" for i in range(k)]
    rows = []
    every = [(i, j) for i in range(k) for j in range(i + 1, k)]
    for item in range(n_items):
        for pick in rng.choice(len(every), size=pairs_per_item, replace=False):  # distinct pairs on an item
            i, j = every[pick]
            p = 1 / (1 + math.exp(-(strength[i] - strength[j])))
            first, second = rng.binomial(4, p, size=2) / 4
            rows += pair_rows(str(item), names[i], names[j], float(first), float(second))
    return rows


@pytest.mark.slow
def test_item_bootstrap_intervals_cover_the_true_strengths() -> None:
    rng = np.random.default_rng(26)
    strength = np.array([-1.0, -0.5, -0.1, 0.2, 0.5, 0.9])
    strength -= strength.mean()
    covered = total = 0
    for replicate in range(60):
        data = comparisons_from_records(read_records(simulate(rng, strength, 120, 3)), outcome="graded")
        ranking = fit_ranking(data, Model.bt_half, rounds=200, seed=replicate)
        for row in ranking.rows:
            truth = strength[int(row.system[1:])]
            covered += row.low <= truth <= row.high
            total += 1
    coverage = covered / total
    print(f"graded rank coverage {coverage:.3f} over {total} intervals")
    assert 0.90 <= coverage <= 0.98, coverage


def test_graded_outcome_needs_strength_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_text(json.dumps({"item": 1, "first": "a", "second": "b", "verdict": "first"}) + "\n"
                    + json.dumps({"item": 1, "first": "b", "second": "a", "verdict": "second"}) + "\n")
    done = subprocess.run([sys.executable, "-m", "swapjudge", "rank", str(path), "--outcome", "graded"],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert "--outcome graded needs graded verdicts" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
