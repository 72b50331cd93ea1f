"""`swapjudge escalate` as a user runs it: real subprocesses on real judge data (Shi et al. 2024, MT-Bench) and on
simulated judges with probabilities; every figure recomputed here from the records by brute force."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from conftest import shared_data, write_jsonl

SRC = Path(__file__).resolve().parents[2] / "src"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
CHEAP, STRONG, THIRD = "gpt-3.5-turbo-1106", "gpt-4-0613", "gemini-pro"
SHI = {"A": "first", "B": "second", "C": "tie", "": None}


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "swapjudge", *args], capture_output=True, text=True, cwd=cwd,
                          env=ENV)


def _winner(call):
    v = call["verdict"]
    return None if v is None else "tie" if v == "tie" else call["first"] if v == "first" else call["second"]


def _pair_calls(rows):
    """(judge, item, x, y) -> {first identity: call}."""
    out = defaultdict(dict)
    for r in rows:
        x, y = sorted((r["first"], r["second"]))
        out[(r["judge"], str(r["item"]), x, y)][r["first"]] = r
    return out


def _consistent(calls):
    """The identity (or tie) both calls named, None for a flip, a half-tie or a missing verdict."""
    if len(calls) != 2:
        return None
    a, b = (_winner(c) for c in calls.values())
    return a if a is not None and a == b else None


@pytest.fixture(scope="module")
def mtbench(tmp_path_factory):
    """The cheap and the strong judge's MT-Bench calls, each pair labelled with a third judge's (gemini-pro's)
    consistent verdict where it has one: a label source independent of the two judges (not people)."""
    rows = []
    with shared_data("shi2024", "verdicts_both_orders.csv").open(newline="") as f:
        for r in csv.DictReader(f):
            if r["benchmark"] == "MTBench":
                rows.append({"judge": r["judge"], "item": r["question_id"], "first": r["model_first"],
                             "second": r["model_second"], "verdict": SHI[r["verdict"]]})
    third = {k[1:]: _consistent(c) for k, c in _pair_calls(rows).items() if k[0] == THIRD}
    records = []
    for r in rows:
        if r["judge"] == THIRD:
            continue
        x, y = sorted((r["first"], r["second"]))
        records.append({**r, "label": third.get((r["item"], x, y))})
    path = tmp_path_factory.mktemp("mtbench") / "mt.jsonl"
    return write_jsonl(path, records), records


def test_real_mtbench_cascade_through_the_cli(mtbench, tmp_path):
    path, records = mtbench
    done = cli("escalate", str(path), "--judge", CHEAP, "--judge", STRONG, "--alpha", "0.2", "--delta", "0.1",
               "--split", "0.5", "--seed", "3", "-o", str(tmp_path / "t.json"), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    saved = json.loads((tmp_path / "t.json").read_text())
    fitted = set(saved["fitted_items"])
    assert len(fitted) == 40  # half of the 80 questions, all labelled

    # by hand: without probabilities a judge settles its consistent pairs (threshold 1) or nothing
    pairs = _pair_calls(records)
    keys = sorted({k[1:] for k in pairs})
    label = {k[1:]: next(iter(c.values()))["label"] for k, c in pairs.items()}
    verdict = {j: {k[1:]: _consistent(c) for k, c in pairs.items() if k[0] == j} for j in (CHEAP, STRONG)}
    calib = [k for k in keys if k[0] in fitted and label[k] is not None]
    cheap = [k for k in calib if verdict[CHEAP][k] is not None]
    wrong = sum(verdict[CHEAP][k] != label[k] for k in cheap)
    tier0 = got["tiers"][0]
    assert tier0["judge"] == CHEAP and tier0["calibration"]["settled"] == len(cheap)
    assert tier0["calibration"]["disagreements"] == wrong
    assert tier0["calibration"]["independent"] == "items (effective sample)"  # 30 pairs share each question
    lams = [t["threshold"] for t in got["tiers"]]
    assert lams[0] in (1.0, None)

    # apply the thresholds to the test pairs by hand: coverage, realized agreement, unsettled
    test = [k for k in keys if k[0] not in fitted]
    settled, agree = 0, []
    for k in test:
        for j, lam in zip((CHEAP, STRONG), lams, strict=True):
            v = verdict[j].get(k)
            if lam is not None and v is not None:
                settled += 1
                if label[k] is not None:
                    agree.append(v == label[k])
                break
    assert got["coverage"] == pytest.approx(settled / len(test))
    assert got["unsettled"] == len(test) - settled
    assert got["agreement"]["realized"] == pytest.approx(np.mean(agree))
    assert got["agreement"]["settled_test_pairs"] == len(agree)
    assert got["agreement"]["test_pairs"] == sum(label[k] is not None for k in test)
    assert got["agreement"]["target"] == pytest.approx(0.8) and got["agreement"]["confidence"] == pytest.approx(0.9)
    assert got["agreement"]["independent"] == "items"
    for tier in got["tiers"]:
        assert set(tier) >= {"judge", "threshold", "settled", "agreement"}

    # the saved thresholds on the same records stripped of their labels: the same pairs settled
    bare = write_jsonl(tmp_path / "bare.jsonl", [{**r, "label": None} for r in records])
    again = cli("escalate", str(bare), "--judge", CHEAP, "--judge", STRONG, "--thresholds", str(tmp_path / "t.json"),
                "--format", "json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    applied = json.loads(again.stdout)
    every = sum(any(lam is not None and verdict[j].get(k) is not None
                    for j, lam in zip((CHEAP, STRONG), lams, strict=True)) for k in keys)
    assert applied["settled"] == every and applied["agreement"]["realized"] is None
    assert applied["alpha"] == 0.2  # the levels the thresholds were fitted at

    # another configuration of the cheap judge (its records now name a model) is refused in one line
    other = write_jsonl(tmp_path / "other.jsonl",
                        [{**r, "judge_model": "gpt-3.5-turbo-0125"} if r["judge"] == CHEAP else r for r in records])
    refused = cli("escalate", str(other), "--judge", CHEAP, "--judge", STRONG, "--thresholds",
                  str(tmp_path / "t.json"), cwd=tmp_path)
    assert refused.returncode == 2 and "another judge configuration" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr


def _sim_records(seed: int, n: int, *, single_order: bool = False):
    """Two judges with probabilities on n pairs (one pair per item), labels known; the cheap one reads the slot
    on a fifth of the pairs (both calls name slot 1, confidently)."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(0, 1, n)
    rows = []
    for judge, noise, scale, blind in (("cheap", 1.0, 2.0, 0.2), ("strong", 0.3, 3.0, 0.05)):
        seen = quality + rng.normal(0, noise, n)
        for i in range(n):
            label = "a" if quality[i] > 0 else "b"
            slot_read = rng.random() < blind
            for first, second, sign in (("a", "b", 1), ("b", "a", -1)):
                if single_order and first == "b":
                    continue
                p = 1 / (1 + math.exp(-(sign * scale * seen[i] + rng.normal(0, 0.3))))
                if slot_read:
                    p = float(rng.uniform(0.8, 0.99))
                rows.append({"judge": judge, "item": f"q{i}", "first": first, "second": second,
                             "verdict": "first" if p >= 0.5 else "second", "p_first": p, "p_second": 1 - p,
                             "label": label, "cost_usd": 0.001 if judge == "cheap" else 0.02,
                             "judge_model": judge + "-v1"})
    return rows


def _reference_confidence(calls):
    """The order-averaged probability of a consistent pair's verdict; None for a flip; one call's probability of
    its verdict when the pair was judged once."""
    if len(calls) == 1:
        call = next(iter(calls.values()))
        share = call["p_first"] / (call["p_first"] + call["p_second"])
        return _winner(call), share if call["verdict"] == "first" else 1 - share
    winner = _consistent(calls)
    if winner is None:
        return None, None
    probs = []
    for first, call in calls.items():
        share = call["p_first"] / (call["p_first"] + call["p_second"])
        probs.append(share if first == winner else 1 - share)
    return winner, sum(probs) / 2


def _reference_fixed_sequence(conf, agree, alpha, delta):
    def upper(k, n):
        return binomtest(k, n, alternative="less").proportion_ci(confidence_level=1 - delta, method="exact").high

    need = next(m for m in range(1, 10_000) if upper(0, m) <= alpha)
    chosen = None
    for lam in sorted(set(conf), reverse=True):
        settled = [a for c, a in zip(conf, agree, strict=True) if c >= lam]
        if len(settled) < need:
            continue
        if upper(sum(not a for a in settled), len(settled)) > alpha:
            break
        chosen = lam
    return chosen


@pytest.mark.parametrize("single_order", [False, True])
def test_simulated_cascade_thresholds_match_an_independent_fit(tmp_path, single_order):
    rows = _sim_records(4, 700, single_order=single_order)
    path = write_jsonl(tmp_path / "sim.jsonl", rows)
    done = cli("escalate", str(path), "--judge", "cheap", "--judge", "strong", "--alpha", "0.1", "--delta", "0.1",
               "--split", "0.6", "--seed", "2", "-o", str(tmp_path / "t.json"), "-f", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    fitted = set(json.loads((tmp_path / "t.json").read_text())["fitted_items"])
    assert len(fitted) == 420
    pairs = _pair_calls(rows)
    reaching = sorted({k[1:] for k in pairs if k[1] in fitted})
    label = {k[1:]: next(iter(c.values()))["label"] for k, c in pairs.items()}
    for t, judge in enumerate(("cheap", "strong")):
        scored = {k: _reference_confidence(pairs[(judge, *k)]) for k in reaching}
        usable = [k for k in reaching if scored[k][1] is not None]
        conf = [scored[k][1] for k in usable]
        agree = [scored[k][0] == label[k] for k in usable]
        lam = _reference_fixed_sequence(conf, agree, 0.1, 0.1)
        assert got["tiers"][t]["threshold"] == pytest.approx(lam) if lam is not None else \
            got["tiers"][t]["threshold"] is None
        assert got["tiers"][t]["calibration"]["reached"] == len(reaching)
        if lam is not None:
            reaching = [k for k in reaching if k not in set(usable) or scored[k][1] < lam]
    measure = "single_order_probability" if single_order else "order_averaged_probability"
    assert got["tiers"][0]["measure"] == measure
    assert got["tiers"][0]["no_swap_seen"] == (280 if single_order else 0)
    # cost: the cheap judge on every test pair, the strong one on those that reached it
    calls = 1 if single_order else 2
    assert got["tiers"][0]["cost_usd"] == pytest.approx(280 * calls * 0.001)
    assert got["tiers"][1]["cost_usd"] == pytest.approx(got["tiers"][1]["reached"] * calls * 0.02)
    assert got["cost"]["strongest_alone_usd"] == pytest.approx(280 * calls * 0.02)


def test_text_and_bad_input(tmp_path):
    rows = _sim_records(5, 200)
    path = write_jsonl(tmp_path / "sim.jsonl", rows)
    text = cli("escalate", str(path), "--judge", "cheap", "--judge", "strong", "--split", "0.5", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "coverage:" in text.stdout and "guaranteed by the calibration" in text.stdout
    assert "independent" in text.stdout
    unknown = cli("escalate", str(path), "--judge", "cheap", "--judge", "nobody", cwd=tmp_path)
    assert unknown.returncode == 2 and "no records of judge 'nobody'" in unknown.stderr
    assert len(unknown.stderr.strip().splitlines()) == 1, unknown.stderr
    # the library says the same in Python's terms
    from swapjudge.errors import ArgumentError, InputError
    from swapjudge.workflows.escalate import escalate

    with pytest.raises(InputError, match="no labelled pairs"):
        escalate([{**r, "label": None} for r in rows], judges=["cheap"])
    with pytest.raises(ArgumentError, match=r"^alpha must be a number strictly between 0 and 1"):
        escalate(rows, judges=["cheap"], alpha=1.5)
    with pytest.raises(ArgumentError, match="judges names a judge twice"):
        escalate(rows, judges=["cheap", "cheap"])
    with pytest.raises(ArgumentError, match=r"split 0\.001 of 200 labelled items"):
        escalate(rows, judges=["cheap"], split=0.001)


def test_labels_file_and_saved_thresholds_in_python(tmp_path):
    from swapjudge.errors import ArgumentError, InputError
    from swapjudge.workflows.escalate import escalate, thresholds_document

    rows = _sim_records(6, 300)
    labels = {r["item"]: r["label"] for r in rows}
    labels_path = write_jsonl(tmp_path / "labels.jsonl", [{"item": i, "label": v} for i, v in labels.items()])
    bare = [{**r, "label": None} for r in rows]
    own = escalate(rows, judges=["cheap", "strong"], split=0.5, seed=4)
    from_file = escalate(bare, judges=["cheap", "strong"], split=0.5, seed=4, labels=labels_path)
    assert from_file.to_dict() == own.to_dict()
    saved = thresholds_document(own)
    assert saved["fitted_items"] == sorted(own.fitted_items) and len(saved["fitted_items"]) == 150
    applied = escalate(bare, judges=["cheap", "strong"], thresholds=saved)
    assert [t.threshold for t in applied.tiers] == [t.threshold for t in own.tiers]
    assert applied.realized is None and applied.applied_to == "records"
    # labelled pairs outside the fitted items are a test of the saved thresholds: the same test as the split's
    tested = escalate(rows, judges=["cheap", "strong"], thresholds=saved)
    assert tested.realized.value == pytest.approx(own.realized.value)
    with pytest.raises(ArgumentError, match="give one"):
        escalate(rows, judges=["cheap", "strong"], thresholds=saved, split=0.5)
    with pytest.raises(InputError, match="in that order"):
        escalate(rows, judges=["strong", "cheap"], thresholds=saved)
    # thresholds fitted on probabilities do not apply to a judge that records none
    no_p = [{k: v for k, v in r.items() if k not in ("p_first", "p_second")} for r in rows]
    with pytest.raises(InputError, match="confidence measure"):
        escalate(no_p, judges=["cheap", "strong"], thresholds=saved)


def test_text_says_what_the_realized_interval_supports():
    import dataclasses

    from swapjudge.report.escalate import escalation_markdown, summary_lines
    from swapjudge.workflows.escalate import escalate

    result = escalate(_sim_records(7, 300), judges=["cheap", "strong"], alpha=0.1, split=0.5, seed=1)
    r = result.realized
    cases = {(0.95, 0.99): "its interval above the target 90.0%",
             (0.80, 0.88): "its interval below the target 90.0%: the guarantee did not hold on this test",
             (0.85, 0.95): "its interval includes the target 90.0%"}
    for (low, high), words in cases.items():
        shown = dataclasses.replace(result, realized=dataclasses.replace(r, low=low, high=high))
        line = next(x for x in summary_lines(shown) if x.startswith("realized agreement"))
        assert line.endswith(words), line
    unsplit = escalate(_sim_records(7, 300), judges=["cheap", "strong"], alpha=0.1)
    assert any("not measured (no labelled test pairs" in x for x in summary_lines(unsplit))
    assert "| cheap |" in escalation_markdown(result)
