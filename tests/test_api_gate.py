"""The library's gate on partial and absent data: `swapjudge.run()` with batch requests still waiting is not
`passed`, says how many wait and counts their pairs as incomplete; `swapjudge.analyze` of no records (an empty
list, an empty polars or pandas DataFrame, an empty file) raises `InputError("no records")`, as the CLI says."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import polars as pl
import pytest

import swapjudge
from batch_server import BatchServer
from runner_helpers import write_config, write_pairs
from swapjudge.errors import GateError, InputError

ITEMS = 10


def _failing_eight() -> tuple[set[str], object]:
    """The batch server's fault: the first 8 requests it processes come back errored (resubmitted once)."""
    failed: set[str] = set()

    def outcome(custom_id: str) -> str | None:
        digest = custom_id.rpartition("-")[2]
        if len(failed) < 8 and digest not in failed:
            failed.add(digest)
            return "errored"
        return None

    return failed, outcome


def test_run_with_batch_requests_waiting_has_not_passed(tmp_path: Path) -> None:
    write_pairs(tmp_path, ITEMS)
    failed, outcome = _failing_eight()
    # the first batch ends at its first poll; its 8 errored requests go into a follow-up batch, not waited for
    with BatchServer(outcome=outcome, polls_to_end=1) as server:  # type: ignore[arg-type]
        config = write_config(tmp_path, base_url=server.openai_url, judge={"batch": True, "batch_poll_s": 0.01})
        first = swapjudge.run(config, batch_wait=False)
        assert server.created == 1 and first.waiting == 2 * ITEMS and first.batches_waiting == 1
        assert not first.passed
        # nothing is stored yet: every pair is there, incomplete, rather than no pair at all
        (only,) = first.analyses
        assert (only.outcomes.total, only.outcomes.complete, only.outcomes.incomplete) == (ITEMS, 0, ITEMS)

        second = swapjudge.run(config, batch_wait=False)  # collects the first batch, submits the follow-up
        assert server.created == 2 and len(failed) == 8
        assert second.waiting == 8 and second.batches_waiting == 1 and not second.passed
        (judge,) = second.analyses
        assert judge.gate.passed  # on the 12 stored calls the judge is consistent ...
        complete = _pairs_stored_in_both_orders(tmp_path)
        assert 0 < complete <= ITEMS - 4  # 8 calls wait: at least 4 pairs lack one
        # ... but all 10 pairs are counted, those with a call waiting as incomplete
        assert (judge.outcomes.total, judge.outcomes.complete, judge.outcomes.incomplete) == (
            ITEMS, complete, ITEMS - complete)
        assert any("8 request(s) are still waiting in 1 batch(es)" in note for note in judge.notes)
        document = second.to_dict()
        assert document["run"]["waiting"] == 8 and document["run"]["batches_waiting"] == 1
        assert document["pairs"]["total"] == ITEMS
        with pytest.raises(GateError, match=r"8 request\(s\) still waiting in 1 batch\(es\)"):
            second.raise_for_gate()
        assert not (tmp_path / "swapjudge-run-1.analysis.json").exists()  # no analysis file of part of a run

        done = swapjudge.run(config)  # waits for the follow-up
    assert done.waiting == 0 and done.passed and done.analyses[0].outcomes.complete == ITEMS
    done.raise_for_gate()
    saved = json.loads((tmp_path / "swapjudge-run-1.analysis.json").read_text(encoding="utf-8"))
    assert saved["run"]["waiting"] == 0 and saved["pairs"] == {"total": ITEMS, "complete": ITEMS, "incomplete": 0}


def _pairs_stored_in_both_orders(directory: Path) -> int:
    """Counted from the store's own table: items with a call stored in each order."""
    import sqlite3

    con = sqlite3.connect(directory / "swapjudge.db")
    rows = con.execute("SELECT item, COUNT(DISTINCT first) FROM calls WHERE verdict IS NOT NULL GROUP BY item")
    both = sum(1 for _, orders in rows if orders == 2)
    con.close()
    return both


EMPTY = {
    "an empty list": [],
    "an empty tuple": (),
    "an empty polars DataFrame": pl.DataFrame(),
    "a polars DataFrame with the columns and no rows": pl.DataFrame(
        schema={"item": pl.String, "first": pl.String, "second": pl.String, "verdict": pl.String}),
    "an empty pandas DataFrame": pd.DataFrame(),
    "a pandas DataFrame with the columns and no rows": pd.DataFrame(columns=["item", "first", "second", "verdict"]),
}


@pytest.mark.parametrize("source", list(EMPTY.values()), ids=list(EMPTY))
def test_no_records_is_an_error_not_a_pass(source: object) -> None:
    with pytest.raises(InputError, match=r": no records$"):
        swapjudge.analyze(source)
    with pytest.raises(InputError, match=r": no records$"):
        swapjudge.load_records(source)
    with pytest.raises(InputError, match=r": no records$"):
        swapjudge.rank(source)


@pytest.mark.parametrize("text", ["", "\n\n", "item,first,second,verdict\n"])
def test_an_empty_file_is_an_error_not_a_pass(tmp_path: Path, text: str) -> None:
    path = tmp_path / ("r.csv" if text.startswith("item") else "r.jsonl")
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        swapjudge.analyze(path)
    assert str(info.value) == f"{path}: no records"
