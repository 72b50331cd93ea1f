"""Run history: provenance stored with every run, the schema-1 migration, `history` and `compare` on stored runs
made with the replay backend and a real HTTP judge server on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from conftest import pair, write_jsonl
from judge_server import JudgeServer
from runner_helpers import write_config, write_pairs
from swapjudge.cli import app
from swapjudge.config import load_config
from swapjudge.drift.history import (  # mcnemar: variants' McNemar
    NEVER_MEASURED,
    STALE_SWAP,
    compare_runs,
    mcnemar,
    newcombe_paired,
    run_history,
)
from swapjudge.judges.prompts import FORCED_CHOICE_RUBRIC, template_hash
from swapjudge.runner.provenance import open_store as Store  # the store as the runner opens it: provenance filled
from swapjudge.runner.session import run_session
from swapjudge.store import PROVENANCE_COLUMNS, SCHEMA_VERSION
from swapjudge.store.schema import _SCHEMA

cli = CliRunner()
RUBRIC_1 = "Prefer the answer that is correct.\nIgnore style."
RUBRIC_2 = "Prefer the answer that is correct.\nPenalise verbosity.\nIgnore style."


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_mcnemar_exact_on_hand_counts() -> None:
    a = [True] * 4 + [True] * 4 + [False] * 2 + [False] * 3
    b = [True] * 4 + [False] * 4 + [True] * 2 + [False] * 3
    t = mcnemar(a, b)  # type: ignore[arg-type]
    assert (t.pairs, t.both, t.only_a, t.only_b, t.neither) == (13, 4, 4, 2, 3)
    # exact two-sided binomial of 4 of 6 discordant pairs against 1/2: 2 * P(X >= 4) = 2 * 22/64
    assert t.p_value == pytest.approx(44 / 64)
    assert t.difference == pytest.approx(2 / 13)  # consistency under a minus under b


def test_store_schema_1_is_migrated_with_provenance(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.executescript(_SCHEMA)  # the schema-1 tables, exactly as swapjudge 1 made them
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    config = {"schema": "allow_tie", "tie_policy": "exclude", "chain_of_thought": False,
              "judge": {"backend": "openai", "model": "gpt-x", "structured_output": True, "version": "2024-05"},
              "rubric": {"text": "Old rubric."}}
    con.execute("INSERT INTO runs (config_hash, judge_hash, judge, config_json, config_path, pairs_digest, seed, "
                "orders, total_calls, started_at, status) VALUES ('c', 'j', 'openai:gpt-x', ?, NULL, 'd', 's', "
                "'both', 2, '2026-01-01T00:00:00+00:00', 'done')", (json.dumps(config),))
    con.execute("INSERT INTO runs (config_hash, judge_hash, judge, config_json, config_path, pairs_digest, seed, "
                "orders, total_calls, started_at, status) VALUES ('c2', 'j', 'openai:gpt-x', ?, NULL, 'd', 's', "
                "'both', 2, '2026-01-02T00:00:00+00:00', 'done')", (json.dumps({**config, "rubric": None}),))
    for item, a_first, b_first in (("1", "first", "second"), ("2", "first", "first")):
        for first, second, verdict, order in (("a", "b", a_first, 0), ("b", "a", b_first, 1)):
            con.execute("INSERT INTO calls (run_id, item, first, second, order_index, verdict, source, created_at) "
                        "VALUES (1, ?, ?, ?, ?, ?, 'api', '2026-01-01')", (item, first, second, order, verdict))
    con.commit()
    con.close()
    with Store(db) as st:
        first, second = st.runs()
        entries = run_history(st)
    # the migrated run's stored calls are analysed under its registered policy: one consistent pair of two
    assert entries[0].analysis is not None and entries[0].analysis.consistency is not None
    assert entries[0].analysis.consistency.rate == pytest.approx(0.5)
    assert entries[0].setup.tie_policy == "exclude" and entries[1].error is not None  # run 2 has no calls
    assert first.judge_model == "gpt-x" and first.judge_version == "2024-05"
    assert first.rubric_text == "Old rubric." and first.rubric_hash == _sha("Old rubric.")
    assert first.schema == "allow_tie" and first.tie_policy == "exclude"
    assert first.template_hash == template_hash(allow_tie=True, chain_of_thought=False, structured=True)
    assert first.pair_set_hash is None  # needs the pairs file: unknown for a migrated run
    # no rubric configured: the built-in one was in effect
    assert second.rubric_text is not None and second.rubric_text.startswith("Decide which")
    con = sqlite3.connect(db)
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == SCHEMA_VERSION == "4"
    cols = {r[1] for r in con.execute("PRAGMA table_info(runs)")}
    con.close()
    assert set(PROVENANCE_COLUMNS) <= cols
    with Store(db) as st:  # opening again changes nothing
        assert [r.to_dict() for r in st.runs()] == [first.to_dict(), second.to_dict()]


def test_runs_carry_provenance(tmp_path: Path) -> None:
    write_pairs(tmp_path, 6)
    # the same pairs, lines in another order: another file digest, the same pair set
    lines = (tmp_path / "pairs.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "shuffled.jsonl").write_text("".join(reversed(lines)))
    with JudgeServer(policy="better") as server:
        c1 = write_config(tmp_path, base_url=server.openai_url, name="a.yaml", judge={"version": "snap-1"})
        c2 = write_config(tmp_path, base_url=server.openai_url, name="b.yaml", judge={"structured_output": False},
                          pairs={"path": "shuffled.jsonl", "a": "good", "b": "bad"}, rubric=RUBRIC_1)
        run_session(load_config(c1), progress=False)
        run_session(load_config(c2), progress=False)
    with Store(tmp_path / "swapjudge.db") as st:
        r1, r2 = st.runs()
    assert (r1.judge_model, r1.judge_version, r2.judge_version) == ("judge-model", "snap-1", None)
    assert r1.rubric_text == FORCED_CHOICE_RUBRIC and r1.rubric_hash == _sha(FORCED_CHOICE_RUBRIC)
    assert r2.rubric_text == RUBRIC_1 and r2.rubric_hash == _sha(RUBRIC_1)
    assert r1.template_hash == template_hash(allow_tie=False, chain_of_thought=False, structured=True)
    assert r2.template_hash == template_hash(allow_tie=False, chain_of_thought=False, structured=False)
    assert r1.template_hash != r2.template_hash
    assert (r1.schema, r1.tie_policy) == ("forced_choice", "half_credit")
    assert r1.pairs_digest != r2.pairs_digest
    assert r1.pair_set_hash is not None and r1.pair_set_hash == r2.pair_set_hash


# ---- a hand-made pair of runs through the replay backend ------------------------------------------------


def _pairs_file(directory: Path, n: int = 10) -> None:
    rows = [{"item": f"q{i}", "prompt": f"task {i}", "answers": {"a": f"answer a{i}", "b": f"answer b{i}"},
             "label": "a"} for i in range(n)]
    write_jsonl(directory / "pairs.jsonl", rows)


def _replay_records(directory: Path, spec: list[tuple[str, str]]) -> None:
    """spec[i] = (verdict with a in slot 1, verdict with b in slot 1) for item q{i}."""
    rows: list[dict[str, Any]] = []
    for i, (a_first, b_first) in enumerate(spec):
        rows += pair(f"q{i}", a_first, b_first, a="a", b="b")
    write_jsonl(directory / "judge.jsonl", rows)


def _config(directory: Path, name: str, rubric: str, **top: Any) -> Path:
    cfg: dict[str, Any] = {"judge": {"backend": "replay", "path": "judge.jsonl"}, "rubric": rubric,
                           "pairs": {"path": "pairs.jsonl", "a": "a", "b": "b"}, "store": "runs.db", **top}
    path = directory / name
    path.write_text(yaml.safe_dump(cfg))
    return path


A_WINS, B_WINS, FLIP_FIRST = ("first", "second"), ("second", "first"), ("first", "first")


@pytest.fixture()
def four_runs(tmp_path: Path) -> Path:
    """Run 1: rubric 1; run 2: the rubric edited, the judge now flips other pairs; run 3: one order only under
    another template (chain of thought); run 4: one order only under run 2's setup."""
    _pairs_file(tmp_path)
    _replay_records(tmp_path, [A_WINS] * 8 + [FLIP_FIRST] * 2)
    run_session(load_config(_config(tmp_path, "r1.yaml", RUBRIC_1)), progress=False)
    # the same judge file path (the same judge), new contents: only the rubric changed in the setup
    _replay_records(tmp_path, [A_WINS] * 4 + [FLIP_FIRST] * 4 + [B_WINS] * 2)
    run_session(load_config(_config(tmp_path, "r2.yaml", RUBRIC_2)), progress=False)
    run_session(load_config(_config(tmp_path, "r3.yaml", RUBRIC_2, orders="random", chain_of_thought=True)),
                progress=False)
    run_session(load_config(_config(tmp_path, "r4.yaml", RUBRIC_2, orders="random")), progress=False)
    return tmp_path / "runs.db"


def test_compare_detects_the_rubric_edit_and_tests_the_shared_pairs(four_runs: Path) -> None:
    with Store(four_runs) as st:
        cmp = compare_runs(st, 1, 2)
    assert [c.what for c in cmp.changes] == ["rubric"]
    assert "+Penalise verbosity." in cmp.rubric_diff
    t = cmp.consistency_test
    # consistent under both: q0-q3; only run 1: q4-q7; only run 2: q8-q9
    assert (t.pairs, t.both, t.only_a, t.only_b, t.neither) == (10, 4, 4, 2, 0)
    assert t.p_value == pytest.approx(44 / 64)
    acc = cmp.accuracy_test
    assert acc is not None and (acc.both, acc.only_a, acc.only_b, acc.neither) == (4, 4, 0, 2)
    assert acc.p_value == pytest.approx(2 / 16)
    moved = cmp.to_dict()["behaviour"]
    assert moved["consistency"]["before"]["rate"] == pytest.approx(0.8)
    assert moved["consistency"]["after"]["rate"] == pytest.approx(0.6)
    # first-slot rate over calls: run 1 12 of 20, run 2 14 of 20
    assert moved["first_slot_rate"]["before"]["rate"] == pytest.approx(0.6)
    assert moved["first_slot_rate"]["after"]["rate"] == pytest.approx(0.7)
    assert moved["first_slot_rate"]["difference"] == pytest.approx(0.1)
    assert moved["accuracy"]["before"]["rate"] == pytest.approx(0.8)
    assert moved["accuracy"]["after"]["rate"] == pytest.approx(0.4)
    assert moved["tie_rate"]["after"]["rate"] == 0.0
    lo, hi = moved["consistency"]["after"]["low"], moved["consistency"]["after"]["high"]
    assert lo < 0.6 < hi
    assert cmp.flags == ()
    # paired differences (run 2 minus run 1) on the same units, with the counts of the paired tables
    diffs = {d.what: d for d in cmp.paired_differences}
    c, f, a = diffs["consistency"], diffs["first_slot_rate"], diffs["accuracy"]
    assert (c.units, c.both, c.only_a, c.only_b, c.neither) == (10, 4, 4, 2, 0)
    assert c.difference == pytest.approx(-0.2) and c.low is not None and c.high is not None
    assert -1 <= c.low < -0.2 < c.high and c.low < 0 < c.high  # McNemar's p 0.69: no evidence of a move
    # calls: slot 1 named under both 10, only run 1: q8-q9 with a first; only run 2: q4-q7 with b first
    assert (f.units, f.both, f.only_a, f.only_b, f.neither) == (20, 10, 2, 4, 4)
    assert f.difference == pytest.approx(0.1) and f.rate_a == pytest.approx(0.6) and f.rate_b == pytest.approx(0.7)
    assert (a.units, a.both, a.only_a, a.only_b, a.neither) == (10, 4, 4, 0, 2)
    assert a.difference == pytest.approx(-0.4) and a.high is not None and a.low is not None and a.low < -0.4 < a.high
    # the paired interval is narrower than two independent samples' would be when the runs agree on most units
    assert c.high - c.low < (moved["consistency"]["after"]["high"] - moved["consistency"]["after"]["low"]) * 2
    res = cli.invoke(app, ["compare", "1", "2", "--store", str(four_runs)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    text = " ".join(res.stdout.split())
    assert (f"swap-consistency: 80.0% -> 60.0% on 10 shared pairs: -20.0 points [{c.low * 100:+.1f}, "
            f"{c.high * 100:+.1f}]") in text
    data = json.loads(cli.invoke(app, ["compare", "1", "2", "--store", str(four_runs), "-f", "json"]).stdout)
    assert data["paired"]["differences"]["first_slot_rate"]["difference"] == pytest.approx(0.1)


def test_newcombe_paired_interval_covers_at_the_nominal_rate() -> None:
    """Simulated paired tables: the 95% interval covers the true difference about 95% of the time (a sign
    error in the correlation term, or ignoring it, pushes strongly paired data to near 100%)."""
    rng = np.random.default_rng(7)
    for probs in ([0.7, 0.06, 0.04, 0.2], [0.5, 0.1, 0.25, 0.15]):
        true = probs[2] - probs[1]
        hits = 0
        for table in rng.multinomial(40, probs, size=800):
            diff, low, high = newcombe_paired(*(int(x) for x in table))
            assert diff is not None and low is not None and high is not None and -1 <= low <= diff <= high <= 1
            hits += low <= true <= high
        # method 10's continuity-corrected correlation is conservative on small, strongly paired tables (0.986 at
        # n = 40 here); without the correction this was 0.975 or below
        assert 0.925 <= hits / 800 <= 0.99, (probs, hits / 800)
    assert newcombe_paired(0, 0, 0, 0) == (None, None, None)
    # every unit true under both runs: difference 0 with a symmetric interval
    d, lo, hi = newcombe_paired(12, 0, 0, 0)
    assert d == 0 and lo is not None and hi is not None and lo == pytest.approx(-hi) and hi > 0


def test_history_flags_a_single_order_run_under_another_template(four_runs: Path) -> None:
    with Store(four_runs) as st:
        entries = run_history(st)
        cmp = compare_runs(st, 2, 3)
    assert [e.run_id for e in entries] == [1, 2, 3, 4]
    assert entries[0].flags == () and entries[1].flags == ()
    assert entries[0].analysis is not None and entries[0].analysis.consistency is not None
    assert entries[0].analysis.consistency.rate == pytest.approx(0.8)
    assert entries[1].analysis is not None and entries[1].analysis.flip_direction.first == 4
    assert entries[2].flags == (f"{STALE_SWAP} (run 2; changed since: judge, template)",)
    assert entries[3].flags == ("position preference taken from run 2 (same judge, rubric and template)",)
    assert any(f.startswith(STALE_SWAP) for f in cmp.flags)
    assert {c.what for c in cmp.changes} == {"judge_settings", "template", "orders"}


def test_history_of_a_store_that_never_measured_the_swap(tmp_path: Path) -> None:
    _pairs_file(tmp_path, 4)
    _replay_records(tmp_path, [A_WINS] * 4)
    run_session(load_config(_config(tmp_path, "r.yaml", RUBRIC_1, orders="random")), progress=False)
    with Store(tmp_path / "runs.db") as st:
        (entry,) = run_history(st)
    assert entry.flags == (NEVER_MEASURED,)


def test_cli_history_and_compare(four_runs: Path) -> None:
    res = cli.invoke(app, ["history", "--store", str(four_runs), "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["run"] for r in rows] == [1, 2, 3, 4]
    assert rows[0]["consistency"]["rate"] == pytest.approx(0.8)
    assert rows[0]["win_rate"]["value"] == pytest.approx(0.9)  # half credit: 8 a wins + 2 splits of 10
    assert rows[0]["gate"]["passed"] is True
    assert rows[1]["setup"]["rubric_hash"] == _sha(RUBRIC_2)
    assert rows[2]["flags"][0].startswith(STALE_SWAP)
    text = cli.invoke(app, ["history", "--store", str(four_runs)], catch_exceptions=False)
    assert "80.0%" in text.stdout and "passed" in text.stdout
    md = cli.invoke(app, ["history", "--store", str(four_runs), "--format", "markdown"], catch_exceptions=False)
    assert md.stdout.startswith("# Run history") and md.stdout.count("\n| ") == 5
    res = cli.invoke(app, ["compare", "1", "2", "--store", str(four_runs)], catch_exceptions=False)
    assert res.exit_code == 0
    assert "rubric:" in res.stdout and "+Penalise verbosity." in res.stdout
    assert "only run 1 4, only run 2 2" in res.stdout and "p = 0.688" in res.stdout
    js = cli.invoke(app, ["compare", "1", "2", "--store", str(four_runs), "-f", "json"], catch_exceptions=False)
    assert json.loads(js.stdout)["paired"]["consistency"]["only_b"] == 2
    bad = cli.invoke(app, ["compare", "1", "9", "--store", str(four_runs)])
    assert bad.exit_code == 2 and "no run 9" in bad.stderr
    missing = cli.invoke(app, ["history", "--store", str(four_runs.parent / "nope.db")])
    assert missing.exit_code == 2 and "no run store" in missing.stderr


def test_compare_says_when_the_pairs_changed(four_runs: Path) -> None:
    directory = four_runs.parent
    rows = [json.loads(line) for line in (directory / "pairs.jsonl").read_text().splitlines()]
    rows[0]["answers"]["b"] = "a rewritten answer b0"
    write_jsonl(directory / "pairs.jsonl", rows)
    run_session(load_config(directory / "r2.yaml"), progress=False)  # run 5: run 2's setup on the edited pairs
    with Store(four_runs) as st:
        cmp = compare_runs(st, 2, 5)
        entries = run_history(st)
    assert [c.what for c in cmp.changes] == ["pairs"]
    assert any(f.startswith("the pairs differ between the runs") for f in cmp.flags)
    assert cmp.consistency_test.pairs == 10 and cmp.consistency_test.only_a == cmp.consistency_test.only_b == 0
    assert entries[4].flags == ()


def test_paired_accuracy_counts_a_consistent_tie_on_a_tie_label_as_right() -> None:
    from swapjudge.drift.history import paired_differences
    from swapjudge.reading.records import records_from_dicts

    # run A: a consistent tie on each tie-labelled item (right); run B: A both times there (wrong)
    run_a = [*pair(1, "first", "second", label="A"), *pair(2, "tie", "tie", label="tie"),
             *pair(3, "tie", "tie", label="tie")]
    run_b = [*pair(1, "first", "second", label="A"), *pair(2, "first", "second", label="tie"),
             *pair(3, "tie", "tie", label="tie")]
    diffs = {d.what: d for d in paired_differences(records_from_dicts(run_a), records_from_dicts(run_b))}
    acc = diffs["accuracy"]
    assert acc.units == 3 and (acc.both, acc.only_a, acc.only_b, acc.neither) == (2, 1, 0, 0)
