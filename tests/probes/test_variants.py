import json

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import pair, shi2024_records, write_jsonl
from swapjudge.cli import app
from swapjudge.errors import SwapjudgeError
from swapjudge.probes.variants import compare_variants, mcnemar
from swapjudge.reading.records import records_from_dicts

runner = CliRunner()


def test_mcnemar_on_a_hand_made_example():
    # 10 pairs: consistent under both on 3, under a only on 6, under b only on 0, under neither on 1
    a = np.array([1, 1, 1, 1, 1, 1, 1, 1, 1, 0], dtype=bool)
    b = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0, 0], dtype=bool)
    t = mcnemar(a, b)
    assert (t.both, t.only_a, t.only_b, t.neither) == (3, 6, 0, 1)
    # exact two-sided: 2 * P(X >= 6 | n = 6, p = 1/2) = 2 / 64
    assert t.p_value == pytest.approx(2 / 64)
    assert t.difference == pytest.approx(0.6)
    assert mcnemar(np.ones(4, bool), np.ones(4, bool)).p_value is None  # no discordant pairs: nothing to test


def variant_rows(judge, consistent_items, n=10):
    rows = []
    for i in range(n):
        rows += pair(i, "first", "second", judge=judge) if i in consistent_items else pair(i, "first", "first",
                                                                                           judge=judge)
    return rows


def test_compare_two_judges_in_one_file():
    rows = variant_rows("cot", {0, 1, 2, 3, 4, 5, 6, 7, 8}) + variant_rows("plain", {0, 1, 2})
    result = compare_variants(records_from_dicts(rows).frame, "cot", "plain")
    assert (result.a.consistency.rate, result.b.consistency.rate) == (0.9, 0.3)
    assert (result.test.only_a, result.test.only_b, result.test.both) == (6, 0, 3)
    assert result.test.p_value == pytest.approx(2 / 64)
    assert result.b.flip_direction.first == 7


def test_compare_two_rounds_and_two_files(tmp_path):
    rounds = ([dict(r, round=0) for r in variant_rows("j", {0, 1, 2, 3, 4, 5, 6, 7, 8})]
              + [dict(r, round=1) for r in variant_rows("j", {0, 1, 2})])
    result = compare_variants(records_from_dicts(rounds).frame, "0", "1", field="round")
    assert (result.test.only_a, result.test.only_b) == (6, 0)
    fa = write_jsonl(tmp_path / "cot.jsonl", variant_rows("judge", {0, 1, 2, 3, 4, 5, 6, 7, 8}))
    fb = write_jsonl(tmp_path / "plain.jsonl", variant_rows("judge", {0, 1, 2}))
    out = runner.invoke(app, ["variants", str(fa), str(fb), "--format", "json"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)
    assert (d["a"]["judge"], d["b"]["judge"]) == ("cot", "plain")
    assert d["mcnemar"]["p_value"] == pytest.approx(2 / 64)
    one = write_jsonl(tmp_path / "both.jsonl", rounds)
    out = runner.invoke(app, ["variants", str(one), "--round", "0", "--round", "1", "--format", "json"])
    assert out.exit_code == 0 and json.loads(out.output)["mcnemar"]["only_a"] == 6
    out = runner.invoke(app, ["variants", str(one)])
    assert out.exit_code == 2 and "name the two variants" in out.output


def test_real_judges_as_variants_match_a_direct_count():
    rows = shi2024_records("MTBench", "gpt-4-0613") + shi2024_records("MTBench", "gpt-3.5-turbo-1106")
    result = compare_variants(records_from_dicts(rows).frame, "gpt-4-0613", "gpt-3.5-turbo-1106")
    calls = {(r["judge"], r["item"], r["first"], r["second"]): r["verdict"] for r in rows}
    swapped = {"first": "second", "second": "first", "tie": "tie"}
    per_judge = {}
    for (judge, item, first, second), v in calls.items():
        twin = calls[(judge, item, second, first)]
        if first < second and v is not None and twin is not None:
            per_judge[(judge, item, first, second)] = v == swapped[twin]
    keys = {k[1:] for k in per_judge}
    common = [k for k in keys if ("gpt-4-0613", *k) in per_judge and ("gpt-3.5-turbo-1106", *k) in per_judge]
    only_a = sum(per_judge[("gpt-4-0613", *k)] and not per_judge[("gpt-3.5-turbo-1106", *k)] for k in common)
    only_b = sum(per_judge[("gpt-3.5-turbo-1106", *k)] and not per_judge[("gpt-4-0613", *k)] for k in common)
    assert (result.test.pairs, result.test.only_a, result.test.only_b) == (len(common), only_a, only_b)
    with pytest.raises(SwapjudgeError, match="no records with judge 'nope'"):
        compare_variants(records_from_dicts(rows).frame, "gpt-4-0613", "nope")
