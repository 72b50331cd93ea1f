import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from typer.testing import CliRunner

from conftest import pair, shi2024_records, write_jsonl
from swapjudge.cli import app
from swapjudge.errors import InputError
from swapjudge.probes.agreement import agreement_of_records, cohen_kappa
from swapjudge.reading.records import records_from_dicts
from swapjudge.reading.sidefiles import load_labels

runner = CliRunner()

# (item, verdict with A in slot 1, verdict with B in slot 1, label): an LLMBar-style labelled file to count by hand
SMALL = [
    (1, "first", "second", "A"),  # A both times: right in both orders
    (2, "first", "first", "A"),  # flip toward slot 1: right only when A sat first
    (3, "second", "first", "B"),  # B both times: right in both
    (4, "first", "second", "B"),  # A both times: consistently wrong
    (5, "second", "second", "B"),  # flip toward slot 2: right only when B sat second
    (6, "tie", "tie", "A"),  # consistent tie: wrong in both
    (7, "first", "second", "tie"),  # labelled tie, A both times: wrong
    (8, "first", "second", None),  # unlabelled
]


def small_rows(with_labels=True):
    rows = []
    for item, a_first, b_first, label in SMALL:
        extra = {"label": label} if with_labels and label else {}
        rows += pair(item, a_first, b_first, **extra)
    return rows


def test_accuracy_per_order_and_both_orders_match_a_hand_count():
    [r] = agreement_of_records(records_from_dicts(small_rows()).frame)
    acc = r.accuracy
    # labelled: items 1-7 (7 is labelled tie). Naming an answer: 1-6. Better answer in slot 1 named: items 1, 2, 3.
    # In slot 2: items 1, 3, 5.
    assert acc.pairs == 7 and acc.decided_pairs == 6 and acc.tie_pairs == 1
    assert (acc.right_first, acc.right_second, acc.right_both) == (3, 3, 2)
    # consistent labelled pairs: 1, 3, 4, 6, 7, of which 1 and 3 are right (7 is A both times against a tie label)
    assert acc.consistent_pairs == 5
    d = acc.to_dict()
    assert (d["better_first"], d["better_second"], d["both"], d["consistent"]) == (0.5, 0.5, 2 / 7, 0.4)
    # per call, over the 14 labelled calls: items 1 and 3 right twice, 2 and 5 once
    assert (d["per_call"]["right"], d["per_call"]["calls"], d["per_call"]["value"]) == (6, 14, 6 / 14)
    assert r.labelled_pairs == 7 == d["pairs"]
    assert r.consistency.consistent == 6 and r.consistency.pairs == 8


def test_a_consistent_tie_on_a_tie_labelled_pair_is_right():
    rows = small_rows() + pair(9, "tie", "tie", label="tie") + pair(10, "tie", "first", label="tie")
    d = agreement_of_records(records_from_dicts(rows).frame)[0].accuracy.to_dict()
    # 9 pairs labelled; right in both: 1, 3 and the consistent tie 9; the half-tie 10 is right in one call only
    assert d["pairs"] == 9 and d["tie_pairs"] == 3 and d["decided_pairs"] == 6
    assert d["both"] == pytest.approx(3 / 9)
    assert d["consistent"] == pytest.approx(3 / 6)  # consistent: 1, 3, 4, 6, 7, 9
    assert d["per_call"]["right"] == 6 + 2 + 1 and d["per_call"]["calls"] == 18
    # the better-answer shares stay over the pairs whose label names an answer
    assert d["better_first"] == 0.5 and d["denominators"]["better_first"] == 6


def test_kappa_equals_scikit_learn_on_the_same_vectors():
    [r] = agreement_of_records(records_from_dicts(small_rows()).frame)
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
    # real verdicts: gpt-4-0613 on MT-Bench, positional (first / second / tie) in each pair's own frame, that of
    # the call showing the alphabetically first system first; its twin's verdict mirrored into that frame
    rows = shi2024_records("MTBench", "gpt-4-0613")
    calls = {(r["item"], r["first"], r["second"]): r["verdict"] for r in rows}
    one, other = [], []
    for (item, first, second), verdict in sorted(calls.items()):
        if first > second:
            continue
        twin = calls[(item, second, first)]
        if verdict is None or twin is None:
            continue
        one.append(verdict)
        other.append({"first": "second", "second": "first", "tie": "tie"}[twin])
    [r] = agreement_of_records(records_from_dicts(rows).frame)
    assert r.kappa_orders.n == len(one) == 2400
    assert r.kappa_orders.value == pytest.approx(cohen_kappa_score(one, other))
    # system names as categories (the old rule) pool 31 names and inflate it: 0.725 against 0.673
    assert r.kappa_orders.value == pytest.approx(0.6732, abs=1e-4)


def test_labels_from_a_separate_file(tmp_path):
    csv_labels = tmp_path / "labels.csv"
    csv_labels.write_text("item,label\n" + "".join(f"{i},{lab}\n" for i, _, _, lab in SMALL if lab))
    jsonl_labels = write_jsonl(tmp_path / "labels.jsonl", [{"item": i, "label": lab} for i, _, _, lab in SMALL])
    records = write_jsonl(tmp_path / "r.jsonl", small_rows(with_labels=False))
    expected = agreement_of_records(records_from_dicts(small_rows()).frame)[0].to_dict()
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


# ---- positional kappa, per-call accuracy, single-order labels ---------------------------------------------

MIRROR = {"first": "second", "second": "first", "tie": "tie"}


def random_judge_rows(n_items=200, systems=("s0", "s1", "s2", "s3", "s4"), seed=7):
    """Every pair of five systems on each item (10 pairs an item), both orders, verdicts and labels at random."""
    rng = np.random.default_rng(seed)
    rows = []
    for item in range(n_items):
        for i, a in enumerate(systems):
            for b in systems[i + 1:]:
                label = rng.choice([a, b, "tie"])
                first_verdict, second_verdict = rng.choice(["first", "second", "tie"], 2)
                rows += pair(item, str(first_verdict), str(second_verdict), a=a, b=b, label=str(label))
    return rows


def positional_vectors(rows):
    """From the raw calls, independently of the pair table: each call's verdict and its label in that call's
    frame (first / second / tie), and per pair the x-first verdict against the y-first one mirrored."""
    verdicts, gold, by_key = [], [], {}
    for r in rows:
        if r["verdict"] is None or r.get("label") not in (r["first"], r["second"], "tie"):
            continue
        verdicts.append(r["verdict"])
        gold.append("tie" if r["label"] == "tie" else "first" if r["label"] == r["first"] else "second")
        by_key[(r["item"], r["first"], r["second"])] = r["verdict"]
    one, other = [], []
    for (item, first, second), verdict in by_key.items():
        if first < second and (item, second, first) in by_key:
            one.append(verdict)
            other.append(MIRROR[by_key[(item, second, first)]])
    return verdicts, gold, one, other


def test_a_random_judge_on_five_systems_has_kappa_near_zero():
    rows = random_judge_rows()
    [r] = agreement_of_records(records_from_dicts(rows).frame)
    assert r.kappa_orders.n == 2000 and r.labelled_pairs == 2000
    for k in (r.kappa_orders, r.kappa_labels_x_first, r.kappa_labels_y_first, r.kappa_labels_cancelled,
              r.kappa_labels_per_call):
        assert abs(k.value) < 0.03, k
        assert k.low < 0 < k.high
    verdicts, gold, one, other = positional_vectors(rows)
    assert r.kappa_orders.value == pytest.approx(cohen_kappa_score(one, other))
    assert r.kappa_labels_per_call.value == pytest.approx(cohen_kappa_score(verdicts, gold))
    assert r.kappa_labels_per_call.n == 4000 and r.kappa_labels_per_call.to_dict()["calls"] == 4000
    assert r.kappa_orders.to_dict()["interval_unit"] == "item"
    # system names as categories (the old rule): chance agreement over names most pairs cannot take inflates it
    named = {"first": 0, "second": 1}
    x_named = [("tie" if v == "tie" else (p["first"], p["second"])[named[v]])
               for p, v in ((row, row["verdict"]) for row in rows[0::2])]
    assert cohen_kappa(x_named, [row["label"] for row in rows[0::2]]) > 0.09


def test_per_call_accuracy_and_kappa_match_scikit_learn():
    from sklearn.metrics import accuracy_score

    rows = random_judge_rows(n_items=40, seed=3)
    rng = np.random.default_rng(1)
    for row in rows:  # a judge that is right 60% of the time, and some unparsed calls
        if rng.random() < 0.6 and row["label"] in (row["first"], row["second"], "tie"):
            row["verdict"] = "tie" if row["label"] == "tie" else "first" if row["label"] == row["first"] else "second"
        if rng.random() < 0.05:
            row["verdict"] = None
    [r] = agreement_of_records(records_from_dicts(rows).frame)
    verdicts, gold, _, _ = positional_vectors(rows)
    per_call = r.accuracy.to_dict()["per_call"]
    assert per_call["calls"] == len(verdicts)
    assert per_call["value"] == pytest.approx(accuracy_score(gold, verdicts))
    assert r.kappa_labels_per_call.value == pytest.approx(cohen_kappa_score(verdicts, gold))
    assert per_call["low"] < per_call["value"] < per_call["high"]


def test_per_call_interval_is_cluster_robust_by_item():
    import statsmodels.api as sm

    from swapjudge.core.accuracy import clustered_share
    from swapjudge.core.stats import wilson

    rng = np.random.default_rng(9)
    item = np.repeat(np.arange(60), 8)  # 8 calls an item (4 pairs in both orders)
    right = rng.random(item.size) < rng.beta(3, 2, 60)[item]  # how hard an item is moves all its calls
    share, n_eff = clustered_share(right, item)
    fit = sm.OLS(right.astype(float), np.ones(item.size)).fit(cov_type="cluster", cov_kwds={"groups": item})
    p = right.mean()
    assert share.rate == pytest.approx(p)
    assert p * (1 - p) / n_eff == pytest.approx(fit.bse[0] ** 2)
    assert n_eff < item.size / 2  # items this different leave far fewer independent units than calls
    # one call a cluster: the plain Wilson interval on n - 1 units (CR1's n/(n-1) correction)
    single, n1 = clustered_share(right, np.arange(item.size))
    assert n1 == pytest.approx(item.size - 1)
    w = wilson(int(right.sum()), item.size)
    assert single.low == pytest.approx(w.low, abs=2e-3) and single.high == pytest.approx(w.high, abs=2e-3)
    # coverage with known truth: 600 simulated files of 60 items, item difficulty ~ Beta(3, 2) (mean 0.6)
    covered = 0
    for _ in range(600):
        right = rng.random(item.size) < rng.beta(3, 2, 60)[item]
        s, _ = clustered_share(right, item)
        covered += s.low <= 0.6 <= s.high
    assert 0.92 <= covered / 600 <= 0.97, covered / 600


def test_single_order_labels_give_per_call_accuracy_through_import_csv(tmp_path):
    rng = np.random.default_rng(5)
    lines = ["question,model_a,model_b,winner,human"]
    for item in range(120):  # one order per pair (a coin decides it), as AlpacaEval-style harnesses judge
        a, b = ("m1", "m2") if rng.random() < 0.5 else ("m2", "m1")
        human = rng.choice(["m1", "m2", "tie"])
        winner = rng.choice(["model_a", "model_b", "tie"])
        lines.append(f"q{item},{a},{b},{winner},{human}")
    table = tmp_path / "calls.csv"
    table.write_text("\n".join(lines) + "\n")
    records = tmp_path / "records.jsonl"
    imported = runner.invoke(app, ["import", "csv", str(table), "-o", str(records), "--item", "question",
                                   "--first", "model_a", "--second", "model_b", "--verdict", "winner",
                                   "--map", "model_a=first,model_b=second,tie=tie", "--label", "human",
                                   "--judge-name", "j"])
    assert imported.exit_code == 0, imported.output
    out = runner.invoke(app, ["agreement", str(records), "--format", "json"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.stdout)
    verdicts = [{"model_a": "first", "model_b": "second", "tie": "tie"}[ln.split(",")[3]] for ln in lines[1:]]
    gold = ["tie" if ln.split(",")[4] == "tie" else "first" if ln.split(",")[4] == ln.split(",")[1] else "second"
            for ln in lines[1:]]
    right = sum(v == g for v, g in zip(verdicts, gold, strict=True))
    assert got["accuracy"]["pairs"] == 0 and got["accuracy"]["incomplete_pairs"] == 120
    assert got["accuracy"]["per_call"]["calls"] == 120 and got["accuracy"]["per_call"]["right"] == right
    assert got["accuracy"]["both"] is None and got["accuracy"]["denominators"]["per_call"] == 120
    assert got["kappa"]["labels"]["per_call"]["value"] == pytest.approx(cohen_kappa_score(verdicts, gold))
    assert got["kappa"]["labels"]["order_cancelled"] is None
    text = runner.invoke(app, ["agreement", str(records)])
    assert text.exit_code == 0, text.output
    assert "No labels" not in text.stdout and "no labelled pair has verdicts in both orders" in text.stdout
    assert f"of {120:,}" in text.stdout
    # analyze reports the same per-call accuracy
    analysed = runner.invoke(app, ["analyze", str(records), "--format", "json", "--min-consistency", "0"])
    assert json.loads(analysed.stdout)["accuracy"]["per_call"]["right"] == right
    shown = runner.invoke(app, ["analyze", str(records), "--min-consistency", "0"]).stdout
    assert "per call (of 120 labelled calls)" in shown and "better answer in slot 1" not in shown


def test_analyze_prints_each_accuracy_with_its_denominator(tmp_path):
    rows = small_rows() + pair(9, "tie", "tie", label="tie")
    records = write_jsonl(tmp_path / "r.jsonl", rows)
    shown = runner.invoke(app, ["analyze", str(records), "--min-consistency", "0"]).stdout
    # 8 labelled pairs (6 naming an answer, 2 tie), 6 consistent among them, 16 labelled calls
    for line in ("better answer in slot 1 (of 6 pairs)", "better answer in slot 2 (of 6 pairs)",
                 "(order-controlled) (of 8 pairs)", "among consistent pairs (of 6)", "per call (of 16 labelled"):
        assert line in shown, line
    md = runner.invoke(app, ["analyze", str(records), "--min-consistency", "0", "--format", "markdown"]).stdout
    assert "of 6 / 6 / 8 labelled pairs" in md and "of 16 labelled calls" in md
    table = runner.invoke(app, ["agreement", str(records)]).stdout
    assert "of 8" in table and "of 16" in table
