"""A pair's confidence (core.confidence) against a scalar re-implementation written from the rules, per record."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from swapjudge.core.confidence import (
    CONSISTENCY,
    FLIP,
    HALF_TIE,
    INCOMPLETE,
    MEASURES,
    NO_PROBABILITY,
    NO_VERDICT,
    ORDER_AVERAGED,
    SINGLE_ORDER,
    VERDICT_TIE,
    VERDICT_X,
    VERDICT_Y,
    records_confidence,
)
from swapjudge.reading.records import read_records


def _rec(item, first, second, verdict, pf=None, ps=None, judge="j"):
    row = {"judge": judge, "item": item, "first": first, "second": second, "verdict": verdict}
    if pf is not None:
        row["p_first"], row["p_second"] = pf, ps
    return row


def _expected(calls):
    """The rules by hand for one pair's calls (a list of record dicts for x = 'a', y = 'b')."""
    by_first = {c["first"]: c for c in calls}
    xf, yf = by_first.get("a"), by_first.get("b")

    def prob(call, verdict):  # the call's probability of a positional verdict, slots renormalised
        pf, ps = call.get("p_first"), call.get("p_second")
        if pf is None or ps is None:
            return None
        if verdict == "tie":
            return min(max(1 - pf - ps, 0.0), 1.0)
        share = pf / (pf + ps) if pf + ps > 0 else 0.5
        return share if verdict == "first" else 1 - share

    def winner(call):  # the identity a call named, or "tie"
        v = call["verdict"]
        return "tie" if v == "tie" else (call["first"] if v == "first" else call["second"])

    if xf is None or yf is None:
        call = xf or yf
        if call["verdict"] is None:
            return NO_VERDICT, math.nan, "incomplete"
        p = prob(call, call["verdict"])
        if p is None:
            return NO_VERDICT, math.nan, "no_p"
        return {"a": VERDICT_X, "b": VERDICT_Y, "tie": VERDICT_TIE}[winner(call)], p, "single"
    if xf["verdict"] is None or yf["verdict"] is None:
        return NO_VERDICT, math.nan, "incomplete"
    wx, wy = winner(xf), winner(yf)
    if wx != wy:
        return NO_VERDICT, math.nan, "split"
    pos = {"a": ("first", "second"), "b": ("second", "first"), "tie": ("tie", "tie")}[wx]
    px, py = prob(xf, pos[0]), prob(yf, pos[1])
    code = {"a": VERDICT_X, "b": VERDICT_Y, "tie": VERDICT_TIE}[wx]
    if px is None or py is None:
        return code, 1.0, "consistency"
    return code, (px + py) / 2, "averaged"


def test_rules_case_by_case():
    rows = [
        # item 1: consistent a win, probabilities: (0.8/(0.8+0.1) + 0.7/(0.2+0.7)) / 2
        _rec(1, "a", "b", "first", 0.8, 0.1), _rec(1, "b", "a", "second", 0.2, 0.7),
        # item 2: a flip toward slot 1 with confident probabilities: never settled
        _rec(2, "a", "b", "first", 0.99, 0.01), _rec(2, "b", "a", "first", 0.99, 0.01),
        # item 3: half-tie
        _rec(3, "a", "b", "tie", 0.3, 0.3), _rec(3, "b", "a", "first", 0.9, 0.1),
        # item 4: consistent b win without probabilities
        _rec(4, "a", "b", "second"), _rec(4, "b", "a", "first"),
        # item 5: consistent tie with probabilities: mean tie mass (0.5 + 0.3) / 2
        _rec(5, "a", "b", "tie", 0.2, 0.3), _rec(5, "b", "a", "tie", 0.4, 0.3),
        # item 6: one call unparsed
        _rec(6, "a", "b", None), _rec(6, "b", "a", "first", 0.6, 0.4),
    ]
    pairs, conf = records_confidence(read_records(rows).frame)
    by_item = {str(i): k for k, i in enumerate(pairs.frame.get_column("item").to_list())}
    c = conf.confidence
    assert c[by_item["1"]] == pytest.approx((0.8 / 0.9 + 0.7 / 0.9) / 2)
    assert conf.verdict[by_item["1"]] == VERDICT_X and conf.measure[by_item["1"]] == ORDER_AVERAGED
    assert math.isnan(c[by_item["2"]]) and conf.reason[by_item["2"]] == FLIP
    assert math.isnan(c[by_item["3"]]) and conf.reason[by_item["3"]] == HALF_TIE
    assert c[by_item["4"]] == 1.0 and conf.verdict[by_item["4"]] == VERDICT_Y
    assert conf.measure[by_item["4"]] == CONSISTENCY
    assert c[by_item["5"]] == pytest.approx(0.4) and conf.verdict[by_item["5"]] == VERDICT_TIE
    assert math.isnan(c[by_item["6"]]) and conf.reason[by_item["6"]] == INCOMPLETE
    assert conf.measure_name == "order_averaged_probability + consistency"
    # a threshold above item 1's confidence leaves only the consistency-settled pair
    assert conf.settled(0.9).tolist() == [i == by_item["4"] for i in range(len(conf))]
    assert conf.settled(0.0).sum() == 3
    found = conf.to_dict()
    assert found["settleable"] == 3 and found["no_swap_seen"] == 0
    assert found["never_settled"] == {"flip": 1, "half_tie": 1, "incomplete": 1,
                                      "single_order_without_probability": 0}


def test_consistency_only_judge_names_its_measure():
    rows = [_rec(1, "a", "b", "first"), _rec(1, "b", "a", "second"),
            _rec(2, "a", "b", "first"), _rec(2, "b", "a", "first")]
    _, conf = records_confidence(read_records(rows).frame)
    assert conf.measure_name == MEASURES[CONSISTENCY]
    assert np.array_equal(conf.settled(1.0), [True, False])


def test_single_order_with_probabilities():
    # every pair judged once (single-order data): the confidence is that call's probability of its verdict
    rows = [_rec(1, "a", "b", "second", 0.3, 0.6), _rec(2, "b", "a", "first", 0.7, 0.2),
            _rec(3, "b", "a", "tie", 0.1, 0.2), _rec(4, "a", "b", "first")]
    records = read_records(rows)
    assert records.single_order
    _, conf = records_confidence(records.frame)
    assert not conf.swap_seen.any()
    assert conf.confidence[:3] == pytest.approx([0.6 / 0.9, 0.7 / 0.9, 0.7])
    assert conf.verdict.tolist() == [VERDICT_Y, VERDICT_Y, VERDICT_TIE, NO_VERDICT]
    assert conf.reason[3] == NO_PROBABILITY and conf.measure[0] == SINGLE_ORDER
    assert conf.measure_name == "single_order_probability"
    assert conf.to_dict()["no_swap_seen"] == 4


def test_against_scalar_rules_on_random_records():
    rng = random.Random(7)
    rows, expected = [], {}
    for item in range(400):
        calls = []
        orders = rng.choice([("ab", "ba"), ("ab", "ba"), ("ab", "ba"), ("ab",), ("ba",)])
        with_p = rng.random() < 0.7
        for order in orders:
            first, second = order[0], order[1]
            verdict = rng.choice(["first", "second", "tie", "first", "second", None])
            pf = ps = None
            if with_p:
                pf = rng.random() * 0.9
                ps = rng.random() * (1 - pf)
            calls.append(_rec(item, first, second, verdict, pf, ps))
        rows.extend(calls)
        expected[str(item)] = _expected(calls)
    records = read_records(rows, allow_unpaired=True)
    pairs, conf = records_confidence(records.frame)
    items = [str(i) for i in pairs.frame.get_column("item").to_list()]
    assert len(items) == 400
    kinds = set()
    for k, item in enumerate(items):
        code, value, kind = expected[item]
        kinds.add(kind)
        assert conf.verdict[k] == code, item
        if math.isnan(value):
            assert math.isnan(conf.confidence[k]), item
        else:
            assert conf.confidence[k] == pytest.approx(value, abs=1e-9), item
    assert kinds == {"incomplete", "no_p", "single", "split", "consistency", "averaged"}
