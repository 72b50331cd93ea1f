import csv
import json
from collections import defaultdict
from itertools import combinations

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from conftest import SHI_VERDICTS, pair, shared_data, write_jsonl
from swapjudge.cli import app
from swapjudge.probes.repeat import fleiss_kappa, repeat_stability
from swapjudge.reading.records import records_from_dicts

runner = CliRunner()


def repetition_rows():
    """The Shi et al. repetition sample as records; the judge name carries the benchmark (the same model judged
    both benchmarks)."""
    with shared_data("shi2024", "repetition_sample_verdicts_both_orders.csv").open(newline="") as f:
        return [{"judge": f"{r['benchmark']}/{r['judge']}", "round": int(r["repetition"]), "item": r["question_id"],
                 "first": r["model_first"], "second": r["model_second"], "verdict": SHI_VERDICTS[r["verdict"]]}
                for r in csv.DictReader(f)]


@pytest.fixture(scope="module")
def repetition():
    return records_from_dicts(repetition_rows()).frame


def direct_count(judge):
    """Straight from the CSV: per call (question, model first, model second) the verdicts of the three runs."""
    bench, name = judge.split("/")
    runs = defaultdict(dict)
    with shared_data("shi2024", "repetition_sample_verdicts_both_orders.csv").open(newline="") as f:
        for r in csv.DictReader(f):
            if r["benchmark"] == bench and r["judge"] == name:
                runs[(r["question_id"], r["model_first"], r["model_second"])][r["repetition"]] = r["verdict"]
    complete = [v for v in runs.values() if len(v) == 3 and all(v.values())]
    unanimous = sum(len(set(v.values())) == 1 for v in complete)
    agree = [np.mean([a == b for a, b in combinations(v.values(), 2)]) for v in complete]
    return len(runs), len(complete), unanimous, float(np.mean(agree))


@pytest.mark.parametrize("judge", ["MTBench/gpt-4-0613", "MTBench/gemini-pro", "MTBench/gpt-3.5-turbo-0125",
                                   "DevBench/claude-3-haiku-20240307"])
def test_repeat_stability_on_the_shi_repetition_sample_matches_a_direct_count(repetition, judge):
    r = repeat_stability(repetition.filter(pl.col("judge") == judge), judge=judge)
    calls, complete, unanimous, agreement = direct_count(judge)
    assert (r.calls, r.calls_complete, r.unanimous_calls) == (calls, complete, unanimous)
    assert r.pairwise_agreement.value == pytest.approx(agreement)
    assert r.unanimous.low <= r.unanimous.value <= r.unanimous.high
    assert r.rounds == (1, 2, 3) and len(r.per_round) == 3


def test_repeat_figures_for_two_judges(repetition):
    # the values the report quotes (seeded bootstrap, so the intervals are reproducible)
    gpt4 = repeat_stability(repetition.filter(pl.col("judge") == "MTBench/gpt-4-0613"))
    assert (gpt4.calls_complete, gpt4.unanimous_calls) == (192, 174)
    assert gpt4.fleiss_kappa.value == pytest.approx(0.890, abs=1e-3)
    # claude-3-haiku on DevBench nearly always names one slot: high raw agreement, kappa near zero
    haiku = repeat_stability(repetition.filter(pl.col("judge") == "DevBench/claude-3-haiku-20240307"))
    assert haiku.pairwise_agreement.value > 0.75 and abs(haiku.fleiss_kappa.value) < 0.1
    assert haiku.per_round[0].consistency.rate < 0.25


def test_fleiss_kappa_on_the_textbook_example():
    # Fleiss (1971) as tabulated on Wikipedia: 10 subjects, 14 raters, 5 categories; kappa = 0.210
    table = np.array([[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                      [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]])
    assert fleiss_kappa(table) == pytest.approx(0.20993, abs=1e-4)
    assert fleiss_kappa(np.array([[3, 0, 0], [3, 0, 0]])) is None  # one category only: chance agreement is 1


def test_outcome_stability_and_per_round_consistency_by_hand():
    rows = []
    for rnd, (p1, p2) in enumerate([(("first", "second"), ("first", "first")),
                                     (("first", "second"), ("second", "first")),
                                     (("first", "second"), ("first", "first"))]):
        rows += [dict(r, round=rnd) for r in pair(1, *p1)]
        rows += [dict(r, round=rnd) for r in pair(2, *p2)]
    r = repeat_stability(records_from_dicts(rows).frame)
    assert [x.consistency.rate for x in r.per_round] == [0.5, 1.0, 0.5]
    # pair 1 is the same consistent win every round; pair 2 is a flip, a B win, a flip
    assert (r.outcome_stable.k, r.outcome_stable.n) == (1, 2)
    # 4 calls: three unanimous; pair 2's A-first call said first, second, first
    assert (r.calls, r.unanimous_calls) == (4, 3)


def test_cli_repeat(tmp_path):
    rows = [r for r in repetition_rows() if r["judge"].startswith("MTBench/gpt-4-")]
    path = write_jsonl(tmp_path / "rep.jsonl", rows)
    out = runner.invoke(app, ["probe", "repeat", str(path), "--format", "json"])
    assert out.exit_code == 0, out.output
    judges = {d["judge"]: d for d in json.loads(out.output)["judges"]}
    assert judges["MTBench/gpt-4-0613"]["unanimous"]["calls"] == 174
    single = write_jsonl(tmp_path / "one.jsonl", pair(1, "first", "second"))
    out = runner.invoke(app, ["probe", "repeat", str(single)])
    assert out.exit_code == 2 and "one round only" in out.output
