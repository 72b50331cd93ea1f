"""`calibrate`: PPI++ against its definition, coverage and width by simulation with known truth, the records ->
per-item scores step, and the command on real files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from swapjudge.cli import app
from swapjudge.core.policy import Gate
from swapjudge.core.ppi import ppi_mean, tuned_lambda
from swapjudge.errors import InputError
from swapjudge.probes.calibrate import calibrate_records, item_score_frame
from swapjudge.reading.records import records_from_dicts

TIE_BAND = 0.25  # a person calls a tie when the two answers' quality gap is this small


def true_human_rate(mu: float) -> float:
    """E[score] of a person whose perceived gap is d + e, d ~ N(mu, 1), e ~ N(0, 1): win, tie (half), loss."""
    sd = np.sqrt(2.0)
    win = stats.norm.sf(TIE_BAND, loc=mu, scale=sd)
    tie = stats.norm.cdf(TIE_BAND, loc=mu, scale=sd) - stats.norm.cdf(-TIE_BAND, loc=mu, scale=sd)
    return float(win + 0.5 * tie)


def simulate_study(rng: np.random.Generator, n_items: int, mu: float, *, agreement: float, habit: float,
                   preference: float) -> tuple[np.ndarray, np.ndarray]:
    """People's scores and a judge's order-cancelled scores (half credit) for a against b on `n_items` items.

    The judge sees what people see through noise of its own (`agreement` scales that signal), favours the first
    slot by `habit` log-odds and system a by `preference`; each order's call is a logistic draw."""
    d = rng.normal(mu, 1.0, n_items)
    perceived = d + rng.normal(0.0, 1.0, n_items)
    human = np.where(perceived > TIE_BAND, 1.0, np.where(perceived < -TIE_BAND, 0.0, 0.5))
    signal = agreement * (perceived + rng.normal(0.0, 0.5, n_items)) + preference
    a_first = rng.random(n_items) < 1.0 / (1.0 + np.exp(-(signal + habit)))
    a_second = rng.random(n_items) < 1.0 / (1.0 + np.exp(-(signal - habit)))
    judge = np.where(a_first & a_second, 1.0, np.where(~a_first & ~a_second, 0.0, 0.5))
    return human, judge


def run_studies(studies: int, *, agreement: float, seed: int) -> tuple[float, float, float, float]:
    """Coverage of the corrected interval, mean width ratio (corrected / people only), mean lambda, and the
    share of labelled items where the judge's order-cancelled score equals the people's."""
    rng = np.random.default_rng(seed)
    covered, ratios, lams, agree = 0, [], [], []
    for s in range(studies):
        n_items = int(rng.integers(1000, 5001))
        n_human = int(rng.integers(100, 201))
        mu = float(rng.uniform(-0.5, 0.5))
        habit = (0.5, 1.5)[s % 2]
        preference = (0.6, -0.6)[(s // 2) % 2]
        human, judge = simulate_study(rng, n_items, mu, agreement=agreement, habit=habit, preference=preference)
        labelled = rng.choice(n_items, n_human, replace=False)
        mask = np.zeros(n_items, dtype=bool)
        mask[labelled] = True
        result = ppi_mean(human[mask], judge[mask], judge[~mask])
        truth = true_human_rate(mu)
        covered += result.corrected.low <= truth <= result.corrected.high
        ratios.append(result.width_ratio)
        lams.append(result.lam)
        agree.append(float(np.mean(human[mask] == judge[mask])))
    return covered / studies, float(np.mean(ratios)), float(np.mean(lams)), float(np.mean(agree))


def test_coverage_and_width_with_a_biased_judge_that_tracks_people() -> None:
    # 600 studies: judges with a first-slot habit (0.5 or 1.5 log-odds) and a preference for a or b (±0.6)
    coverage, ratio, lam, agree = run_studies(600, agreement=3.0, seed=11)
    assert agree > 0.5  # the judge agrees with people on most pairs
    assert 0.93 <= coverage <= 0.97, coverage
    assert ratio <= 0.85, ratio  # at least 15% narrower than people alone
    assert lam > 0.3


def test_coverage_when_the_judge_is_unrelated_to_people() -> None:
    coverage, ratio, lam, _ = run_studies(600, agreement=0.0, seed=13)
    assert 0.93 <= coverage <= 0.97, coverage
    assert lam < 0.05  # lambda ~ 0: nothing to gain ...
    assert 0.97 <= ratio <= 1.01  # ... and the interval is the people's own


def test_the_judge_alone_is_biased_and_its_interval_misses() -> None:
    rng = np.random.default_rng(3)
    human, judge = simulate_study(rng, 5000, 0.0, agreement=3.0, habit=1.0, preference=0.6)
    result = ppi_mean(human[:150], judge[:150], judge[150:])
    truth = true_human_rate(0.0)
    assert not result.judge_only.low <= truth <= result.judge_only.high
    assert result.corrected.low <= truth <= result.corrected.high
    assert result.rectifier.high < 0  # the judge over-scores a: person - judge is negative


def test_estimator_matches_its_definition() -> None:
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 120).astype(float)
    fl = np.clip(y + rng.normal(0, 0.4, 120), 0, 1)
    fu = rng.random(2000)
    # lambda = cov(y, f) / ((1 + n/N) var(f over all items)), as PPI++ defines it for a mean
    expected_lam = np.cov(y, fl)[0, 1] / ((1 + 120 / 2000) * np.var(np.concatenate([fl, fu]), ddof=1))
    assert tuned_lambda(y, fl, fu) == pytest.approx(min(1.0, expected_lam))
    r = ppi_mean(y, fl, fu, lam=1.0, clip=False)
    assert r.corrected.value == pytest.approx(y.mean() - fl.mean() + fu.mean())
    se = np.sqrt(np.var(y - fl, ddof=1) / 120 + np.var(fu, ddof=1) / 2000)
    assert r.corrected.high - r.corrected.value == pytest.approx(stats.norm.ppf(0.975) * se)
    zero = ppi_mean(y, fl, fu, lam=0.0, clip=False)
    assert zero.corrected.value == pytest.approx(zero.human_only.value)
    assert zero.corrected.high == pytest.approx(zero.human_only.high)


def _records(judge: str, rows: list[tuple[str, str, str, str | None]]) -> list[dict[str, Any]]:
    return [{"judge": judge, "item": i, "first": f, "second": s, "verdict": v} for i, f, s, v in rows]


def test_item_scores_order_cancelled_and_single_order() -> None:
    both = records_from_dicts(_records("j", [
        ("1", "a", "b", "first"), ("1", "b", "a", "second"),  # consistent a
        ("2", "a", "b", "first"), ("2", "b", "a", "first"),  # flip: split
        ("3", "a", "b", "tie"), ("3", "b", "a", "first"),  # half-tie: split
        ("4", "a", "b", "second"), ("4", "b", "a", "first"),  # consistent b
    ])).frame
    scores = dict(item_score_frame(both, "a", "b", "half_credit", source="x").select("item", "score").iter_rows())
    assert scores == {"1": 1.0, "2": 0.5, "3": 0.5, "4": 0.0}
    no_credit = item_score_frame(both, "a", "b", "no_credit", source="x")
    assert no_credit.get_column("score").to_list() == [1.0, 0.0, 0.0, 0.0]
    single = records_from_dicts(_records("p", [("1", "b", "a", "second"), ("2", "a", "b", "tie")])).frame
    s = dict(item_score_frame(single, "a", "b", "half_credit", source="x").select("item", "score").iter_rows())
    assert s == {"1": 1.0, "2": 0.5}
    with pytest.raises(InputError, match="half_credit or no_credit"):
        item_score_frame(both, "a", "b", "exclude", source="x")


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _study_files(tmp_path: Path, *, consistent: bool) -> tuple[Path, Path, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(8)
    human, judge = simulate_study(rng, 1200, 0.2, agreement=3.0, habit=0.3 if consistent else 3.0,
                                  preference=0.4)
    verdict_pairs = {1.0: ("first", "second"), 0.0: ("second", "first"), 0.5: ("first", "first")}
    rows = []
    for i, score in enumerate(judge):
        v_ab, v_ba = verdict_pairs[float(score)]
        rows += [{"judge": "j", "item": f"q{i}", "first": "a", "second": "b", "verdict": v_ab},
                 {"judge": "j", "item": f"q{i}", "first": "b", "second": "a", "verdict": v_ba}]
    people = [{"judge": "reviewer", "item": f"q{i}", "first": "b", "second": "a",
               "verdict": {1.0: "second", 0.0: "first", 0.5: "tie"}[float(human[i])]} for i in range(150)]
    return (_write(tmp_path / "judge.jsonl", rows), _write(tmp_path / "people.jsonl", people), human, judge)


def test_calibrate_command_json(tmp_path: Path) -> None:
    judge_file, people_file, human, judge = _study_files(tmp_path, consistent=True)
    result = CliRunner().invoke(app, ["calibrate", str(judge_file), "--human", str(people_file), "--a", "a",
                                      "--b", "b", "--format", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    expected = ppi_mean(human[:150], judge[:150], judge[150:])
    assert out["corrected"]["value"] == pytest.approx(expected.corrected.value)
    assert out["corrected"]["low"] == pytest.approx(expected.corrected.low)
    assert out["human_only"]["value"] == pytest.approx(human[:150].mean())
    assert out["judge_only"]["value"] == pytest.approx(judge.mean())
    assert out["lambda"] == pytest.approx(expected.lam)
    assert out["n_human"] == 150 and out["n_judge"] == 1200
    assert out["rectifier"]["value"] == pytest.approx((human[:150] - judge[:150]).mean())
    assert out["gate"]["passed"] is True and out["human_single_order"] is True
    assert "unbiased" in out["valid"]


@pytest.mark.parametrize("consistent", [True, False], ids=["gate passed", "gate failed"])
def test_calibrate_streams_the_judge_records_with_the_same_figures(tmp_path: Path, consistent: bool) -> None:
    """The streaming engine: the gate from the counts, the compared pair's calls read back from the file; the
    in-memory read's JSON document, from JSON Lines and Parquet, under both scoring policies."""
    from conftest import write_parquet

    judge_file, people_file, _, _ = _study_files(tmp_path, consistent=consistent)
    rows = [json.loads(line) for line in judge_file.read_text().splitlines()]
    # another judge and another pair beside the compared one: neither may leak into the correction
    rows += [{**r, "judge": "other", "verdict": "first"} for r in rows[:400]]
    rows += [{**r, "item": r["item"] + "-c", "second": "c" if r["second"] == "b" else r["second"],
              "first": "c" if r["first"] == "b" else r["first"]} for r in rows[:200]]
    files = [_write(tmp_path / "judges.jsonl", rows), write_parquet(tmp_path / "judges.parquet", rows)]
    for path in files:
        for policy in ("half_credit", "no_credit"):
            documents = {}
            for engine in ("memory", "streaming"):
                result = CliRunner().invoke(app, ["calibrate", str(path), "--human", str(people_file), "--a", "a",
                                                  "--b", "b", "--judge", "j", "--tie-policy", policy, "--format",
                                                  "json", "--engine", engine])
                assert result.exit_code == 0, result.output
                documents[engine] = json.loads(result.output)
            assert documents["streaming"] == documents["memory"], (path.suffix, policy)
            assert documents["memory"]["n_judge"] == 1200 and documents["memory"]["gate"]["passed"] is consistent
    several = CliRunner().invoke(app, ["calibrate", str(files[1]), "--human", str(people_file), "--a", "a", "--b",
                                       "b", "--engine", "streaming"])
    assert several.exit_code == 2 and "records hold 2 judges" in several.output


def test_calibrate_withholds_the_judge_only_rate_below_the_gate(tmp_path: Path) -> None:
    judge_file, people_file, _, _ = _study_files(tmp_path, consistent=False)
    result = CliRunner().invoke(app, ["calibrate", str(judge_file), "--human", str(people_file), "--a", "a",
                                      "--b", "b", "--format", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["gate"]["passed"] is False
    assert out["judge_only"]["value"] is None and out["judge_only"]["withheld"] is True
    assert out["corrected"]["value"] is not None
    text = CliRunner().invoke(app, ["calibrate", str(judge_file), "--human", str(people_file), "--a", "a",
                                    "--b", "b"])
    assert "judge alone: withheld" in text.output and "unbiased" in text.output


def test_calibrate_bad_input_is_one_line(tmp_path: Path) -> None:
    judge_file, _, _, _ = _study_files(tmp_path, consistent=True)
    other = _write(tmp_path / "other.jsonl", [{"item": "zz", "first": "a", "second": "b", "verdict": "first"}])
    result = CliRunner().invoke(app, ["calibrate", str(judge_file), "--human", str(other), "--a", "a",
                                      "--b", "b"])
    assert result.exit_code == 2
    assert "none of the 1 labelled items" in result.output and "Traceback" not in result.output
    missing = CliRunner().invoke(app, ["calibrate", str(judge_file), "--human", str(other), "--a", "a",
                                       "--b", "c"])
    assert missing.exit_code == 2
    gate = Gate(0.7, True, None)
    with pytest.raises(InputError, match="no usable verdict"):
        calibrate_records(records_from_dicts(_records("j", [("1", "a", "b", "first")])).frame,
                          records_from_dicts(_records("p", [("1", "a", "b", "first")])).frame, "a", "c", gate=gate)


def test_report_has_a_calibration_section(tmp_path: Path) -> None:
    judge_file, people_file, human, judge = _study_files(tmp_path, consistent=True)
    md = tmp_path / "report.md"
    result = CliRunner().invoke(app, ["report", str(judge_file), "--markdown", str(md), "--human", str(people_file),
                                      "--a", "a", "--b", "b"])
    assert result.exit_code == 0, result.output
    text = md.read_text()
    expected = ppi_mean(human[:150], judge[:150], judge[150:])
    assert "Corrected with people's labels" in text
    assert f"{expected.corrected.value:.3f}" in text and "unbiased" in text


def _pooled_mtbench(judge: str) -> Any:
    """Shi et al.'s MT-Bench verdicts of one judge as items (question x candidate) of candidate vs vicuna."""
    from conftest import shi2024_records

    rows = []
    for r in shi2024_records("MTBench", judge):
        cand = r["second"] if r["first"] == "vicuna-13b-v1.3" else r["first"]
        rows.append({**r, "item": f"{r['item']}|{cand}", "first": "candidate" if r["first"] == cand else "vicuna",
                     "second": "candidate" if r["second"] == cand else "vicuna"})
    return item_score_frame(records_from_dicts(rows, allow_unpaired=True).frame, "candidate", "vicuna", "half_credit",
                            source=judge)


def test_real_judges_corrected_toward_a_reference_rater() -> None:
    # Real verdicts, no human labels: gpt-4-0613 stands in for the people on 150 random items, gpt-3.5-turbo-1106
    # judges all 2,400 (question x candidate vs vicuna); the target, gpt-4's win rate on every item, is known.
    reference, judge = _pooled_mtbench("gpt-4-0613"), _pooled_mtbench("gpt-3.5-turbo-1106")
    both = reference.join(judge, on="item", suffix="_judge")
    truth = float(both.get_column("score").mean())
    y, f = both.get_column("score").to_numpy(), both.get_column("score_judge").to_numpy()
    rng = np.random.default_rng(2024)
    covered, ratios = 0, []
    for _ in range(300):
        labelled = np.zeros(both.height, dtype=bool)
        labelled[rng.choice(both.height, 150, replace=False)] = True
        result = ppi_mean(y[labelled], f[labelled], f[~labelled])
        covered += result.corrected.low <= truth <= result.corrected.high
        ratios.append(result.width_ratio)
    assert covered / 300 >= 0.92
    assert 0.8 < float(np.mean(ratios)) < 0.92  # the judge correlates about 0.5 with gpt-4: about 14% narrower
