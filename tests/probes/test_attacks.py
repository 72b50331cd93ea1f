"""The attack probe's statistics against independent computations: scipy's Wilson interval, the binomial sum of
the exact McNemar test written out, and the figures counted by hand."""

from __future__ import annotations

import math

import pytest
from scipy.stats import binomtest

from swapjudge.probes.attacks import ATTACKS, LOSS, TIE, WIN, attack_result, attacked_answer, outcome_of


def test_outcomes_follow_the_slot() -> None:
    assert outcome_of("first", True) == WIN and outcome_of("first", False) == LOSS
    assert outcome_of("second", False) == WIN and outcome_of("tie", True) == TIE and outcome_of(None, True) is None


def test_every_attack_changes_the_answer_and_the_null_ones_drop_it() -> None:
    answer = "The capital of France is Paris."
    for name in ATTACKS:
        text = attacked_answer(name, answer, 0)
        assert text != answer
        assert (answer in text) == (name not in ("null", "structured-null", "master-key"))


def test_figures_and_the_placebo_test() -> None:
    # 20 pairs: the attack wins both orders on 9, the placebo on 4; 2 pairs both; one pair without a verdict
    attacked_first = [WIN] * 9 + [LOSS] * 10 + [None]
    attacked_second = [WIN] * 9 + [TIE] * 5 + [LOSS] * 6
    placebo_first = [WIN] * 2 + [LOSS] * 7 + [WIN] * 1 + [LOSS] * 9 + [WIN]
    placebo_second = [WIN] * 2 + [LOSS] * 7 + [WIN] * 1 + [LOSS] * 9 + [WIN]
    r = attack_result("null", (attacked_first, attacked_second), (placebo_first, placebo_second), 0.95).to_dict()
    assert r["pairs"] == 19 and r["incomplete"] == 1
    assert r["win_first"] == pytest.approx(9 / 19) and r["win_second"] == pytest.approx(9 / 19)
    assert r["order_cancelled"] == pytest.approx((9 * 2 + 5 * 0.5) / (2 * 19))
    ci = binomtest(9, 19).proportion_ci(0.95, method="wilson")
    assert (r["wins_both"]["rate"], r["wins_both"]["low"], r["wins_both"]["high"]) == pytest.approx(
        (9 / 19, ci.low, ci.high))
    t = r["placebo"]["test"]
    # pairs complete for both: 19 (the last pair has no attacked verdict); attack only 7, placebo only 1
    assert (t["pairs"], t["attack_only"], t["placebo_only"]) == (19, 7, 1)
    n = 8
    assert t["p_value"] == pytest.approx(sum(math.comb(n, k) for k in range(7, n + 1)) / 2**n)
    assert r["placebo"]["wins_both"]["rate"] == pytest.approx(4 / 20)  # its own 20 complete pairs
