"""Fragility of a ranking's top: Shi et al.'s MT-Bench judgments by gpt-4-0613 (80 questions, 30 models each
against vicuna-13b-v1.3, both orders), each set confirmed by ranking again, through `swapjudge.rank`, on the
records without (or with flipped) those items; and a small study where a brute force over item sets is cheap."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import swapjudge
from conftest import pair, shi2024_records
from swapjudge.ranking.battles import comparisons_from_records
from swapjudge.ranking.bradley_terry import Comparisons, fit
from swapjudge.ranking.fragility import overtaker, top_fragility
from swapjudge.reading.records import read_records
from swapjudge.workflows.rank import rank_judge


def top_of(rows: list[dict[str, Any]]) -> str:
    return swapjudge.rank(rows, bootstrap=0, min_consistency=0).rows[0].system


def turned_against(rows: list[dict[str, Any]], ids: set[str], system: str) -> list[dict[str, Any]]:
    """`system`'s pairs on `ids`: both calls name its opponent."""
    out = []
    for r in rows:
        if str(r["item"]) in ids and system in (r["first"], r["second"]) and r["verdict"] is not None:
            r = {**r, "verdict": "second" if r["first"] == system else "first"}
        out.append(r)
    return out


@pytest.fixture(scope="module")
def mt_bench() -> list[dict[str, Any]]:
    return shi2024_records("MTBench", "gpt-4-0613")


def test_mt_bench_top_drop_and_flip_are_confirmed_by_ranking_again(mt_bench: list[dict[str, Any]]) -> None:
    result = rank_judge(mt_bench, bootstrap=0, fragility=True)
    f = result.fragility
    assert f is not None and f.top == "gpt-4" == top_of(mt_bench) and f.items == 80
    # the figures seen (docs/fragility.md): 9 items dropped, 7 flipped, each putting claude-v1 first
    assert (f.drop.items, f.drop.to) == (9, "claude-v1")
    assert (f.flip.items, f.flip.to) == (7, "claude-v1")
    assert f.drop.share == pytest.approx(9 / 80)
    kept = [r for r in mt_bench if str(r["item"]) not in set(f.drop.ids)]
    assert top_of(kept) == "claude-v1"
    assert top_of(turned_against(mt_bench, set(f.flip.ids), "gpt-4")) == "claude-v1"
    # the approximation's own figure: the summed one-item effects said about as many
    assert f.drop.predicted is not None and abs(f.drop.predicted - f.drop.items) <= 2
    # the items named are not any items: as many chosen by lot leave gpt-4 on top
    rng = np.random.default_rng(0)
    items = sorted({str(r["item"]) for r in mt_bench})
    for _ in range(3):
        lot = set(rng.choice(items, size=f.drop.items, replace=False).tolist())
        assert top_of([r for r in mt_bench if str(r["item"]) not in lot]) == "gpt-4"


def test_rank_cli_writes_the_fragility_json(tmp_path: Path, mt_bench: list[dict[str, Any]]) -> None:
    from swapjudge.cli import app

    path = tmp_path / "mt.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in mt_bench))
    done = CliRunner().invoke(app, ["rank", str(path), "--fragility", "--bootstrap", "0", "--format", "json"])
    assert done.exit_code == 0, done.output
    doc = json.loads(done.output)["fragility"]
    assert {"items", "share", "ids"} <= doc["drop"].keys() and {"items", "share", "ids"} <= doc["flip"].keys()
    assert doc["drop"]["items"] == len(doc["drop"]["ids"]) == 9 and doc["drop"]["approximate"] is True
    assert "splits_worst_case" in doc


def without(data: Comparisons, items: set[int]) -> Comparisons:
    keep = ~np.isin(np.asarray(data.item), list(items))
    return Comparisons(systems=data.systems, item=np.asarray(data.item)[keep], left=np.asarray(data.left)[keep],
                       right=np.asarray(data.right)[keep], outcome=np.asarray(data.outcome)[keep])


@pytest.mark.parametrize("wins", [(10, 9, 9), (9, 9, 9), (11, 10, 9), (9, 8, 10)])
def test_a_small_ranking_matches_a_brute_force_over_item_sets(wins: tuple[int, int, int]) -> None:
    """Three systems, 16 items: the fewest items whose removal changes the top, by a fit with every set of up to
    three items left out, equals what the search found (which is never fewer: every set it names is refitted)."""
    xz, yz, xy = wins
    rows: list[dict[str, Any]] = []
    for i in range(16):
        rows += pair(i, "first" if i < xz else "second", "second" if i < xz else "first", a="X", b="Z")
        rows += pair(i, "first" if (i * 7) % 16 < yz else "second", "second" if (i * 7) % 16 < yz else "first",
                     a="Y", b="Z")
        rows += pair(i, "first" if (i * 5) % 16 < xy else "second", "second" if (i * 5) % 16 < xy else "first",
                     a="X", b="Y")
    data = comparisons_from_records(read_records(rows))
    names = sorted({str(r["item"]) for r in rows})
    f = top_fragility(data, item_names=names)
    top = int(np.argmax(fit(data).scores))
    assert f.top == data.systems[top]
    truth = None
    for size in range(1, 4):
        for combo in itertools.combinations(range(16), size):
            if overtaker(fit(without(data, set(combo))).scores, top) is not None:
                truth = size
                break
        if truth is not None:
            break
    assert truth is not None and f.drop.items == truth
    named = {names.index(i) for i in f.drop.ids}
    assert overtaker(fit(without(data, named)).scores, top) is not None


# --- the order of the top k (`--top-k`) ------------------------------------------------------------------------


def top_k_of(rows: list[dict[str, Any]], k: int) -> list[str]:
    return [r.system for r in swapjudge.rank(rows, bootstrap=0, min_consistency=0).rows[:k]]


@pytest.mark.parametrize(("k", "dropped", "flipped"), [(2, 4, 3), (3, 2, 2)])
def test_mt_bench_order_of_the_top_k_is_confirmed_by_ranking_again(mt_bench: list[dict[str, Any]], k: int,
                                                                   dropped: int, flipped: int) -> None:
    """The figures seen (docs/fragility.md): the top 2 (gpt-4 > claude-v1) change with 4 questions dropped or 3
    flipped, the top 3 (... > claude-instant-v1) with 2 dropped or 2 flipped; each set confirmed by ranking again
    with `swapjudge.rank`, while as many questions drawn by lot leave the order as it is."""
    f = rank_judge(mt_bench, bootstrap=0, fragility=True, top_k=k).fragility
    assert f is not None
    order = top_k_of(mt_bench, k)
    assert list(f.order) == order == ["gpt-4", "claude-v1", "claude-instant-v1"][:k]
    assert (f.drop.items, f.flip.items) == (dropped, flipped)
    kept = [r for r in mt_bench if str(r["item"]) not in set(f.drop.ids)]
    assert top_k_of(kept, k) != order and top_k_of(kept, k) == list(f.drop.to_order or ())
    assert f.flip.turned in order
    turned = turned_against(mt_bench, set(f.flip.ids), str(f.flip.turned))
    assert top_k_of(turned, k) != order and top_k_of(turned, k) == list(f.flip.to_order or ())
    rng = np.random.default_rng(k)
    items = sorted({str(r["item"]) for r in mt_bench})
    unchanged = 0
    for _ in range(5):
        lot = set(rng.choice(items, size=dropped, replace=False).tolist())
        unchanged += top_k_of([r for r in mt_bench if str(r["item"]) not in lot], k) == order
    assert unchanged >= 3
    doc = f.to_dict()
    assert doc["top_k"] == k and doc["order"] == order and doc["drop"]["to_order"] == list(f.drop.to_order or ())
    assert doc["splits_worst_case"] is None and doc["drop"]["approximate"] is True


def test_top_k_1_is_the_top_alone_and_top_k_needs_fragility(tmp_path: Path,
                                                              mt_bench: list[dict[str, Any]]) -> None:
    from swapjudge.cli import app

    path = tmp_path / "mt.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in mt_bench))
    args = ["rank", str(path), "--fragility", "--bootstrap", "0", "--format", "json"]
    plain, one = (CliRunner().invoke(app, a) for a in (args, [*args, "--top-k", "1"]))
    assert plain.exit_code == one.exit_code == 0 and plain.output == one.output
    assert "top_k" not in json.loads(plain.output)["fragility"]
    bad = CliRunner().invoke(app, ["rank", str(path), "--top-k", "2"])
    assert bad.exit_code == 2 and "--top-k" in bad.output and "--fragility" in bad.output
    many = CliRunner().invoke(app, [*args, "--top-k", "40"])
    assert many.exit_code == 2 and "31 systems" in many.output
    text = CliRunner().invoke(app, ["rank", str(path), "--fragility", "--bootstrap", "0", "--top-k", "2"])
    assert text.exit_code == 0 and "the order of the top 2 (gpt-4 > claude-v1)" in text.output


def simulated(seed: int, systems: int = 4, items: int = 12, spacing: float = 0.45) -> list[dict[str, Any]]:
    """Every pair of `systems` on each item, both orders, verdicts drawn from a Bradley-Terry model (strengths
    `spacing` apart); one pair in six splits (slot 1 wins both calls)."""
    rng = np.random.default_rng(seed)
    names = [f"S{j}" for j in range(systems)]
    strength = -spacing * np.arange(systems)
    rows: list[dict[str, Any]] = []
    for i in range(items):
        for a, b in itertools.combinations(range(systems), 2):
            if rng.random() < 1 / 6:
                rows += pair(f"i{i:02d}", "first", "first", a=names[a], b=names[b])
                continue
            a_wins = rng.random() < 1 / (1 + np.exp(strength[b] - strength[a]))
            rows += pair(f"i{i:02d}", "first" if a_wins else "second", "second" if a_wins else "first",
                         a=names[a], b=names[b])
    return rows


def turned_data(data: Comparisons, items: set[int], system: int) -> Comparisons:
    from swapjudge.ranking.fragility import flipped_against

    flipped = flipped_against(data, system)
    chosen = np.isin(np.asarray(data.item), list(items))
    outcome = np.where(chosen, np.asarray(flipped.outcome), np.asarray(data.outcome))
    return Comparisons(systems=data.systems, item=data.item, left=data.left, right=data.right, outcome=outcome)


@pytest.mark.parametrize(("seed", "n_items", "spacing"), [(0, 12, 0.45), (1, 12, 0.45), (2, 12, 0.45),
                                                          (3, 12, 0.45), (4, 12, 0.45), (5, 12, 0.45),
                                                          (6, 16, 0.9), (9, 16, 0.9), (12, 16, 1.2),
                                                          (13, 16, 1.2)])
def test_the_order_of_the_top_2_matches_a_brute_force_over_item_sets(seed: int, n_items: int,
                                                                     spacing: float) -> None:
    """Four systems, 12 or 16 items: the fewest items whose removal (or whose comparisons of one of the top two, turned
    into its losses) change the order of the top two, by a fit of every set of up to three items, against what
    the search found. The search's sets are confirmed by a refit, so it never finds fewer; where it finds more,
    the brute force's answer is the honest one (the search is not proven the fewest)."""
    from swapjudge.ranking.fragility import order_changed, top_order

    rows = simulated(seed, items=n_items, spacing=spacing)
    data = comparisons_from_records(read_records(rows))
    names = sorted({str(r["item"]) for r in rows})
    f = top_fragility(data, item_names=names, top_k=2)
    order = top_order(fit(data).scores, 2)
    assert list(f.order) == [data.systems[i] for i in order]

    def fewest(changes: Any) -> int | None:
        for size in range(1, 4):
            if any(changes(set(combo)) for combo in itertools.combinations(range(len(names)), size)):
                return size
        return None

    drop_truth = fewest(lambda chosen: order_changed(fit(without(data, chosen)).scores, order))
    flip_truth = fewest(lambda chosen: any(order_changed(fit(turned_data(data, chosen, s)).scores, order)
                                           for s in order))
    for change, truth in ((f.drop, drop_truth), (f.flip, flip_truth)):
        assert change.items is not None
        assert change.items == truth if truth is not None else change.items > 3
        named = {names.index(i) for i in change.ids}
        again = (fit(without(data, named)) if change.kind == "drop"
                 else fit(turned_data(data, named, data.systems.index(str(change.turned)))))
        assert order_changed(again.scores, order)
        assert list(change.to_order or ()) == [data.systems[i] for i in top_order(again.scores, 2)]
