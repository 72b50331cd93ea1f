"""Graded verdicts under a swap (core/graded.py): exact counts on simulated pairs of known kind, an independent
pair-by-pair re-computation, the gate by direction, and the coverage of the graded score's interval over items
against arena-hard's x3 convention over battles (bench/graded_coverage.py, truth by quadrature)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from conftest import ROOT
from swapjudge.core.analysis import analyze_records
from swapjudge.core.stats import mean_interval, proportion_interval
from swapjudge.reading.records import read_records

sys.path.insert(0, str(ROOT / "bench"))
from graded_coverage import Judge, coverage, truths

# the five levels as (verdict, strength), in slot terms
LEVEL = {"A>>B": ("first", 2), "A>B": ("first", 1), "A=B": ("tie", None), "B>A": ("second", 1),
         "B>>A": ("second", 2)}
MIRROR = {"A>>B": "B>>A", "A>B": "B>A", "A=B": "A=B", "B>A": "A>B", "B>>A": "A>>B"}
SCORE = {"A>>B": 1.0, "A>B": 0.75, "A=B": 0.5, "B>A": 0.25, "B>>A": 0.0}

# what each kind of pair is, as (level with a in slot 1, level with b in slot 1)
KINDS = {
    "strong_consistent": ("A>>B", "B>>A"), "weak_consistent": ("B>A", "A>B"), "tie_tie": ("A=B", "A=B"),
    "direction_only": ("A>>B", "B>A"), "strong_flip_first": ("A>>B", "A>>B"),
    "strong_flip_second": ("B>>A", "B>>A"), "weak_flip_first": ("A>B", "A>B"), "weak_flip_second": ("B>A", "B>A"),
    "mixed_flip": ("A>>B", "A>B"), "half_tie": ("A>B", "A=B"),
}


def records_of(pairs: list[tuple[str, str, str, str, str]]) -> list[dict]:
    """Records from (item, a, b, level with a in slot 1, level with b in slot 1)."""
    rows = []
    for item, a, b, la, lb in pairs:
        for first, second, level in ((a, b, la), (b, a, lb)):
            verdict, strength = LEVEL[level]
            rows.append({"item": item, "first": first, "second": second, "verdict": verdict, "strength": strength})
    return rows


def test_counts_are_exact_on_pairs_of_known_kind() -> None:
    rng = np.random.default_rng(26)
    kinds = rng.choice(list(KINDS), size=600)
    truth = Counter(kinds)
    pairs = [(f"q{i}", "a", "b", *KINDS[k]) for i, k in enumerate(kinds)]
    graded = analyze_records(read_records(records_of(pairs)), min_consistency=0)[0].to_dict()["graded"]
    consistent = truth["strong_consistent"] + truth["weak_consistent"] + truth["tie_tie"]
    assert graded["pairs"] == 600 and graded["ungraded"] == 0
    assert graded["strength_consistency"]["consistent"] == consistent
    assert graded["strength_consistency"]["rate"] == consistent / 600
    assert graded["direction_only"] == truth["direction_only"]
    assert graded["strong_flips"] == truth["strong_flip_first"] + truth["strong_flip_second"]
    assert graded["weak_flips"] == truth["weak_flip_first"] + truth["weak_flip_second"]
    assert graded["mixed_flips"] == truth["mixed_flip"]
    strong = graded["flip_direction"]["strong"]
    assert (strong["first"], strong["second"]) == (truth["strong_flip_first"], truth["strong_flip_second"])
    weak = graded["flip_direction"]["weak"]
    assert (weak["first"], weak["second"]) == (truth["weak_flip_first"], truth["weak_flip_second"])
    counts = np.array(graded["cross_table"]["counts"])
    labels = graded["cross_table"]["labels"]
    for kind, (la, lb) in KINDS.items():
        assert counts[labels.index(la), labels.index(lb)] == truth[kind]


def independent(pairs: list[tuple[str, str, str, str, str]], a: str, b: str) -> dict:
    """The graded figures pair by pair, in identity terms, without the library's level codes."""
    agree, score, item, flips = [], [], [], Counter()
    for it, x, y, lx, ly in pairs:
        if {x, y} != {a, b}:
            continue
        la, lb = (lx, ly) if x == a else (ly, lx)  # level with a in slot 1, with b in slot 1
        # a's level in identity terms in each call: first call as is, second mirrored
        agree.append(la == MIRROR[lb])
        score.append((SCORE[la] + 1 - SCORE[lb]) / 2)
        item.append(it.split(":")[0])
        if la == lb and la != "A=B":
            flips["strong" if ">>" in la else "weak"] += 1
        elif la != lb and "A=B" not in (la, lb) and la.replace(">>", ">") == lb.replace(">>", ">"):
            flips["mixed"] += 1
    return {"agree": np.array(agree, dtype=float), "score": np.array(score), "item": np.array(item),
            "flips": flips}


def test_an_independent_pass_over_pairs_gives_the_same_figures() -> None:
    """Several systems and two rounds per item: the pairs of one item share its cluster."""
    rng = np.random.default_rng(5)
    levels = list(LEVEL)
    pairs = []
    for i in range(120):
        for r in range(2):
            for x, y in (("a", "b"), ("a", "c")):
                la = levels[rng.integers(5)]
                lb = MIRROR[la] if rng.random() < 0.6 else levels[rng.integers(5)]
                pairs.append((f"q{i}:{r}", x, y, la, lb))
    rows = records_of(pairs)
    for row, (it, *_rest) in zip(rows[::2], pairs, strict=True):
        row["item"], row["round"] = it.split(":")[0], int(it.split(":")[1])
    for row, (it, *_rest) in zip(rows[1::2], pairs, strict=True):
        row["item"], row["round"] = it.split(":")[0], int(it.split(":")[1])
    result = analyze_records(read_records(rows), a="a", b="b", min_consistency=0)[0]
    ref = independent(pairs, "a", "b")
    graded = result.to_dict()["graded"]
    expected = proportion_interval(ref["agree"], 0.95, ref["item"])
    sc = graded["strength_consistency"]
    assert (sc["rate"], sc["low"], sc["high"]) == pytest.approx((expected.value, expected.low, expected.high))
    assert sc["independent"] == "items" and sc["clusters"] == 120
    assert graded["strong_flips"] == ref["flips"]["strong"] and graded["weak_flips"] == ref["flips"]["weak"]
    assert graded["mixed_flips"] == ref["flips"]["mixed"]
    rate = result.to_dict()["win_rate"]["graded"]
    m = mean_interval(ref["score"], 0.95, ref["item"])
    assert (rate["value"], rate["low"], rate["high"]) == pytest.approx((m.value, m.low, m.high))
    assert rate["value"] == pytest.approx(ref["score"].mean(), abs=1e-15)
    assert rate["pairs"] == 240 and rate["independent"] == "items"


def test_graded_figures_only_when_records_carry_strength() -> None:
    rows = records_of([("q1", "a", "b", "A>B", "B>A"), ("q2", "a", "b", "A>B", "A>B")])
    for row in rows:
        row.pop("strength")
    out = analyze_records(read_records(rows), min_consistency=0)[0].to_dict()
    assert out["graded"] is None
    assert out["win_rate"]["graded"] is None and out["win_rate"]["arena_hard"] is None


def test_a_call_naming_a_slot_without_strength_leaves_its_pair_ungraded() -> None:
    rows = records_of([("q1", "a", "b", "A>>B", "B>>A"), ("q2", "a", "b", "A>B", "B>A")])
    rows[2]["strength"] = None  # q2's a-first call: slot 1, strength unknown
    graded = analyze_records(read_records(rows), min_consistency=0)[0].to_dict()["graded"]
    assert (graded["pairs"], graded["ungraded"]) == (1, 1)
    assert graded["strength_consistency"]["rate"] == 1.0


def test_the_gate_is_on_direction_whatever_the_strengths() -> None:
    # every pair consistent in direction, none in strength: the gate passes, strength consistency is 0
    steady = [(f"q{i}", "a", "b", "A>>B", "B>A") for i in range(20)]
    result = analyze_records(read_records(records_of(steady)))[0]
    assert result.gate.passed and result.to_dict()["graded"]["strength_consistency"]["rate"] == 0.0
    assert result.to_dict()["win_rate"]["graded"]["value"] == pytest.approx(0.875)
    # every pair a weak flip: direction consistency 0, the gate fails and withholds the graded rates too;
    # no strength can turn it into a pass
    flipping = [(f"q{i}", "a", "b", "A>B", "A>B") for i in range(20)]
    failed = analyze_records(read_records(records_of(flipping)))[0]
    assert not failed.gate.passed
    assert failed.to_dict()["win_rate"] is None
    assert failed.win_rate is not None and failed.win_rate.graded is not None
    assert failed.win_rate.graded.value is None and failed.win_rate.arena_hard.value is None


def test_the_cli_json_names(tmp_path) -> None:
    path = tmp_path / "graded.jsonl"
    pairs = [(f"q{i}", "a", "b", *KINDS[k]) for i, k in enumerate(["strong_consistent"] * 8 + ["strong_flip_first",
                                                                    "weak_flip_second"])]
    path.write_text("".join(json.dumps(r) + "\n" for r in records_of(pairs)))
    out = subprocess.run([sys.executable, "-m", "swapjudge", "analyze", str(path), "--format", "json"],
                         capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    assert doc["graded"]["strength_consistency"]["rate"] == 0.8
    assert {k: doc["graded"][k] for k in ("strong_flips", "weak_flips")} == {"strong_flips": 1, "weak_flips": 1}
    assert doc["graded"]["flip_direction"]["strong"]["first"] == 1
    assert doc["graded"]["flip_direction"]["weak"]["second"] == 1
    assert {"value", "low", "high"} <= doc["win_rate"]["graded"].keys()
    assert doc["win_rate"]["graded"]["value"] == pytest.approx(0.9)  # 8 pairs at 1, two flips at 1/2
    assert "arena-hard" in doc["win_rate"]["arena_hard"]["convention"]


def test_truth_by_quadrature_matches_a_large_simulation() -> None:
    from graded_coverage import simulate

    from swapjudge.core.graded import arena_hard_battles, graded_scores

    judge = Judge()
    la, lb, _ = simulate(np.random.default_rng(1), judge, 400_000)
    scores, battles = arena_hard_battles(la, lb)
    graded, arena = truths(judge)
    assert graded_scores(la, lb).mean() == pytest.approx(graded, abs=2e-3)
    assert (scores * battles).sum() / battles.sum() == pytest.approx(arena, abs=2e-3)


@pytest.mark.parametrize(("items", "rounds"), [(100, 1), (100, 3)])
def test_the_graded_interval_covers_and_arena_hards_does_not(items: int, rounds: int) -> None:
    c = coverage(files=1000, items=items, rounds=rounds)
    assert 0.93 <= c.graded <= 0.97
    assert c.arena_hard < 0.80  # its battles are not independent: the same item, both orders, three copies
    if rounds > 1:
        assert c.graded_unclustered < 0.85  # the pairs of one item are not independent either
