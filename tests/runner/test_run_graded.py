"""`verdict_scale: graded`: the prompt asks for the five-level verdict, the parser reads it (a verdict line or a
structured JSON verdict), the store keeps `strength` with every call and through the cache, and the analysis of
the run reads it; against the real test judge server on 127.0.0.1 (OpenAI and Anthropic wire formats)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from judge_server import JudgeServer
from runner_helpers import stored_calls, write_config, write_pairs
from swapjudge.config import load_config
from swapjudge.core.analysis import analyze_records
from swapjudge.runner.provenance import run_provenance
from swapjudge.runner.session import run_session
from swapjudge.store import Store
from swapjudge.store.analysis import run_record_set

WRONG_EVERY = 3  # items q000, q003, ...: the weaker answer also says WRONG, so the judge is "much" sure


def graded_pairs(directory: Path, n: int) -> Path:
    path = write_pairs(directory, n)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for i, row in enumerate(rows):
        if i % WRONG_EVERY == 0:
            row["answers"]["bad"] += " This is WRONG."
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _run(cfg: Path):  # type: ignore[no-untyped-def]
    return run_session(load_config(cfg), progress=False)


@pytest.mark.parametrize(("backend", "structured"), [("openai", True), ("openai", False), ("anthropic", True),
                                                     ("anthropic", False)])
def test_graded_verdicts_are_asked_for_parsed_and_stored(tmp_path: Path, backend: str, structured: bool) -> None:
    n = 12
    graded_pairs(tmp_path, n)
    with JudgeServer(policy="better") as server:
        url = server.openai_url if backend == "openai" else server.anthropic_url
        cfg = write_config(tmp_path, backend=backend, base_url=url,
                           judge={"verdict_scale": "graded", "structured_output": structured})
        outcome = _run(cfg)
    assert outcome.complete and outcome.stats.made == 2 * n
    body = server.bodies[0]
    system = body["system"][0]["text"] if backend == "anthropic" else body["messages"][0]["content"]
    assert "`A>>B` if Answer A is much better" in system and "`A=B`" not in system  # forced choice: no tie
    if structured:
        schema = (body["tools"][0]["input_schema"] if backend == "anthropic"
                  else body["response_format"]["json_schema"]["schema"])
        assert schema["properties"]["verdict"]["enum"] == ["A>>B", "A>B", "B>A", "B>>A"]
    calls = stored_calls(tmp_path / "swapjudge.db")
    for c in calls:
        # the better answer wins every call; "much" exactly where the weaker one says WRONG
        assert c["verdict"] == ("first" if c["first"] == "good" else "second")
        assert c["strength"] == (2 if int(c["item"][1:]) % WRONG_EVERY == 0 else 1)
    with Store(tmp_path / "swapjudge.db") as store:
        records = run_record_set(store, outcome.run_id)
    graded = analyze_records(records)[0].to_dict()["graded"]
    assert graded["pairs"] == n and graded["strength_consistency"]["rate"] == 1.0
    assert graded["strong_flips"] == graded["weak_flips"] == 0


def test_a_first_slot_judge_makes_strong_flips_and_fails_the_gate(tmp_path: Path) -> None:
    graded_pairs(tmp_path, 10)
    with JudgeServer(policy="first") as server:
        outcome = _run(write_config(tmp_path, base_url=server.openai_url, judge={"verdict_scale": "graded"}))
    with Store(tmp_path / "swapjudge.db") as store:
        result = analyze_records(run_record_set(store, outcome.run_id))[0]
    out = result.to_dict()
    assert out["graded"]["strong_flips"] == 10 and out["graded"]["flip_direction"]["strong"]["first"] == 10
    assert not result.gate.passed and out["win_rate"] is None  # direction decides the gate


def test_the_cache_keeps_the_strength(tmp_path: Path) -> None:
    graded_pairs(tmp_path, 6)
    with JudgeServer(policy="better") as server:
        _run(write_config(tmp_path, base_url=server.openai_url, judge={"verdict_scale": "graded"}))
        first = server.total
        # another tie policy is another run of the same judge on the same prompts: every reply from the cache
        outcome = _run(write_config(tmp_path, base_url=server.openai_url, judge={"verdict_scale": "graded"},
                                    tie_policy="exclude"))
        assert server.total == first
    calls = stored_calls(tmp_path / "swapjudge.db", outcome.run_id)
    assert {c["source"] for c in calls} == {"cache"}
    assert sorted(c["strength"] for c in calls) == sorted([2] * 4 + [1] * 8)


def test_a_plain_scale_changes_no_hash(tmp_path: Path) -> None:
    write_pairs(tmp_path, 2)
    plain = load_config(write_config(tmp_path, base_url="http://127.0.0.1:9/v1", name="a.yaml"))
    spelled = load_config(write_config(tmp_path, base_url="http://127.0.0.1:9/v1", name="b.yaml",
                                       judge={"verdict_scale": "plain"}))
    graded = load_config(write_config(tmp_path, base_url="http://127.0.0.1:9/v1", name="c.yaml",
                                      judge={"verdict_scale": "graded"}))
    assert (plain.config_hash, plain.judge_hash) == (spelled.config_hash, spelled.judge_hash)
    assert plain.judge_hash != graded.judge_hash
    template = [run_provenance(c.normalised(), structured=True)["template_hash"] for c in (plain, graded)]
    assert template[0] != template[1]


def test_an_unknown_scale_is_a_config_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    write_pairs(tmp_path, 2)
    cfg = write_config(tmp_path, base_url="http://127.0.0.1:9/v1", judge={"verdict_scale": "fivefold"})
    done = subprocess.run([sys.executable, "-m", "swapjudge", "run", str(cfg), "--dry-run"], capture_output=True,
                          text=True)
    assert done.returncode == 2 and "verdict_scale" in done.stderr and "Traceback" not in done.stderr


def test_a_store_of_schema_3_gains_the_strength_column(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    Store(db).close()
    con = sqlite3.connect(db)
    for table in ("calls", "superseded_calls", "cache"):
        con.execute(f"ALTER TABLE {table} DROP COLUMN strength")
    con.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    con.commit()
    con.close()
    graded_pairs(tmp_path, 3)
    with JudgeServer(policy="better") as server:
        _run(write_config(tmp_path, base_url=server.openai_url, judge={"verdict_scale": "graded"}, store=str(db)))
    assert [c["strength"] for c in stored_calls(db) if c["item"] == "q000"] == [2, 2]
