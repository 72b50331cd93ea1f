"""arena-hard-auto's own `show_result` score, reproduced from imported records and checked against an independent
re-computation from the raw judgment files: battles built from the two games as show_result builds them, fitted
by scikit-learn's LogisticRegression configured as arena-hard configures it, scored against the baseline."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from swapjudge.core.analysis import analyze_records
from swapjudge.errors import InputError
from swapjudge.importers import ImportOptions, import_files
from swapjudge.ranking.arena_hard import arena_hard_scores
from swapjudge.reading.records import records_from_dicts

FIXTURE = Path(__file__).parents[1] / "fixtures" / "importers" / "arena_hard" / "gpt-4.1" / "model-x.jsonl"

# show_result's label table: the model's score in the game's A/B frame (game 2 puts the model in A), with the
# reversed forms v2 accepts; anything else is no battle
LABELS = {"A>B": ("A", 1), "A>>B": ("A", 3), "A=B": ("tie", 1), "B>A": ("B", 1), "B>>A": ("B", 3),
          "A<B": ("B", 1), "A<<B": ("B", 3), "B=A": ("tie", 1), "B<A": ("A", 1), "B<<A": ("A", 3)}


def reference_battles(path: Path, baseline_default: str | None = None,
                      complete_only: bool = False) -> pd.DataFrame:
    """Battles (model_a, model_b, winner) from raw arena-hard judgment rows, each game on its own."""
    rows = []
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        games = row.get("games") or []
        base = row.get("baseline", baseline_default)
        if base is None or len(games) > 2:
            continue
        labels = [g.get("score") if isinstance(g, dict) else None for g in games]
        if complete_only and (len(games) < 2 or any(lab not in LABELS for lab in labels)):
            continue
        for number, label in enumerate(labels):
            if label not in LABELS:
                continue
            side, weight = LABELS[label]
            # game 1: baseline in A, model in B; game 2: swapped
            a_is_base = number == 0
            winner = "tie" if side == "tie" else ("model_a" if (side == "A") == a_is_base else "model_b")
            rows += [{"model_a": base, "model_b": row["model"], "winner": winner}] * weight
    return pd.DataFrame(rows)


def reference_scores(battles: pd.DataFrame, baseline: str, tol: float = 1e-8,
                     exact: bool = False) -> dict[str, float]:
    """show_result's fit: battles duplicated, a tie one A win in the first copy, logistic regression without
    intercept or penalty on +-log(10) indicator columns, Elo = 400 coef + 1000, score = predicted win rate
    against the baseline in percent. arena-hard runs lbfgs at tol 1e-8 on every column, which stops short of
    the maximum (by some 1e-5 points here); `exact` drops the baseline's column (the same maximum, now unique:
    the free common shift is what made the Hessian singular) and solves by Newton's method to rounding."""
    models = pd.Series(np.arange(len(pd.concat([battles.model_a, battles.model_b]).unique())),
                       index=pd.concat([battles.model_a, battles.model_b]).unique())
    df = pd.concat([battles, battles], ignore_index=True)
    n, p = len(df), len(models)
    x = np.zeros((n, p))
    x[np.arange(n), models[df.model_a].to_numpy()] = math.log(10)
    x[np.arange(n), models[df.model_b].to_numpy()] = -math.log(10)
    y = np.zeros(n)
    y[(df.winner == "model_a").to_numpy()] = 1.0
    tie = (df.winner == "tie").to_numpy().copy()
    tie[len(tie) // 2:] = False
    y[tie] = 1.0
    keep = np.arange(p) != models[baseline] if exact else np.ones(p, dtype=bool)
    lr = LogisticRegression(fit_intercept=False, C=np.inf, tol=tol,  # C=inf: penalty=None, renamed
                            solver="newton-cholesky" if exact else "lbfgs", max_iter=10_000)
    lr.fit(x[:, keep], y)
    coef = np.zeros(p)
    coef[keep] = lr.coef_[0]
    elo = 400 * coef + 1000
    base = elo[models[baseline]]
    return {m: 100 / (1 + 10 ** ((base - elo[models[m]]) / 400)) for m in models.index if m != baseline}


def imported(*paths: Path, baseline: str | None = None):
    res = import_files("arena-hard", list(paths), ImportOptions(baseline=baseline))
    return records_from_dicts(res.records, allow_unpaired=True)


def test_fixture_score_matches_logistic_regression_and_the_battle_mean() -> None:
    records = imported(FIXTURE)  # the v0.1 row (no baseline) is skipped by the importer, as by show_result v2
    ours = arena_hard_scores(records, "o3-mini")
    battles = reference_battles(FIXTURE)
    reference = reference_scores(battles, "o3-mini", tol=1e-14, exact=True)
    assert ours["model-x"].score == pytest.approx(reference["model-x"], abs=1e-9)
    # arena-hard's own setting (lbfgs, tol 1e-8) stops within its tolerance of the same figure
    assert ours["model-x"].score == pytest.approx(reference_scores(battles, "o3-mini")["model-x"], abs=1e-4)
    # against a single baseline the fit is the battles' mean score, exactly
    won = (battles.winner == "model_b").sum() + 0.5 * (battles.winner == "tie").sum()
    assert ours["model-x"].score == pytest.approx(100 * won / len(battles), abs=1e-12)
    # by hand: u1 A>>B (baseline x3), B>A (baseline); u2 A=B, A>B (model); u3 B>>A (baseline x3);
    # u4 A<B (baseline); u5 A>B (baseline); u7 A>B (model): 12 battles, model 2.5
    assert (ours["model-x"].battles, len(battles)) == (12, 12)
    assert ours["model-x"].score == pytest.approx(100 * 2.5 / 12, abs=1e-12)
    assert ours["model-x"].shown == 20.8


def write_judgments(folder: Path, rng: np.random.Generator, baseline: str, models: dict[str, float],
                    questions: int) -> list[Path]:
    """arena-hard v2 judgment files (one per model, two games a question) from a judge whose level
    probabilities depend on the model's strength and on the slot, with a few failed games."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for model, strength in models.items():
        lines = []
        for q in range(questions):
            games = []
            for game in range(2):
                model_in_a = game == 1
                logit = strength * (1 if model_in_a else -1) + 0.4  # the judge leans to slot A
                p_a = 1 / (1 + math.exp(-logit))
                u = rng.random()
                if u < 0.03:
                    games.append(None if rng.random() < 0.5 else {"score": None, "judgment": {"answer": "?"}})
                    continue
                tie = rng.random() < 0.15
                strong = rng.random() < 0.35
                if tie:
                    label = "A=B"
                elif rng.random() < p_a:
                    label = "A>>B" if strong else "A>B"
                else:
                    label = "B>>A" if strong else "B>A"
                games.append({"score": label, "judgment": {"answer": f"[[{label}]]"}, "prompt": []})
            lines.append(json.dumps({"uid": f"q{q}", "category": "hard_prompt", "judge": "gpt-4.1",
                                     "model": model, "baseline": baseline, "games": games}))
        path = folder / f"{model}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths


def test_many_models_against_one_baseline_match_logistic_regression(tmp_path: Path) -> None:
    rng = np.random.default_rng(26)
    models = {"m-strong": 0.9, "m-even": 0.0, "m-weak": -0.7}
    paths = write_judgments(tmp_path / "gpt-4.1", rng, "base", models, questions=300)
    records = imported(*paths)
    ours = arena_hard_scores(records, "base")
    battles = pd.concat([reference_battles(p) for p in paths], ignore_index=True)
    reference = reference_scores(battles, "base", tol=1e-14, exact=True)
    as_run = reference_scores(battles, "base")
    for model in models:
        assert ours[model].score == pytest.approx(reference[model], abs=1e-9)
        assert ours[model].score == pytest.approx(as_run[model], abs=1e-4)
    assert [s.model for s in ours.scores] == ["m-strong", "m-even", "m-weak"]
    # v2 keeps only questions whose two games are both usable
    v2 = arena_hard_scores(records, "base", complete_pairs_only=True)
    complete = pd.concat([reference_battles(p, complete_only=True) for p in paths], ignore_index=True)
    reference_v2 = reference_scores(complete, "base", tol=1e-14, exact=True)
    for model in models:
        assert v2[model].score == pytest.approx(reference_v2[model], abs=1e-9)
        assert v2[model].score != pytest.approx(ours[model].score, abs=1e-6)  # the failed games matter


def test_analyze_reports_the_same_figure_as_the_arena_hard_convention(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    paths = write_judgments(tmp_path / "gpt-4.1", rng, "base", {"cand": 0.5}, questions=200)
    records = imported(*paths)
    result = analyze_records(records, a="cand", b="base", min_consistency=0)[0].to_dict()
    convention = result["win_rate"]["arena_hard"]
    assert convention["value"] * 100 == pytest.approx(arena_hard_scores(records, "base")["cand"].score, abs=1e-9)
    assert "3 battles" in convention["convention"] and convention["independent"] == "battles"


def test_records_without_strength_or_baseline_are_one_line_errors() -> None:
    plain = records_from_dicts([{"item": 1, "first": "a", "second": "b", "verdict": "first"},
                                {"item": 1, "first": "b", "second": "a", "verdict": "first"}])
    with pytest.raises(InputError, match="no `strength`"):
        arena_hard_scores(plain, "a")
    with pytest.raises(InputError, match="baseline 'zzz' is not in the records"):
        arena_hard_scores(imported(FIXTURE), "zzz")


def test_battles_between_models_go_through_the_joint_fit() -> None:
    """Off arena-hard's star design (models also judged against each other) the scores come from the joint
    Bradley-Terry fit; still the logistic regression's maximum."""
    rng = np.random.default_rng(3)
    rows = []
    for q in range(150):
        for first, second in (("base", "m1"), ("m1", "base"), ("base", "m2"), ("m2", "base"), ("m1", "m2"),
                              ("m2", "m1")):
            verdict = str(rng.choice(["first", "second", "tie"], p=[0.45, 0.4, 0.15]))
            strength = None if verdict == "tie" else int(rng.choice([1, 2]))
            rows.append({"item": q, "first": first, "second": second, "verdict": verdict, "strength": strength})
    ours = arena_hard_scores(records_from_dicts(rows), "base")
    battles = pd.DataFrame([b for r in rows for b in [{"model_a": r["first"], "model_b": r["second"],
                            "winner": {"first": "model_a", "second": "model_b", "tie": "tie"}[r["verdict"]]}]
                            * (3 if r["strength"] == 2 else 1)])
    reference = reference_scores(battles, "base", tol=1e-14, exact=True)
    assert ours.converged
    for model in ("m1", "m2"):
        assert ours[model].score == pytest.approx(reference[model], abs=1e-9)
