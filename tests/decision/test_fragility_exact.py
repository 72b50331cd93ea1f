"""Fragility is exact on small studies: drop and flip equal a brute-force search, with `swapjudge.decide` itself,
over every set of up to four items.

The brute force tries sets of items by their kinds: items whose records are the same (up to the item's id) are
interchangeable to a fixed-design decision, which reads neither ids nor order (checked below by deciding on
another choice of items of the same kinds), so one set per combination of kinds stands for all of them."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import swapjudge
from fragility_studies import DECISION, study
from swapjudge.decision.verdict import KEEP, SHIP

FLIP_TARGET = {"against": "B", "for": "A"}


def drop(rows: list[dict[str, Any]], ids: set[str]) -> list[dict[str, Any]]:
    return [r for r in rows if r["item"] not in ids]


def flip(rows: list[dict[str, Any]], ids: set[str], direction: str) -> list[dict[str, Any]]:
    """Every complete pair of `ids` a consistent win of B (against the candidate A) or of A (for it)."""
    target = FLIP_TARGET[direction]
    complete = {r["item"] for r in rows if r["item"] in ids} - {r["item"] for r in rows if r["verdict"] is None}
    return [{**r, "verdict": "first" if r["first"] == target else "second"} if r["item"] in complete else r
            for r in rows]


def brute_force(rows: list[dict[str, Any]], kind_of: dict[str, str], decision: dict[str, Any],
                change: Any, up_to: int) -> tuple[int, set[str]] | None:
    """The fewest items (at most `up_to`) whose change alters `swapjudge.decide`'s verdict, and one such set."""
    base = swapjudge.decide(rows, decision).verdict
    by_kind: dict[str, list[str]] = {}
    for item, kind in kind_of.items():
        by_kind.setdefault(kind, []).append(item)
    for size in range(1, up_to + 1):
        for combo in itertools.combinations_with_replacement(sorted(by_kind), size):
            need = {k: combo.count(k) for k in set(combo)}
            if any(n > len(by_kind[k]) for k, n in need.items()):
                continue
            ids = {i for k, n in need.items() for i in by_kind[k][:n]}
            got = swapjudge.decide(change(rows, ids), decision).verdict
            if got != base:
                # the same kinds, other items: the same verdict (ids and order do not matter)
                other = {i for k, n in need.items() for i in by_kind[k][-n:]}
                assert swapjudge.decide(change(rows, other), decision).verdict == got
                return size, ids
    return None


CASES = {
    # name: (kinds of items, decision keys changed)
    "ship": ({"W": 26, "L": 12, "F": 4, "H": 2}, {}),
    "keep": ({"W": 11, "L": 23, "F": 4, "H": 2}, {}),
    "inconclusive": ({"W": 22, "L": 16, "F": 3, "T": 2}, {}),
    "exclude": ({"W": 23, "L": 10, "F": 6, "T": 3}, {"tie_policy": "exclude"}),
    "no_credit": ({"W": 31, "L": 9, "F": 2, "H": 3}, {"tie_policy": "no_credit"}),
    "gate": ({"W": 30, "L": 6, "F": 14}, {}),
    "missing": ({"W": 30, "L": 8, "F": 3, "M": 1}, {}),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "exclude" else n
                                  for n in sorted(CASES)])
def test_drop_and_flip_equal_the_brute_force(name: str) -> None:
    counts, extra = CASES[name]
    rows, kind_of = study(counts)
    decision = {**DECISION, **extra}
    assert 30 <= len(kind_of) <= 60
    verdict = swapjudge.decide(rows, decision, fragility=True)
    f = verdict.fragility
    assert f.drop.exact and f.flip.exact
    want = brute_force(rows, kind_of, decision, drop, up_to=min(4, f.drop.items or 4))
    if f.drop.items is not None and f.drop.items <= 4:
        assert want is not None and want[0] == f.drop.items
    else:
        assert want is None  # no set of four or fewer changes it
    assert swapjudge.decide(drop(rows, set(f.drop.ids)), decision).verdict == f.drop.to != verdict.verdict
    directions = {SHIP: ["against"], KEEP: ["for"]}.get(verdict.verdict, ["against", "for"])
    found = [brute_force(rows, kind_of, decision, lambda r, i, d=d: flip(r, i, d),
                         up_to=min(4, f.flip.items or 4)) for d in directions]
    sizes = [w[0] for w in found if w is not None]
    if f.flip.items is not None and f.flip.items <= 4:
        assert sizes and min(sizes) == f.flip.items
    else:
        assert not sizes
    if f.flip.items is not None:
        changed = flip(rows, set(f.flip.ids), f.flip.direction)
        assert swapjudge.decide(changed, decision).verdict == f.flip.to != verdict.verdict
    assert f.drop.confirmed is not False and f.flip.confirmed is not False


def shown(rows: list[dict[str, Any]]) -> str:
    """What `swapjudge.analyze` shows of A against B: its win rate's interval above, below or around 50%."""
    win = swapjudge.analyze(rows, a="A", b="B")[0].win_rate
    rate = None if win is None else win.headline
    if rate is None or rate.value is None:
        return "withheld"
    return "A" if rate.low > 0.5 else "B" if rate.high < 0.5 else "neither"


def test_analyze_fragility_is_what_analyze_itself_shows() -> None:
    """One pair per item: the analysis' interval is the decision's over items, so the items named change what
    `swapjudge.analyze` shows, and no set with fewer items (brute force over kinds) does."""
    from swapjudge.workflows.analyze import analyze

    counts = CASES["ship"][0]
    rows, kind_of = study(counts)
    f = analyze(rows, a="A", b="B", fragility=True)[0].fragility
    assert f is not None and f.verdict == SHIP and shown(rows) == "A"
    assert shown(drop(rows, set(f.drop.ids))) == "neither"
    assert shown(flip(rows, set(f.flip.ids), "against")) == "neither"
    by_kind: dict[str, list[str]] = {}
    for item, kind in kind_of.items():
        by_kind.setdefault(kind, []).append(item)
    for size in range(1, f.flip.items):
        for combo in itertools.combinations_with_replacement(sorted(by_kind), size):
            ids = {i for k in set(combo) for i in by_kind[k][:combo.count(k)]}
            assert shown(flip(rows, ids, "against")) == "A"
    doc = swapjudge.analyze(rows, a="A", b="B").to_dict()
    assert "fragility" not in doc  # only when asked for


def resolve(rows: list[dict[str, Any]], target: str) -> list[dict[str, Any]]:
    """Every swap-inconsistent pair's two calls naming `target`."""
    by_item: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_item.setdefault(r["item"], []).append(r)
    out = []
    for calls in by_item.values():
        named = {(c[c["verdict"]] if c["verdict"] in ("first", "second") else c["verdict"]) for c in calls}
        split = None not in named and len(named) > 1
        out += [{**c, "verdict": "first" if c["first"] == target else "second"} if split else c for c in calls]
    return out


@pytest.mark.parametrize("name", ["ship", "gate", "no_credit"])
def test_splits_worst_case_is_the_decision_on_resolved_records(name: str) -> None:
    counts, extra = CASES[name]
    rows, _ = study(counts)
    decision = {**DECISION, **extra}
    worst = swapjudge.decide(rows, decision, fragility=True).fragility.splits_worst_case
    assert worst.against == swapjudge.decide(resolve(rows, "B"), decision).verdict
    assert worst.toward == swapjudge.decide(resolve(rows, "A"), decision).verdict
    assert worst.pairs == counts.get("F", 0) + counts.get("H", 0) and worst.confirmed


def test_sequential_fragility_is_an_upper_bound_confirmed_by_deciding_again() -> None:
    rows, _ = study({"W": 40, "L": 10, "F": 4})
    decision = {**DECISION, "monitoring": "sequential"}
    verdict = swapjudge.decide(rows, decision, fragility=True)
    f = verdict.fragility
    assert verdict.verdict == SHIP and not f.drop.exact and not f.flip.exact
    assert f.drop.items is not None and f.drop.confirmed
    assert swapjudge.decide(drop(rows, set(f.drop.ids)), decision).verdict == f.drop.to != SHIP
    assert swapjudge.decide(flip(rows, set(f.flip.ids), "against"), decision).verdict == f.flip.to != SHIP
    assert "not proven the fewest" in f.drop.statement


def test_the_cli_json_names(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from typer.testing import CliRunner

    from swapjudge.cli import app

    rows, _ = study(CASES["keep"][0])
    monkeypatch.chdir(tmp_path)  # the decisions ledger is written beside the records
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "d.yaml").write_text("".join(f"{k}: {v}\n" for k, v in DECISION.items()))
    done = CliRunner().invoke(app, ["decide", "d.yaml", "r.jsonl", "--fragility", "--format", "json"])
    assert done.exit_code == 1, done.output
    doc = json.loads(done.stdout)["fragility"]
    assert doc["drop"]["items"] == len(doc["drop"]["ids"]) and doc["drop"]["share"] == doc["drop"]["items"] / 40
    assert {"items", "share", "ids"} <= doc["flip"].keys() and doc["flip"]["direction"] == "for"
    assert doc["splits_worst_case"]["for_candidate"] in ("ship", "keep", "inconclusive")


def test_the_vectorised_fixed_verdict_is_the_rule_itself() -> None:
    """The exact search reads many sums at once: each verdict equals `VerdictRule.fixed` and `fixed_bound`'s."""
    import numpy as np

    from swapjudge.decision.bounds import fixed_bound
    from swapjudge.decision.fragility import VerdictRule, _fixed_many

    rng = np.random.default_rng(3)
    for early in (False, True):
        rule = VerdictRule("half_credit", 0.5, 0.05, "fixed", 0.7, early=early)
        arrays = [rng.choice([0.0, 0.5, 1.0], size=int(rng.integers(1, 80)), p=rng.dirichlet([1, 1, 1]))
                  for _ in range(400)]
        n = np.array([a.size for a in arrays])
        total = np.array([a.sum() for a in arrays])
        squares = np.array([np.sum(a**2) for a in arrays])
        many = _fixed_many(rule, n, total, squares)
        for a, got in zip(arrays, many, strict=True):
            b = fixed_bound(a, 0.05)
            want = "keep" if b.high < 0.5 else "inconclusive" if early else "ship" if b.low > 0.5 else "inconclusive"
            assert got == rule.fixed(a.size, float(a.sum()), float(np.sum(a**2))) == want
