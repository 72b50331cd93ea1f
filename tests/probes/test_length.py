import json

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from typer.testing import CliRunner

from conftest import pair, write_jsonl
from swapjudge.cli import app
from swapjudge.errors import InputError
from swapjudge.probes.length import LengthOptions, length_probe, length_slope, order_cancelled_score
from swapjudge.reading.pairs import FIRST, SECOND, Outcome, classify
from swapjudge.reading.sidefiles import load_answer_texts

runner = CliRunner()


def planted(beta: float, n: int = 600, seed: int = 7, split_share: float = 0.2):
    """Pairs whose consistent winner is x with probability sigmoid(beta * (len_x - len_y) / 100); a share of the
    pairs are flips instead (position noise that does not depend on length)."""
    rng = np.random.default_rng(seed)
    lx, ly = rng.integers(40, 1600, n), rng.integers(40, 1600, n)
    x_wins = rng.random(n) < 1 / (1 + np.exp(-beta * (lx - ly) / 100))
    vx = np.where(x_wins, FIRST, SECOND)
    vy = np.where(x_wins, SECOND, FIRST)
    flip = rng.random(n) < split_share
    vx, vy = np.where(flip, FIRST, vx), np.where(flip, FIRST, vy)
    return classify(vx, vy), lx, ly


def test_planted_length_preference_is_recovered_with_its_sign_and_significance():
    outcome, lx, ly = planted(0.4)
    r = length_probe(outcome, lx, ly)
    s = r.slope
    assert s.slope > 0 and s.low > 0 and s.p_value < 1e-6
    # the planted 0.4 per 100 chars is attenuated by the flips scored 1/2, but stays inside a loose band
    assert 0.2 < s.slope < 0.45
    assert r.prefer_longer.rate > 0.7 and r.prefer_longer.low > 0.5 and r.prefer_longer_p_value < 1e-6
    # a preference for the shorter answer is recovered with the opposite sign
    short = length_probe(*planted(-0.4, seed=8)).slope
    assert short.slope < 0 and short.high < 0


def test_without_a_planted_preference_the_interval_covers_zero():
    outcome, lx, ly = planted(0.0, seed=11)
    r = length_probe(outcome, lx, ly)
    assert r.slope.low < 0 < r.slope.high
    assert r.slope.p_value > 0.05
    assert r.prefer_longer.low < 0.5 < r.prefer_longer.high


def test_slope_matches_scikit_learn_on_the_same_data():
    outcome, lx, ly = planted(0.3, n=300, seed=3)
    score = order_cancelled_score(outcome)
    d = (lx - ly).astype(float)
    mine = length_slope(score, d, per=100)
    # splits at 1/2 = one win and one loss with weight 1/2 each: the same likelihood for scikit-learn
    half = score == 0.5
    features = np.concatenate([d[~half], d[half], d[half]])[:, None] / 100
    target = np.concatenate([score[~half], np.ones(half.sum()), np.zeros(half.sum())]).astype(int)
    weight = np.concatenate([np.ones((~half).sum()), np.full(half.sum(), 0.5), np.full(half.sum(), 0.5)])
    ref = LogisticRegression(C=np.inf, fit_intercept=False, tol=1e-10, max_iter=1000)
    ref.fit(features, target, sample_weight=weight)
    assert mine.slope == pytest.approx(ref.coef_[0][0], rel=1e-4)
    # model-based standard error = inverse observed Fisher information
    p = 1 / (1 + np.exp(-mine.slope * d / 100))
    info = np.sum((d / 100) ** 2 * p * (1 - p))
    assert mine.se_model == pytest.approx(1 / np.sqrt(info), rel=1e-4)


def test_prefer_longer_matched_slice_and_splits_by_hand():
    # lengths (x, y) and outcomes chosen to count by hand; threshold 100, tolerance 20
    lx = np.array([500, 500, 500, 100, 300, 310, 300, 700])
    ly = np.array([100, 100, 100, 500, 305, 300, 290, 650])
    outcome = np.array([Outcome.X_WINS, Outcome.X_WINS, Outcome.Y_WINS, Outcome.Y_WINS, Outcome.X_WINS,
                        Outcome.FLIP_FIRST, Outcome.TIE, Outcome.INCOMPLETE])
    x = np.array(["a"] * 8)
    y = np.array(["b"] * 8)
    r = length_probe(outcome, lx, ly, LengthOptions(threshold=100, tolerance=20), x=x, y=y, pair=("a", "b"))
    assert r.pairs == 7  # the incomplete pair is left out
    # |d| > 100: pairs 0-3; the longer answer won pairs 0, 1, 3 (y longer and y won), not 2
    assert (r.prefer_longer.k, r.prefer_longer.n, r.prefer_longer_splits) == (3, 4, 0)
    # |d| <= 20: pairs 4, 5, 6: consistent are 4 (a win) and 6 (tie): 2 of 3
    assert r.matched_pairs == 3
    assert (r.matched_consistency.consistent, r.matched_consistency.pairs) == (2, 3)
    assert r.matched_win_rate.half_credit.value == pytest.approx((1 + 0.5 + 0.5) / 3)
    assert r.to_dict()["note"].startswith("Swapping cannot remove a length preference")


def test_length_controlled_win_rate_moves_toward_half_when_the_winner_is_just_longer():
    # a wins exactly when it is longer: the raw win rate favours a, at equal length the model says ~1/2
    rng = np.random.default_rng(5)
    n = 400
    la = rng.integers(100, 1000, n)
    lb = rng.integers(100, 1000, n) - 150
    a_wins = rng.random(n) < 1 / (1 + np.exp(-(la - lb) / 200))
    outcome = np.where(a_wins, Outcome.X_WINS, Outcome.Y_WINS)
    r = length_probe(outcome, la, lb, LengthOptions(length_controlled=True), x=np.array(["a"] * n),
                     y=np.array(["b"] * n), pair=("a", "b"))
    lc = r.length_controlled
    assert lc.raw > 0.6
    assert lc.low < 0.5 < lc.high and abs(lc.value - 0.5) < abs(lc.raw - 0.5)


def _texts(rng, n_words):
    return " ".join("w" * int(rng.integers(1, 8)) for _ in range(n_words))


def test_cli_length_probe_with_a_pairs_file(tmp_path):
    rng = np.random.default_rng(2)
    records, pairs_rows = [], []
    for i in range(120):
        na, nb = int(rng.integers(5, 300)), int(rng.integers(5, 300))
        texts = {"A": _texts(rng, na), "B": _texts(rng, nb)}
        longer = "A" if len(texts["A"]) > len(texts["B"]) else "B"
        # the judge picks the longer answer in both orders, except for a few flips toward slot 1
        if i % 10 == 0:
            records += pair(i, "first", "first")
        elif longer == "A":
            records += pair(i, "first", "second")
        else:
            records += pair(i, "second", "first")
        pairs_rows.append({"item": i, "prompt": "q", "answers": texts})
    rec = write_jsonl(tmp_path / "r.jsonl", records)
    pf = write_jsonl(tmp_path / "pairs.jsonl", pairs_rows)
    out = runner.invoke(app, ["probe", "length", str(rec), "--pairs", str(pf), "--format", "json",
                              "--a", "A", "--b", "B", "--length-controlled"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)
    assert d["pairs"] == 120 and d["missing_texts"] == 0
    assert d["prefer_longer"]["rate"] == 1.0  # every consistent win went to the longer answer
    assert d["length_controlled"]["a"] == "A"
    out = runner.invoke(app, ["probe", "length", str(rec), "--pairs", str(pf), "--unit", "tokens"])
    assert out.exit_code == 0 and "Swapping cannot remove" in out.output
    out = runner.invoke(app, ["probe", "length", str(rec)])
    assert out.exit_code == 2 and "no answer texts" in out.output


def test_pairs_file_errors_name_line_and_field(tmp_path):
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"item": 1, "prompt": "q", "answers": {"A": "x", "B": "y"}}\n'
                   '{"item": 2, "prompt": "q", "answers": {"A": 3, "B": "y"}}\n')
    with pytest.raises(InputError, match=r"p.jsonl:2: field `answers.A`: must be a string"):
        load_answer_texts(bad)
    # the runner's pairs format: the task text is required here too
    bad.write_text('{"item": 1, "answers": {"A": "x", "B": "y"}}\n')
    with pytest.raises(InputError, match=r"p.jsonl:1: field `prompt`: is missing"):
        load_answer_texts(bad)
    csv_file = tmp_path / "p.csv"
    csv_file.write_text("item,prompt,answer.A,answer.B\n1,q,short,a longer answer\n")
    assert load_answer_texts(csv_file) == {("1", "A"): "short", ("1", "B"): "a longer answer"}


def test_splits_can_be_left_out_of_the_slope():
    outcome, lx, ly = planted(0.4)
    half = length_probe(outcome, lx, ly)
    excluded = length_probe(outcome, lx, ly, LengthOptions(splits="exclude"))
    # flips carry no length signal here, so leaving them out removes their pull toward zero
    assert excluded.slope.slope > half.slope.slope > 0
    assert excluded.slope.pairs < half.slope.pairs
