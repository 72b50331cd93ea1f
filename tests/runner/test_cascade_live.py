"""The live escalation cascade (`cascade:` in a run configuration) against two real OpenAI-compatible servers on
127.0.0.1: a cheap judge that flips on some items (it always picks slot 1 when the task holds a marker) and a
strong one. The thresholds come from `escalate` fitted on the same judges' stored calls of a calibration set."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from judge_server import JudgeServer, frame_answers
from swapjudge.cli import app
from swapjudge.config import parse_config

MARK = "FLIPME"
runner = CliRunner()


def _pairs(path: Path, n: int, flipped: set[int], offset: int = 0) -> Path:
    rows = []
    for i in range(offset, offset + n):
        mark = f" {MARK}" if i in flipped else ""
        rows.append({"item": f"q{i:03d}", "prompt": f"Question {i}: what is {i} times 7?{mark}",
                     "answers": {"good": f"CORRECT answer to question {i}: {i * 7}.",
                                 "bad": f"A weaker answer to question {i}: maybe {i * 7 + 1}?"},
                     "label": "good"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _judge(name: str, url: str, **extra: Any) -> dict[str, Any]:
    return {"backend": "openai", "model": f"{name}-model", "name": name, "base_url": url, "max_concurrency": 4,
            "timeout_s": 5, "backoff_s": 0.05, "max_backoff_s": 0.2, **extra}


def _config(tmp: Path, cheap: str, strong: str, *, pairs: str = "pairs.jsonl", cascade: bool = True,
            name: str = "run.yaml", store: str = "swapjudge.db", **extra: Any) -> Path:
    cfg: dict[str, Any] = {"orders": ["ab", "ba"], "judge": _judge("cheap", cheap),
                           "pairs": {"path": pairs, "a": "good", "b": "bad"}, "store": store,
                           "prices": {"cheap-model": {"input": 0.1, "output": 0.4},
                                      "strong-model": {"input": 3.0, "output": 15.0}}}
    if cascade:
        cfg["cascade"] = {"judges": [_judge("strong", strong, **extra)], "alpha": 0.2, "delta": 0.1,
                          "thresholds": "thresholds.json"}
    path = tmp / name
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _calibrate(tmp: Path, cheap: str, strong: str) -> Path:
    """Both judges on 40 labelled calibration items (16 flipped by the cheap judge), thresholds fitted offline."""
    import swapjudge
    from swapjudge.workflows.escalate import escalate, thresholds_document
    from swapjudge.workflows.run import export_records

    _pairs(tmp / "cal.jsonl", 40, set(range(100, 116)), offset=100)
    rows: list[dict[str, Any]] = []
    for judge, url in (("cheap", cheap), ("strong", strong)):
        cfg = {"orders": ["ab", "ba"], "judge": _judge(judge, url), "store": str(tmp / "cal.db"),
               "pairs": {"path": str(tmp / "cal.jsonl"), "a": "good", "b": "bad"}}
        result = swapjudge.run(cfg)
        rows += export_records(tmp / "cal.db", result.run_id)[1]
    records = tmp / "cal_records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    fitted = escalate(records, judges=["cheap", "strong"], alpha=0.2, delta=0.1)
    assert [t.threshold for t in fitted.tiers] == [1.0, 1.0]  # consistency-only confidence: settled or not
    out = tmp / "thresholds.json"
    out.write_text(json.dumps(thresholds_document(fitted)), encoding="utf-8")
    return out


def _item_of(body: dict[str, Any]) -> tuple[str, str]:
    user = body["messages"][1]["content"]
    answers = frame_answers(user)
    assert answers is not None
    item = re.search(r"Question (\d+):", user).group(1)  # type: ignore[union-attr]
    return f"q{int(item):03d}", "good" if "CORRECT" in answers[0] else "bad"


def test_an_existing_configuration_hashes_as_before_and_a_cascade_needs_named_judges(tmp_path: Path) -> None:
    plain = {"judge": {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1"},
             "pairs": {"path": "p.jsonl", "a": "x", "b": "y"}}
    loaded = parse_config(plain, source=tmp_path / "c.yaml")
    # the hash of this configuration before `cascade:` existed (computed on main)
    assert loaded.config_hash == "c82f75960b8e69d9d7d8e9d550f51dca5db5a16ac321617c49468fc1516ac94d"
    with_cascade = parse_config({**plain, "cascade": {"judges": [{"backend": "openai", "model": "n",
                                                                  "base_url": "http://127.0.0.1:1/v1"}],
                                                      "alpha": 0.1, "delta": 0.1, "thresholds": "t.json"}},
                                source=tmp_path / "c.yaml")
    assert with_cascade.config_hash != loaded.config_hash
    assert with_cascade.tier(0).config_hash == loaded.config_hash  # the first judge's run is the plain run
    assert with_cascade.tiers == 2 and with_cascade.tier(1).config.judge.model == "n"
    from swapjudge.errors import ConfigError, SwapjudgeError
    from swapjudge.workflows.run import run as plain_run

    with pytest.raises(SwapjudgeError, match=r"cascade_run\.run_cascade"):  # never only its first judge, silently
        plain_run(with_cascade)

    same = {**plain, "cascade": {"judges": [plain["judge"]], "alpha": 0.1, "delta": 0.1, "thresholds": "t.json"}}
    with pytest.raises(ConfigError, match="own name"):
        parse_config(same, source=tmp_path / "c.yaml")


def test_the_strong_judge_receives_exactly_the_pairs_the_cheap_one_left_unsettled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flipped = {1, 4, 5, 9, 12, 17, 20, 21}
    _pairs(tmp_path / "pairs.jsonl", 24, flipped)
    with JudgeServer(policy="better", first_marker=MARK) as cheap, JudgeServer(policy="better") as strong:
        _calibrate(tmp_path, cheap.openai_url, strong.openai_url)
        cheap_before, strong_before = cheap.total, strong.total
        _config(tmp_path, cheap.openai_url, strong.openai_url)
        monkeypatch.chdir(tmp_path)
        dry = runner.invoke(app, ["run", "run.yaml", "--dry-run", "--format", "json"], catch_exceptions=False)
        assert dry.exit_code == 0, dry.output
        est = json.loads(dry.stdout)
        # calibration: the cheap judge settled 24 of 40, so 40% of the pairs are expected to reach the strong one
        assert est["tiers"][0]["expected_reach"] == 1.0 and est["tiers"][1]["expected_reach"] == pytest.approx(0.4)
        assert est["cascade_usd"] == pytest.approx(est["tiers"][0]["cost_on_all_pairs_usd"]
                                                   + 0.4 * est["tiers"][1]["cost_on_all_pairs_usd"])
        assert est["strongest_alone_usd"] == est["tiers"][1]["cost_on_all_pairs_usd"] > est["cascade_usd"]
        assert cheap.total == cheap_before and strong.total == strong_before  # the dry run calls nothing

        result = runner.invoke(app, ["run", "run.yaml", "--no-progress", "--format", "json"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        out = json.loads(result.stdout)["cascade"]
        cheap_asked = [_item_of(b) for b in cheap.bodies[-(cheap.total - cheap_before):]]
        strong_asked = [_item_of(b) for b in strong.bodies[-(strong.total - strong_before):]]
        # every pair in both orders at the cheap judge; at the strong one exactly the flipped pairs, both orders
        assert sorted(cheap_asked) == sorted((f"q{i:03d}", s) for i in range(24) for s in ("good", "bad"))
        assert sorted(strong_asked) == sorted((f"q{i:03d}", s) for i in flipped for s in ("good", "bad"))
        assert [t["reached"] for t in out["tiers"]] == [24, 8]
        assert [t["settled"] for t in out["tiers"]] == [16, 8]
        assert out["settled"] == 24 and out["unsettled"] == 0 and out["coverage"] == 1.0
        assert out["win_rate"]["worst_case"] == out["win_rate"]["best_case"] == 1.0

        # run again: both tiers read from the store, nothing asked
        again = runner.invoke(app, ["run", "run.yaml", "--no-progress", "--format", "json"], catch_exceptions=False)
        assert again.exit_code == 0 and json.loads(again.stdout)["cascade"]["settled"] == 24
        assert cheap.total - cheap_before == 48 and strong.total - strong_before == 16
    runs = sqlite3.connect(tmp_path / "swapjudge.db").execute("SELECT judge, status FROM runs ORDER BY id").fetchall()
    assert runs == [("cheap", "done"), ("strong", "done")]


def test_pairs_no_judge_settles_are_an_interval_from_worst_to_best_case(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A strong judge that flips too (the same marker): its flips stay unsettled; the win rate is a range over all
    20 pairs, never the rate over the settled ones; people's votes (a labels file) settle what they voted on."""
    flipped = {0, 3, 6, 7, 11}
    _pairs(tmp_path / "pairs.jsonl", 20, flipped)
    with JudgeServer(policy="better", first_marker=MARK) as cheap, \
            JudgeServer(policy="better", first_marker=MARK) as strong_flips:
        with JudgeServer(policy="better") as strong_cal:
            _calibrate(tmp_path, cheap.openai_url, strong_cal.openai_url)
        # the strong judge's configuration is the calibrated one's but for its address: the file's check compares
        # what exported records carry (the judge's name)
        _config(tmp_path, cheap.openai_url, strong_flips.openai_url)
        monkeypatch.chdir(tmp_path)
        result = runner.invoke(app, ["run", "run.yaml", "--no-progress", "--format", "json"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        out = json.loads(result.stdout)["cascade"]
        assert out["settled"] == 15 and out["unsettled"] == 5
        assert sorted(p["item"] for p in out["unsettled_pairs"]) == sorted(f"q{i:03d}" for i in flipped)
        assert {p["reason"] for p in out["unsettled_pairs"]} == {"flip"}
        w = out["win_rate"]
        assert (w["worst_case"], w["best_case"]) == (15 / 20, 20 / 20)  # never 15/15 over the settled pairs
        # one pair per item: the worst case's bound is Wilson's on 15 of 20 (statsmodels, an independent formula)
        from statsmodels.stats.proportion import proportion_confint

        assert w["low"] == pytest.approx(proportion_confint(15, 20, 0.05, method="wilson")[0], abs=1e-9)
        assert w["high"] == 1.0 and w["independent"] == "pairs"
        text = runner.invoke(app, ["run", "run.yaml", "--no-progress"], catch_exceptions=False).stdout
        assert "75.0% to 100.0%" in text and "unsettled 5" in text

        # decide reads the cascade (not its last run alone) and fails closed: the 5 unsettled pairs are losses
        import swapjudge

        decision = {"candidate": "good", "incumbent": "bad", "hypothesis": "superior", "margin": 0.0,
                    "alpha": 0.05, "power": 0.8}
        verdict = swapjudge.decide(tmp_path / "swapjudge.db", decision)
        assert (verdict.counts.pairs, verdict.counts.wins, verdict.counts.losses) == (20, 15, 5)
        assert verdict.judge == "cascade" and any("5 pair(s) no judge settled" in n for n in verdict.notes)
        reverse = swapjudge.decide(tmp_path / "swapjudge.db", {**decision, "candidate": "bad", "incumbent": "good"})
        assert (reverse.counts.wins, reverse.counts.losses) == (0, 20)  # against whichever side is the candidate

        # people voted on two of the unsettled items: one for bad, one for good
        (tmp_path / "people.jsonl").write_text('{"item": "q000", "label": "bad"}\n{"item": "q003", "label": "good"}\n')
        cfg = yaml.safe_load((tmp_path / "run.yaml").read_text())
        cfg["cascade"]["labels"] = "people.jsonl"
        (tmp_path / "run.yaml").write_text(yaml.safe_dump(cfg))
        voted = json.loads(runner.invoke(app, ["run", "run.yaml", "--no-progress", "--format", "json"],
                                         catch_exceptions=False).stdout)["cascade"]["win_rate"]
        assert voted["settled_by_people"] == 2 and voted["unsettled"] == 3
        assert (voted["worst_case"], voted["best_case"]) == (16 / 20, 19 / 20)
        # the people's votes are stored with the tier runs: decide counts them, and the other 3 as losses
        people = swapjudge.decide(tmp_path / "swapjudge.db", decision)
        assert (people.counts.pairs, people.counts.wins, people.counts.losses) == (20, 16, 4)

    # a cascade whose strong judge's run is unfinished is refused, not decided on the cheap judge's pairs
    con = sqlite3.connect(tmp_path / "swapjudge.db")
    last = con.execute("SELECT MAX(id) FROM runs").fetchone()[0]
    con.execute("UPDATE runs SET status='running' WHERE id=?", (last,))
    con.commit()
    con.close()
    from swapjudge.errors import InputError

    with pytest.raises(InputError, match="is running: run the cascade's configuration again"):
        swapjudge.decide(tmp_path / "swapjudge.db", decision, run=last - 1)


def test_refuses_thresholds_fitted_at_another_level_or_for_other_judges(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _pairs(tmp_path / "pairs.jsonl", 4, set())
    doc = {"format": "swapjudge-escalate-thresholds/1", "alpha": 0.1, "delta": 0.1, "tiers": [
        {"judge": "cheap", "threshold": 1.0, "configuration": {"hash": "x"}},
        {"judge": "strong", "threshold": 1.0, "configuration": {"hash": "y"}}]}
    (tmp_path / "thresholds.json").write_text(json.dumps(doc))
    _config(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["run", "run.yaml", "--no-progress"], catch_exceptions=False)
    assert result.exit_code == 2 and "cascade.alpha" in result.output and "0.1" in result.output
    doc["alpha"] = 0.2
    doc["tiers"][1]["judge"] = "other"
    (tmp_path / "thresholds.json").write_text(json.dumps(doc))
    result = runner.invoke(app, ["run", "run.yaml", "--no-progress"], catch_exceptions=False)
    assert result.exit_code == 2 and "cascade.thresholds" in result.output and "'other'" in result.output


def _calls(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(db, timeout=5)
        n = con.execute("SELECT COUNT(*) FROM calls c JOIN runs r ON r.id = c.run_id WHERE r.judge = 'strong'"
                        ).fetchone()[0]
        con.close()
        return int(n)
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
def test_sigkill_in_the_strong_tier_then_resume_pays_no_call_twice(tmp_path: Path) -> None:
    flipped = set(range(0, 60, 2))  # 30 pairs, 60 calls reach the strong judge
    _pairs(tmp_path / "pairs.jsonl", 60, flipped)
    with JudgeServer(policy="better", first_marker=MARK) as cheap, \
            JudgeServer(policy="better", delay_s=0.05) as strong:
        _calibrate(tmp_path, cheap.openai_url, strong.openai_url)
        cheap_before, strong_before = cheap.total, strong.total
        cfg = _config(tmp_path, cheap.openai_url, strong.openai_url)
        cmd = [sys.executable, "-c", "from swapjudge.cli import main; main()", "run", str(cfg), "--no-progress",
               "--format", "json"]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        db = tmp_path / "swapjudge.db"
        deadline = time.monotonic() + 60
        while _calls(db) < 20 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        stored_before = _calls(db)
        assert 0 < stored_before < 60  # killed inside the strong judge's run
        asked_before = strong.total - strong_before
        done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)["cascade"]
        assert out["settled"] == 60 and out["tiers"][1]["resumed"] is True
        asked = [_item_of(b) for b in strong.bodies[-(strong.total - strong_before):]]
        # every strong call asked once, but those in flight at the kill (at most max_concurrency) asked again
        assert len(set(asked)) == 60
        assert strong.total - strong_before - 60 <= asked_before - stored_before <= 4
        assert cheap.total - cheap_before == 120  # the cheap tier was done: read from the store, not asked again
    con = sqlite3.connect(db)
    assert con.execute("SELECT judge, status FROM runs ORDER BY id").fetchall() == [("cheap", "done"),
                                                                                     ("strong", "done")]
    assert con.execute("SELECT COUNT(*) FROM calls c JOIN runs r ON r.id=c.run_id WHERE r.judge='strong'"
                       ).fetchone() == (60,)
