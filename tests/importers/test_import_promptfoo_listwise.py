"""promptfoo select-best over three outputs as listwise records: built from the real promptfoo results file of
tests/fixtures/importers/promptfoo (each test given a third output in promptfoo's own schema), read back by the
listwise loader, and fitted without slot effects (one rotation)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from swapjudge.importers.promptfoo_listwise import SINGLE_ROTATION, import_promptfoo_listwise
from swapjudge.ranking.plackett_luce import fit_plackett_luce
from swapjudge.reading.listwise import load_listwise

RESULTS = Path(__file__).parents[1] / "fixtures" / "importers" / "promptfoo" / "results.json"


def three_outputs(tmp_path: Path) -> Path:
    data = json.loads(RESULTS.read_text(encoding="utf-8"))
    rows = data["results"]["results"]
    out = []
    for test in range(6):
        pair = sorted((r for r in rows if r["testIdx"] == test), key=lambda r: r["promptIdx"])
        third = copy.deepcopy(pair[0])
        third["promptIdx"] = 2
        for comp in third["gradingResult"]["componentResults"]:
            comp["pass"] = False
            comp["reason"] = "Output not selected"
        for index, row in enumerate([*pair, third]):
            row["provider"] = {"id": f"model-{'abc'[index]}", "label": ""}
            # the fixture's tests are the two orders of one item; here each test is its own item
            row["vars"] = {**(row.get("vars") or {}), "item": f"t{test}"}
            out.append(row)
    data["results"]["results"] = out
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_select_best_of_three(tmp_path: Path) -> None:
    path = three_outputs(tmp_path)
    rows = json.loads(RESULTS.read_text(encoding="utf-8"))["results"]["results"]
    imported = import_promptfoo_listwise([path])
    assert imported.note == SINGLE_ROTATION and not imported.skipped
    assert len(imported.records) == 6
    for record in imported.records:
        test = record["test_index"]
        assert record["slots"] == ["model-a", "model-b", "model-c"]
        # the pick is the slot whose output the grader selected in the real file (prompt order)
        real = sorted((r for r in rows if r["testIdx"] == test), key=lambda r: r["promptIdx"])
        passed = [i + 1 for i, r in enumerate(real) if r["gradingResult"]["componentResults"][0]["pass"]]
        assert record["pick"] == (passed[0] if len(passed) == 1 else None)
    loaded = load_listwise(list(imported.records))
    assert len(loaded) == 6
    fit = fit_plackett_luce(loaded.calls, rounds=0)
    assert fit.slot_effects is None and "not rotated" in (fit.note or "")


def test_pairs_are_left_to_the_pairwise_importer() -> None:
    imported = import_promptfoo_listwise([RESULTS])
    assert not imported.records and len(imported.skipped) == 12
    assert all("a pair" in why for _where, why in imported.skipped)
