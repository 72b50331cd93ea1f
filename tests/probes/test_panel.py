import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from conftest import pair, shi2024_records, write_jsonl
from swapjudge.cli import app
from swapjudge.errors import SwapjudgeError
from swapjudge.probes.panel import family_of, panel_of_records, parse_families
from swapjudge.reading.records import records_from_dicts

runner = CliRunner()
MTBENCH_JUDGES = ("gpt-4-0613", "gpt-3.5-turbo-1106", "gemini-pro")


@pytest.fixture(scope="module")
def mtbench_rows():
    return [r for j in MTBENCH_JUDGES for r in shi2024_records("MTBench", j)]


def cancelled_verdicts(rows):
    """Independent count: per judge and pair, the consistent winner's name, else "split" (None if incomplete)."""
    calls = {(r["judge"], r["item"], r["first"], r["second"]): r["verdict"] for r in rows}
    out = {}
    for (judge, item, first, second), verdict in calls.items():
        if first > second:
            continue
        twin = calls[(judge, item, second, first)]
        if verdict is None or twin is None:
            out[(judge, item, first, second)] = None
            continue
        named = {"first": first, "second": second, "tie": "tie"}[verdict]
        named_twin = {"first": second, "second": first, "tie": "tie"}[twin]
        out[(judge, item, first, second)] = named if named == named_twin and named != "tie" else "split"
    return out


def test_panel_of_the_three_mtbench_judges(mtbench_rows):
    result = panel_of_records(records_from_dicts(mtbench_rows).frame)
    by_judge = {s.judge: s for s in result.judges}
    assert by_judge["gpt-4-0613"].consistency.consistent == 1957
    assert by_judge["gpt-4-0613"].consistency.pairs == 2400
    # independent count of the common pairs and of those on which the three order-cancelled verdicts differ
    verdicts = cancelled_verdicts(mtbench_rows)
    keys = {k[1:] for k in verdicts}
    common = [k for k in keys if all(verdicts.get((j, *k)) is not None for j in MTBENCH_JUDGES)]
    differ = [k for k in common if len({verdicts[(j, *k)] for j in MTBENCH_JUDGES}) > 1]
    assert result.common_pairs == len(common)
    assert result.disagreement.k == len(differ)
    assert result.disagreement.low < result.disagreement.rate < result.disagreement.high
    majority = Counter()
    for k in common:
        top, n = Counter(verdicts[(j, *k)] for j in MTBENCH_JUDGES).most_common(1)[0]
        majority["(no majority)" if n < 2 else "split" if top == "split" else "winner"] += 1
    assert result.majority == dict(majority)
    assert len(result.review_rows()) == len(differ)
    gpt4_gpt35 = sum(verdicts[("gpt-4-0613", *k)] == verdicts[("gpt-3.5-turbo-1106", *k)] for k in common)
    assert result.pairwise_agreement["gpt-4-0613"]["gpt-3.5-turbo-1106"] == pytest.approx(gpt4_gpt35 / len(common))


def test_self_preference_warning_for_same_family(mtbench_rows):
    result = panel_of_records(records_from_dicts(mtbench_rows).frame)
    flagged = {(w.judge, w.system) for w in result.self_preference}
    assert ("gpt-4-0613", "gpt-4") in flagged and ("gpt-4-0613", "gpt-3.5-turbo") in flagged
    assert not any(s == "gpt4all-13b-snoozy" for _, s in flagged)  # a different family despite the prefix
    assert not any(j == "gemini-pro" for j, _ in flagged)  # no gemini candidate in MT-Bench
    w = next(w for w in result.self_preference if (w.judge, w.system) == ("gpt-4-0613", "gpt-4"))
    assert w.gap == pytest.approx(w.judge_score - w.others_score) and w.pairs == 80
    # a mapping that puts gemini with the vicuna family flags gemini-pro's vicuna-13b-v1.3 pairs
    mapped = panel_of_records(records_from_dicts(mtbench_rows).frame, families={"x": ["gemini", "vicuna"]})
    assert any(w.judge == "gemini-pro" and w.system.startswith("vicuna") for w in mapped.self_preference)


def test_family_heuristic_and_mapping():
    assert [family_of(n) for n in ("gpt-4-0613", "gpt-3.5-turbo", "claude-3-haiku-20240307", "gemini-pro",
                                   "gpt4all-13b-snoozy", "llama3-8b", "openai/gpt-4o")] == [
        "gpt", "gpt", "claude", "gemini", "gpt4all", "llama", "gpt"]
    families = parse_families(["openai=gpt-4,gpt-3.5", "openai=o1"])
    assert families == {"openai": ["gpt-4", "gpt-3.5", "o1"]}
    assert family_of("gpt-4-0613", families) == "openai" and family_of("o1-mini", families) == "openai"
    with pytest.raises(SwapjudgeError, match="FAMILY=PREFIX"):
        parse_families(["gpt"])


def test_majority_and_accuracy_with_labels_by_hand():
    rows = []
    # judges j1, j2, j3 on 3 pairs; labels say A is better on all
    spec = {"j1": [("first", "second"), ("first", "second"), ("first", "first")],
            "j2": [("first", "second"), ("second", "first"), ("first", "first")],
            "j3": [("first", "second"), ("second", "first"), ("second", "first")]}
    for judge, verdicts in spec.items():
        for item, (a_first, b_first) in enumerate(verdicts):
            rows += pair(item, a_first, b_first, judge=judge, label="A")
    result = panel_of_records(records_from_dicts(rows).frame)
    # pair 0: all A (agree); pair 1: A, B, B -> B majority; pair 2: split, split, B -> split majority
    assert result.common_pairs == 3 and result.disagreement.k == 2
    assert result.majority == {"winner": 2, "split": 1, "(no majority)": 0}
    assert (result.majority_accuracy.k, result.majority_accuracy.n) == (1, 3)
    review = result.review_rows()
    assert [r["item"] for r in review] == ["1", "2"] and review[0]["majority"] == "B"
    assert {j["judge"]: j["verdict"] for j in review[0]["judges"]} == {"j1": "A", "j2": "B", "j3": "B"}


def test_cli_panel_exports_disagreements(tmp_path, mtbench_rows):
    path = write_jsonl(tmp_path / "mt.jsonl", mtbench_rows)
    out_file = tmp_path / "review.jsonl"
    out = runner.invoke(app, ["panel", str(path), "--disagreements", str(out_file), "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    lines = out_file.read_text().splitlines()
    assert len(lines) == data["disagreeing_pairs"] == data["disagreement"]["k"]
    first = json.loads(lines[0])
    assert {"item", "x", "y", "majority", "judges"} <= set(first)
    out = runner.invoke(app, ["panel", str(path), "--judge", "gpt-4-0613"])
    assert out.exit_code == 2 and "at least two judges" in out.output
