"""The comparison maths of judge cards, each against an independent computation: Newcombe's independent-samples
interval against statsmodels, the paired test against statsmodels' exact McNemar, Holm against statsmodels'
multipletests, and the tiers on cases whose answer is known."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep

from swapjudge.drift.card_compare import compare_cards, newcombe_independent, tiers
from swapjudge.probes.judge_card import counts_subset


@pytest.mark.parametrize(("ka", "na", "kb", "nb"), [(30, 40, 36, 40), (0, 4, 97, 100), (68, 100, 97, 100),
                                                     (12, 66, 46, 66), (5, 5, 1, 9)])
def test_newcombe_independent_matches_statsmodels(ka: int, na: int, kb: int, nb: int) -> None:
    diff, low, high = newcombe_independent(ka, na, kb, nb)
    ref_low, ref_high = confint_proportions_2indep(ka, na, kb, nb, method="newcomb", compare="diff")
    assert diff == pytest.approx(ka / na - kb / nb)
    assert (low, high) == pytest.approx((ref_low, ref_high), abs=1e-12)


def per_pair_card(judge: str, consistent: list[bool], right: list[bool], pair_set: str = "llmbar/Natural",
                  name: str = "Natural") -> dict[str, Any]:
    """A saved card's subset with per-pair outcomes: x = output_1, label output_1; a consistent right pair is x_wins,
    a consistent wrong one y_wins, an inconsistent one a flip toward slot 1."""
    rows = []
    for i, (c, r) in enumerate(zip(consistent, right, strict=True)):
        outcome = ("x_wins" if r else "y_wins") if c else "flip_first"
        rows.append([f"{name}#{i}", "output_1", "output_2", "output_1", None, None, outcome])
    n = len(rows)
    right_both = sum(c and r for c, r in zip(consistent, right, strict=True))
    subset = counts_subset(name, consistent=sum(consistent), pairs=n, right_both=right_both)
    subset["pair_set"], subset["per_pair"] = pair_set, rows
    return {"kind": "judge_card", "judge": judge, "subsets": [subset]}


def test_paired_differences_use_the_shared_pairs_and_mcnemars_exact_test() -> None:
    rng = np.random.default_rng(7)
    a_cons = list(rng.random(60) < 0.7)
    b_cons = [c or bool(rng.random() < 0.6) for c in a_cons]  # b is consistent wherever a is, and on more pairs
    right = [True] * 60
    cmp = compare_cards([per_pair_card("a", a_cons, right), per_pair_card("b", b_cons, right)])
    d = next(x for x in cmp.differences if x.measure == "consistency")
    assert d.paired and d.units_a == 60
    assert d.difference == pytest.approx((sum(a_cons) - sum(b_cons)) / 60)
    table = [[sum(x and y for x, y in zip(a_cons, b_cons, strict=True)),
              sum(x and not y for x, y in zip(a_cons, b_cons, strict=True))],
             [sum(not x and y for x, y in zip(a_cons, b_cons, strict=True)),
              sum(not x and not y for x, y in zip(a_cons, b_cons, strict=True))]]
    assert d.p_value == pytest.approx(sm_mcnemar(table, exact=True).pvalue)
    assert d.low is not None and d.high is not None and d.low <= d.difference <= d.high


def test_holm_runs_over_every_difference_and_only_the_adjusted_p_claims_a_difference() -> None:
    n = 50
    base = per_pair_card("a", [True] * n, [True] * n)
    worse = per_pair_card("b", [i % 3 != 0 for i in range(n)], [i % 2 == 0 for i in range(n)])
    near = per_pair_card("c", [i != 0 for i in range(n)], [i > 2 for i in range(n)])
    cmp = compare_cards([base, worse, near], all_pairs=True)
    ps = [d.p_value for d in cmp.differences]
    assert len(ps) == 6  # three pairs of cards x two measures
    _, adjusted, _, _ = multipletests(ps, method="holm")
    assert [d.p_holm for d in cmp.differences] == pytest.approx(list(adjusted))
    for d in cmp.differences:
        assert d.differs == (d.p_holm <= 0.05)
    assert any(d.differs for d in cmp.differences) and not all(d.differs for d in cmp.differences)


def test_counts_only_references_are_compared_as_independent_samples_and_other_pair_sets_not_at_all() -> None:
    mine = per_pair_card("mine", [True] * 3 + [False], [True] * 4)
    published = {"kind": "reference_card", "judge": "GPT-4 Vanilla", "source": "LLMBar",
                 "subsets": [counts_subset("Natural", consistent=97, pairs=100, right_both=92)]}
    other = {"kind": "reference_card", "judge": "gpt-4-0613", "source": "Shi et al. 2024",
             "subsets": [{**counts_subset("Natural", consistent=1957, pairs=2400), "pair_set": "shi2024/MTBench"}]}
    cmp = compare_cards([mine, published, other])
    assert {d.b for d in cmp.differences} == {"GPT-4 Vanilla (LLMBar)"}
    d = next(x for x in cmp.differences if x.measure == "consistency")
    assert not d.paired and d.method == "newcombe10_independent"
    assert (d.difference, d.low, d.high) == pytest.approx(newcombe_independent(3, 4, 97, 100))
    refs = {r["label"]: r for r in cmp.to_dict()["references"]}
    assert refs["gpt-4-0613 (Shi et al. 2024)"]["shared_subsets"] == []
    assert "shares no pairs" in refs["gpt-4-0613 (Shi et al. 2024)"]["note"]
    assert refs["GPT-4 Vanilla (LLMBar)"]["shared_subsets"] == ["Natural"]


def test_tiers_group_each_card_with_the_best_one_it_overlaps_not_by_chaining() -> None:
    entries = [("A", 0.90, 0.85, 0.95), ("B", 0.84, 0.80, 0.88), ("C", 0.80, 0.76, 0.84), ("D", 0.40, 0.30, 0.50),
               ("E", 0.45, 0.35, 0.55)]
    # B overlaps A; C overlaps B but not A, so it opens the next tier; D and E overlap each other only
    assert tiers(entries) == (("A", "B"), ("C",), ("E", "D"))
    assert tiers([("x", 0.5, 0.4, 0.6)]) == (("x",),)
