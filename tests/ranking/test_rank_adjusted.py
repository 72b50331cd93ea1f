"""`rank --order-effect` and `--control`: the fit against scikit-learn's logistic regression, a known first-slot
effect recovered from single-order data, no effect found where there is none, and length control."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.special import expit
from sklearn.linear_model import LogisticRegression
from typer.testing import CliRunner

from swapjudge.cli import app
from swapjudge.ranking.order_effect import Calls, fit_adjusted
from swapjudge.ranking.style import normalised_difference, text_feature


def random_calls(rng: np.random.Generator, strength: np.ndarray, n_items: int, per_item: int, home: float,
                 *, both_orders: bool = False) -> Calls:
    """Random pairs of systems, each shown in a random order (or in both), no ties."""
    k = strength.size
    n = n_items * per_item
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    item = np.repeat(np.arange(n_items), per_item)
    if both_orders:
        a, b, item = np.r_[a, b], np.r_[b, a], np.r_[item, item]
    p = expit(strength[a] - strength[b] + home)
    score = (rng.random(a.size) < p).astype(float)
    return Calls(tuple(f"s{i}" for i in range(k)), item, a, b, score, np.empty((a.size, 0)))


def test_fit_matches_sklearn_logistic_regression() -> None:
    rng = np.random.default_rng(1)
    k, n = 6, 3000
    first = rng.integers(0, k, n)
    second = (first + rng.integers(1, k, n)) % k
    z = rng.normal(0, 1, (n, 2))
    p = expit(np.linspace(-1, 1, k)[first] - np.linspace(-1, 1, k)[second] + 0.3 + z @ [0.5, -0.2])
    score = np.where(rng.random(n) < 0.1, 0.5, (rng.random(n) < p).astype(float))
    data = Calls(tuple(f"s{i}" for i in range(k)), np.arange(n), first, second, score, z, ("u", "v"))
    result = fit_adjusted(data, rounds=0, ridge=1e-2)
    design = np.zeros((n, k + 3))
    design[np.arange(n), first] += 1
    design[np.arange(n), second] -= 1
    design[:, k] = 1
    design[:, k + 1:] = z
    # a tie is half a win and half a loss: two rows with weights 1/2; the ridge is sklearn's L2 penalty 1/C
    model = LogisticRegression(C=1 / 1e-2, fit_intercept=False, tol=1e-12, max_iter=10_000).fit(
        np.vstack([design, design]), np.r_[np.ones(n), np.zeros(n)], sample_weight=np.r_[score, 1 - score])
    coef = model.coef_[0]
    scores = {row.system: row.score for row in result.ranking.rows}
    assert [scores[f"s{i}"] for i in range(k)] == pytest.approx(coef[:k], abs=1e-6)
    assert result.order_effect is not None and result.order_effect.value == pytest.approx(coef[k], abs=1e-6)
    assert [c.value for c in result.controls] == pytest.approx(coef[k + 1:], abs=1e-6)
    # without covariates the calls are summed per ordered pair: the same fit
    plain = Calls(data.systems, data.item, first, second, score, np.empty((n, 0)))
    summed = fit_adjusted(plain, rounds=0)
    model = LogisticRegression(C=1 / 1e-2, fit_intercept=False, tol=1e-12, max_iter=10_000).fit(
        np.vstack([design[:, :k + 1]] * 2), np.r_[np.ones(n), np.zeros(n)], sample_weight=np.r_[score, 1 - score])
    assert summed.order_effect is not None
    assert summed.order_effect.value == pytest.approx(model.coef_[0][k], abs=1e-6)


def test_single_order_data_recovers_a_known_first_slot_effect() -> None:
    rng = np.random.default_rng(7)
    data = random_calls(rng, np.linspace(-1.0, 1.0, 8), 1500, 4, 0.4)
    result = fit_adjusted(data, rounds=300)
    h = result.order_effect
    assert h is not None
    assert h.low <= 0.4 <= h.high and h.low > 0  # covers the truth and excludes 0
    p = result.first_slot_win_probability
    assert p is not None and p[0] == pytest.approx(expit(h.value))
    # strengths are recovered (up to their centring) once the slot is modelled
    scores = np.array([{r.system: r.score for r in result.ranking.rows}[f"s{i}"] for i in range(8)])
    assert np.abs(scores - np.linspace(-1.0, 1.0, 8)).max() < 0.2


def test_two_order_data_without_a_habit_covers_zero() -> None:
    # over seeds 0-39 with 100 rounds each the interval covered 0 in 39 of 40 runs (a 95% interval)
    rng = np.random.default_rng(0)
    data = random_calls(rng, np.linspace(-1.0, 1.0, 8), 1000, 3, 0.0, both_orders=True)
    h = fit_adjusted(data, rounds=300).order_effect
    assert h is not None and h.low <= 0.0 <= h.high


def length_records(rng: np.random.Generator, n_items: int, preference: float) -> list[dict[str, Any]]:
    """Two systems of equal quality; `long` answers about twice as long; the judge's log-odds for an answer are
    `preference` x the normalised length difference (scaled as the fit scales it); order random, no habit."""
    short = rng.uniform(200, 800, n_items)
    long = 2 * short * np.exp(rng.normal(0, 0.4, n_items))
    long_first = rng.random(n_items) < 0.5
    first_len = np.where(long_first, long, short)
    second_len = np.where(long_first, short, long)
    z = normalised_difference(first_len, second_len)
    first_wins = rng.random(n_items) < expit(preference * z)
    rows = []
    for i in range(n_items):
        first, second = ("long", "short") if long_first[i] else ("short", "long")
        rows.append({"judge": "j", "item": f"q{i}", "first": first, "second": second,
                     "verdict": "first" if first_wins[i] else "second",
                     "first_length": float(first_len[i]), "second_length": float(second_len[i])})
    return rows


def test_length_control_removes_a_length_preference(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in length_records(np.random.default_rng(3), 2000, 1.5)))
    runner = CliRunner()
    plain = runner.invoke(app, ["rank", str(path), "--order-effect", "--bootstrap", "200", "--format", "json"])
    controlled = runner.invoke(app, ["rank", str(path), "--order-effect", "--control", "length", "--bootstrap",
                                     "200", "--format", "json"])
    assert plain.exit_code == 0 and controlled.exit_code == 0, plain.output + controlled.output

    def gap(out: dict[str, Any]) -> float:
        scores = {s["system"]: s["score"] for s in out["systems"]}
        return float(scores["long"] - scores["short"])

    uncontrolled, adjusted = json.loads(plain.stdout), json.loads(controlled.stdout)
    assert gap(uncontrolled) > 1.0  # the longer system looks far better ...
    assert abs(gap(adjusted)) < 0.2  # ... and is not, once length is controlled
    [length] = adjusted["controls"]
    assert length["name"] == "length" and length["low"] <= 1.5 <= length["high"]
    assert adjusted["order_effect"]["low"] <= 0 <= adjusted["order_effect"]["high"]
    assert "first_slot_win_probability" in adjusted["order_effect"]
    # two systems: the length-controlled win rate is sigmoid of the adjusted gap, near one half here
    rate = adjusted["controlled_win_rate"]
    assert rate["name"] == "long over short"
    assert rate["value"] == pytest.approx(expit(gap(adjusted)))
    assert rate["low"] < 0.5 < rate["high"] and json.loads(plain.stdout)["controlled_win_rate"]["low"] > 0.7
    text = runner.invoke(app, ["rank", str(path), "--order-effect", "--control", "length", "--bootstrap", "50"])
    assert "control length" in text.stdout and "favours the answer with more length" in text.stdout


def test_control_without_features_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    rows = length_records(np.random.default_rng(4), 20, 0.0)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = CliRunner().invoke(app, ["rank", str(path), "--control", "markdown"])
    assert result.exit_code == 2
    assert "no first_markdown / second_markdown" in result.output and "Traceback" not in result.output


def test_text_features() -> None:
    assert text_feature("abc", "length") == 3
    assert text_feature("# Title\n- a\n- b\n**bold** and 1. not a list\n2) item", "markdown") == 5


def test_one_step_bootstrap_agrees_with_full_refits() -> None:
    rng = np.random.default_rng(12)
    k, n_items, per = 6, 800, 5
    n = n_items * per
    first = rng.integers(0, k, n)
    second = (first + rng.integers(1, k, n)) % k
    z = rng.normal(0, 1, (n, 1))
    p = expit(np.linspace(-1, 1, k)[first] - np.linspace(-1, 1, k)[second] + 0.3 + 0.5 * z[:, 0])
    data = Calls(tuple(f"s{i}" for i in range(k)), np.repeat(np.arange(n_items), per), first, second,
                 (rng.random(n) < p).astype(float), z, ("length",))
    full = fit_adjusted(data, rounds=400, refit="full")
    quick = fit_adjusted(data, rounds=400, refit="one-step")
    assert full.bootstrap_refit == "full" and quick.bootstrap_refit == "one-step"
    for a, b in ((full.order_effect, quick.order_effect), (full.controls[0], quick.controls[0])):
        assert a is not None and b is not None
        width = a.high - a.low
        assert abs(a.low - b.low) < 0.15 * width and abs(a.high - b.high) < 0.15 * width
    widths = [(r.high - r.low, q.high - q.low) for r, q in zip(full.ranking.rows, quick.ranking.rows, strict=True)]
    assert all(abs(w1 - w2) < 0.15 * w1 for w1, w2 in widths)


def test_order_effect_on_real_alpaca_eval_annotations(tmp_path: Path) -> None:
    # AlpacaEval's gpt-4-turbo chain-of-thought judge, gpt4 vs gpt4_1106_preview, each instruction in one
    # coin-flipped order: the order effect is the only position measurement such data allow
    from scipy.special import logit

    from conftest import shared_data

    records = tmp_path / "alpaca.jsonl"
    runner = CliRunner()
    source = shared_data("alpaca_eval", "gpt4_alpaca_eval_cot_gpt4_turbo_fn.annotations.json")
    imported = runner.invoke(app, ["import", "alpaca-eval", str(source), "-o", str(records)])
    assert imported.exit_code == 0, imported.output
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    result = runner.invoke(app, ["rank", str(records), "--order-effect", "--bootstrap", "300", "--format", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    # two systems: the fit's h is half the log-odds gap between the newer model's win rate in slot 1 and in
    # slot 2 (the ridge moves it by far less than the tolerance)
    new = "gpt4_1106_preview"
    first = [r["verdict"] == "first" for r in rows if r["first"] == new and r["verdict"] in ("first", "second")]
    second = [r["verdict"] == "second" for r in rows if r["second"] == new and r["verdict"] in ("first", "second")]
    expected = (logit(np.mean(first)) - logit(np.mean(second))) / 2
    assert out["comparisons"] == sum(r["verdict"] is not None for r in rows)
    assert out["order_effect"]["value"] == pytest.approx(expected, abs=5e-3)
    assert out["order_effect"]["low"] < 0 < out["order_effect"]["high"]
    assert out["bootstrap"]["refit"] == "full"


def test_single_order_data_rank_only_with_the_order_effect(tmp_path: Path) -> None:
    # one order per item: swap-consistency cannot be measured, so the gate has nothing to pass on; the fitted
    # first-slot term is what stands in for the swap, so --order-effect ranks and --control alone does not
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in length_records(np.random.default_rng(5), 200, 1.0)))
    runner = CliRunner()
    alone = runner.invoke(app, ["rank", str(path), "--control", "length", "--bootstrap", "20"])
    assert alone.exit_code == 1 and "no ranking reported" in alone.stderr and "Traceback" not in alone.output
    with_effect = runner.invoke(app, ["rank", str(path), "--order-effect", "--bootstrap", "20", "--format", "json"])
    assert with_effect.exit_code == 0, with_effect.output
    out = json.loads(with_effect.stdout)
    assert out["consistency"]["rate"] is None and out["order_effect"]["value"] is not None
    text = runner.invoke(app, ["rank", str(path), "--order-effect", "--bootstrap", "20"])
    assert "swap-consistency not measured" in text.stdout


def test_order_effect_on_two_order_data_keeps_the_gate(tmp_path: Path) -> None:
    # both orders, a judge that always names slot 1: consistency 0, so even the order-adjusted ranking is withheld
    rows = []
    for i in range(60):
        rows += [{"judge": "j", "item": f"q{i}", "first": "a", "second": "b", "verdict": "first"},
                 {"judge": "j", "item": f"q{i}", "first": "b", "second": "a", "verdict": "first"}]
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = CliRunner().invoke(app, ["rank", str(path), "--order-effect", "--bootstrap", "20"])
    assert result.exit_code == 1 and "0.0%" in result.stderr and "no ranking reported" in result.stderr


def test_without_bootstrap_rounds_the_json_has_null_ends_not_nan() -> None:
    # it printed a traceback (NaN is no JSON): the fit without rounds has no interval, so its ends are null
    example = Path(__file__).resolve().parents[2] / "examples" / "mtbench_gpt4_vs_vicuna.jsonl"
    args = ["rank", str(example), "-f", "json", "--order-effect", "--seed", "1"]
    bare = CliRunner().invoke(app, [*args, "--bootstrap", "0"])
    assert bare.exit_code == 0, bare.output
    doc = json.loads(bare.stdout)
    effect = doc["order_effect"]
    assert effect["low"] is effect["high"] is None
    assert effect["first_slot_win_probability"]["low"] is None
    assert all(row["low"] is None and row["high"] is None for row in doc["systems"])
    with_rounds = json.loads(CliRunner().invoke(app, [*args, "--bootstrap", "20"]).stdout)
    assert effect["value"] == pytest.approx(with_rounds["order_effect"]["value"], abs=1e-12)
    assert with_rounds["order_effect"]["low"] < effect["value"] < with_rounds["order_effect"]["high"]
