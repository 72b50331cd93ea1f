import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from typer.testing import CliRunner

from conftest import pair, shi2024_records, write_jsonl
from swapjudge.cli import app
from swapjudge.core.records import records_from_dicts
from swapjudge.core.sidefiles import load_labels
from swapjudge.errors import InputError
from swapjudge.probes.agreement import agreement, cohen_kappa

runner = CliRunner()

# (item, verdict with A in slot 1, verdict with B in slot 1, label): an LLMBar-style labelled file to count by hand
SMALL = [
    (1, "first", "second", "A"),  # A both times: right in both orders
    (2, "first", "first", "A"),  # flip toward slot 1: right only when A sat first
    (3, "second", "first", "B"),  # B both times: right in both
    (4, "first", "second", "B"),  # A both times: consistently wrong
    (5, "second", "second", "B"),  # flip toward slot 2: right only when B sat second
    (6, "tie", "tie", "A"),  # consistent tie: wrong in both
    (7, "first", "second", "tie"),  # labelled tie: not in accuracy, in kappa
    (8, "first", "second", None),  # unlabelled
]


def small_rows(with_labels=True):
    rows = []
    for item, a_first, b_first, label in SMALL:
        extra = {"label": label} if with_labels and label else {}
        rows += pair(item, a_first, b_first, **extra)
    return rows


def test_accuracy_per_order_and_both_orders_match_a_hand_count():
    [r] = agreement(records_from_dicts(small_rows()).frame)
    acc = r.accuracy
    # labelled A or B: items 1-6. Better answer in slot 1 named: items 1, 2, 3. In slot 2: items 1, 3, 5.
    assert acc.pairs == 6
    assert (acc.right_first, acc.right_second, acc.right_both) == (3, 3, 2)
    # consistent labelled pairs: 1, 3, 4, 6, of which 1 and 3 are right
    assert acc.consistent_pairs == 4
    d = acc.to_dict()
    assert (d["better_first"], d["better_second"], d["both"], d["consistent"]) == (0.5, 0.5, 2 / 6, 0.5)
    assert r.labelled_pairs == 7  # items 1-7 (a tie label counts for kappa)
    assert r.consistency.consistent == 6 and r.consistency.pairs == 8


def test_kappa_equals_scikit_learn_on_the_same_vectors():
    [r] = agreement(records_from_dicts(small_rows()).frame)
    # written out by hand from SMALL: identity verdicts (A/B/tie) per labelled item 1-7
    labels = ["A", "A", "B", "B", "B", "A", "tie"]
    cancelled = ["A", "tie", "B", "A", "tie", "tie", "A"]  # consistent winner, else tie
    a_first_call = ["A", "A", "B", "A", "B", "tie", "A"]
    b_first_call = ["A", "B", "B", "A", "A", "tie", "A"]
    assert r.kappa_labels_cancelled.value == pytest.approx(cohen_kappa_score(cancelled, labels))
    assert r.kappa_labels_x_first.value == pytest.approx(cohen_kappa_score(a_first_call, labels))
    assert r.kappa_labels_y_first.value == pytest.approx(cohen_kappa_score(b_first_call, labels))
    # between the orders: all 8 complete pairs (item 8 is A both times)
    assert r.kappa_orders.value == pytest.approx(cohen_kappa_score([*a_first_call, "A"], [*b_first_call, "A"]))
    assert r.kappa_orders.low <= r.kappa_orders.value <= r.kappa_orders.high


def test_cohen_kappa_matches_scikit_learn_on_random_and_real_vectors():
    rng = np.random.default_rng(4)
    for _ in range(20):
        a = rng.choice(["x", "y", "tie"], 60)
        b = np.where(rng.random(60) < 0.5, a, rng.choice(["x", "y", "tie"], 60))
        assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))
    assert cohen_kappa(["x", "x"], ["x", "x"]) is None
    # real verdicts: gpt-4-0613 on MT-Bench, the verdict of each order as the identity it names
    rows = shi2024_records("MTBench", "gpt-4-0613")
    calls = {(r["item"], r["first"], r["second"]): r["verdict"] for r in rows}
    one, other = [], []
    for (item, first, second), verdict in sorted(calls.items()):
        if first > second:
            continue
        twin = calls[(item, second, first)]
        if verdict is None or twin is None:
            continue
        one.append({"first": first, "second": second, "tie": "tie"}[verdict])
        other.append({"first": second, "second": first, "tie": "tie"}[twin])
    [r] = agreement(records_from_dicts(rows).frame)
    assert r.kappa_orders.n == len(one) == 2400
    assert r.kappa_orders.value == pytest.approx(cohen_kappa_score(one, other))


def test_labels_from_a_separate_file(tmp_path):
    csv_labels = tmp_path / "labels.csv"
    csv_labels.write_text("item,label\n" + "".join(f"{i},{lab}\n" for i, _, _, lab in SMALL if lab))
    jsonl_labels = write_jsonl(tmp_path / "labels.jsonl", [{"item": i, "label": lab} for i, _, _, lab in SMALL])
    records = write_jsonl(tmp_path / "r.jsonl", small_rows(with_labels=False))
    expected = agreement(records_from_dicts(small_rows()).frame)[0].to_dict()
    for labels in (csv_labels, jsonl_labels):
        out = runner.invoke(app, ["agreement", str(records), "--labels", str(labels), "--format", "json"])
        assert out.exit_code == 0, out.output
        got = json.loads(out.output)
        assert got["accuracy"] == expected["accuracy"]
        assert got["kappa"]["labels"]["order_cancelled"]["value"] == expected["kappa"]["labels"]["order_cancelled"][
            "value"]
    out = runner.invoke(app, ["agreement", str(records), "--labels", str(csv_labels)])
    assert out.exit_code == 0 and "precise instrument pointed at the wrong thing" in out.output


def test_label_file_errors(tmp_path):
    bad = tmp_path / "l.csv"
    bad.write_text("item,label\n1,A\n1,B\n")
    with pytest.raises(InputError, match=r"l.csv:3: field `label`: item '1' already labelled 'A'"):
        load_labels(bad)
    nolabel = tmp_path / "n.jsonl"
    nolabel.write_text('{"item": 1}\n')
    with pytest.raises(InputError, match=r"n.jsonl:1: field `label`: missing"):
        load_labels(nolabel)
    records = write_jsonl(tmp_path / "r.jsonl", small_rows(with_labels=False))
    out = runner.invoke(app, ["agreement", str(records), "--labels", str(bad)])
    assert out.exit_code == 2 and "already labelled" in out.output and "Traceback" not in out.output
