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
