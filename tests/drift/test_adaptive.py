"""Adaptive swapping: the offline analysis on hand-made calls, and the runner option against a real HTTP judge
server on 127.0.0.1 that returns verdict log-probabilities (OpenAI wire format)."""

from __future__ import annotations

import csv
import json
import math
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge_server import JudgeServer
from runner_helpers import stored_calls, write_config, write_pairs
from swapjudge.cli import app
from swapjudge.config import load_config
from swapjudge.core.adaptive import verdict_confidence
from swapjudge.core.analysis import analyze_records
from swapjudge.drift.adaptive_replay import adaptive_offline
from swapjudge.errors import ConfigError, InputError
from swapjudge.reading.records import read_records, records_from_dicts
from swapjudge.runner.dry_run import estimate
from swapjudge.runner.session import run_session
from swapjudge.store import Store
from swapjudge.store.analysis import analyze_run

N_ITEMS = 30
UNSURE = {i for i in range(N_ITEMS) if i % 4 == 0}  # 8 items


def _pair(item: str, conf: float | None, consistent: bool) -> list[dict[str, Any]]:
    probs = None if conf is None else {"first": conf, "second": 1 - conf}
    head = {"round": 0, "item": item, "first": "a", "second": "b", "order_index": 0, "verdict": "first",
            "probabilities": probs, "source": "api", "error": None}
    swap = {**head, "first": "b", "second": "a", "order_index": 1, "probabilities": None,
            "verdict": "second" if consistent else "first"}
    return [head, swap]


def test_verdict_confidence() -> None:
    assert verdict_confidence("first", {"first": 0.8, "second": 0.1}) == pytest.approx(0.8 / 0.9)
    assert verdict_confidence("tie", {"first": 0.2, "second": 0.2, "tie": 0.6}) == pytest.approx(0.6)
    assert verdict_confidence(None, {"first": 0.8}) is None
    assert verdict_confidence("first", None) is None


def test_offline_calls_saved_and_flips_missed_on_hand_counts() -> None:
    spec = [(0.65, True), (0.75, False), (0.85, True), (0.92, False), (0.97, True), (None, False)]
    calls = [c for i, (conf, ok) in enumerate(spec) for c in _pair(f"q{i}", conf, ok)]
    # an inferred call (an adaptive run's unswapped pair) and a one-order pair are not two-order evidence
    calls += [{**_pair("x", 0.99, True)[0]}, {**_pair("y", 0.99, True)[1], "source": "inferred"}]
    res = adaptive_offline(calls)
    assert res.pairs == 6 and res.without_confidence == 1 and res.consistency.k == 3
    got = {t.threshold: (t.calls_saved, t.flips_missed) for t in res.thresholds}
    assert got == {0.6: (5, 2), 0.7: (4, 2), 0.8: (3, 1), 0.9: (2, 1), 0.95: (1, 0)}
    t06 = res.thresholds[0]
    assert t06.flips == 3 and t06.saved_share == pytest.approx(5 / 12) and t06.missed_share == pytest.approx(2 / 3)
    # an adaptive run at 0.6 swaps only the pair without a confidence, which flipped: it reports 0 of 1
    assert t06.consistency_true == pytest.approx(0.5) and t06.consistency_reported == 0.0 and t06.swapped == 1
    t09 = res.thresholds[3]  # swaps q0, q1, q2 and the one without confidence: 2 of 4 consistent
    assert t09.swapped == 4 and t09.consistency_reported == pytest.approx(0.5)
    assert adaptive_offline(calls, [0.5]).thresholds[0].consistency_reported == 0.0  # only the None pair swapped


class UnsureJudge(JudgeServer):
    """Names the CORRECT answer with probability 0.97, except on every fourth question, where it is unsure
    (probability 0.6) and, on the questions in `flips` (default: all of them), names whatever sits in slot 1:
    those pairs flip."""

    def __init__(self, flips: set[int] = UNSURE, **kw: Any) -> None:
        super().__init__(**kw)
        self.local = threading.local()
        self.flips = flips

    def decide(self, user: str, allow_tie: bool) -> str:
        m = re.search(r"Question (\d+):", user)
        unsure = m is not None and int(m.group(1)) in UNSURE
        self.local.p = 0.6 if unsure else 0.97
        return "A" if unsure and m is not None and int(m.group(1)) in self.flips else super().decide(user, allow_tie)

    def _logprobs(self, text: str, label: str) -> list[dict[str, Any]]:  # type: ignore[override]
        p = self.local.p
        idx = text.rfind(label)
        other = "B" if label == "A" else "A"
        tops = [{"token": label, "logprob": math.log(p)}, {"token": other, "logprob": math.log(1 - p)}]
        return [{"token": text[:idx], "logprob": 0.0, "top_logprobs": []},
                {"token": label, "logprob": math.log(p), "top_logprobs": tops},
                {"token": text[idx + 1:], "logprob": 0.0, "top_logprobs": []}]


def test_runner_adaptive_option_and_offline_analysis(tmp_path: Path) -> None:
    write_pairs(tmp_path, N_ITEMS)
    cli = CliRunner()
    with UnsureJudge(policy="better") as server:
        full = write_config(tmp_path, base_url=server.openai_url, name="full.yaml", judge={"logprobs": True})
        both = run_session(load_config(full), progress=False)
        assert both.stats.made == 2 * N_ITEMS and both.stats.adaptive_skipped == 0
        calls = stored_calls(tmp_path / "swapjudge.db", both.run_id)
        probs = sorted({round(json.loads(c["probabilities"])["first" if c["verdict"] == "first" else "second"], 3)
                        for c in calls})
        assert probs == [0.6, 0.97]
        # offline, on the two-order run: below 0.6 every pair is skipped and all 8 flips are missed; above it only
        # the confident pairs are skipped and no flip is missed
        res = cli.invoke(app, ["adaptive", str(both.run_id), "--store", str(tmp_path / "swapjudge.db"), "-f", "json"],
                         catch_exceptions=False)
        assert res.exit_code == 0, res.output
        data = json.loads(res.stdout)
        assert data["pairs"] == N_ITEMS and data["consistency"]["k"] == N_ITEMS - len(UNSURE)
        rows = {r["threshold"]: (r["calls_saved"], r["flips_missed"]) for r in data["thresholds"]}
        sure = N_ITEMS - len(UNSURE)
        assert rows == {0.6: (N_ITEMS, len(UNSURE)), 0.7: (sure, 0), 0.8: (sure, 0), 0.9: (sure, 0),
                        0.95: (sure, 0)}
        # the runner option: the swapped call only for the unsure pairs
        server.total = 0
        adaptive = write_config(tmp_path, base_url=server.openai_url, name="adaptive.yaml",
                                judge={"logprobs": True, "max_tokens": 50}, adaptive_swap=0.9)
        out = run_session(load_config(adaptive), progress=False)
    assert server.total == N_ITEMS + len(UNSURE)
    assert out.stats.adaptive_skipped == sure and out.stats.made == N_ITEMS + len(UNSURE)
    calls = stored_calls(tmp_path / "swapjudge.db", out.run_id)
    # nothing invented: only the calls really made are stored (every first order, the unsure pairs' swaps)
    assert len(calls) == N_ITEMS + len(UNSURE) and {c["source"] for c in calls} == {"api"}
    swapped = {c["item"] for c in calls if c["order_index"] == 1}
    assert swapped == {f"q{i:03d}" for i in UNSURE}
    with Store(tmp_path / "swapjudge.db") as st:
        (analysis,) = analyze_run(st, out.run_id)
    # swap-consistency over the 8 swapped pairs only, where every pair flipped: 0 of 8, and the gate fails
    assert analysis.consistency is not None and (analysis.consistency.consistent, analysis.consistency.pairs) == (0, 8)
    assert analysis.outcomes.complete == len(UNSURE) and analysis.outcomes.incomplete == sure
    assert not analysis.gate.passed
    # the win rate counts all 30 pairs: 22 single verdicts for the correct answer, 8 flips at half credit
    wr = analysis.ungated_win_rate  # the gate failed: only the explicitly ungated figure carries the rate
    assert wr is not None and (wr.a_wins, wr.b_wins, wr.splits) == (sure, 0, len(UNSURE))
    assert wr.headline.value == pytest.approx((sure + len(UNSURE) / 2) / N_ITEMS)
    assert analysis.win_rate is not None and analysis.win_rate.headline.value is None
    note = next(n for n in analysis.notes if n.startswith("adaptive swapping"))
    assert f"{len(UNSURE)} pair(s) swapped, {sure} judged in one order only" in note and "selected subset" in note
    assert "(0.0%)" in note
    assert not any("without two usable verdicts" in n for n in analysis.notes)
    assert any(n.startswith(f"win rate over all {N_ITEMS} pair(s)") for n in analysis.notes)


def test_adaptive_run_resumes_without_calling_skipped_or_stored_calls(tmp_path: Path) -> None:
    """A kill leaves a subset of the calls, each with its cache entry (both are committed together); the resumed
    run makes exactly the missing first orders and the missing swaps of unsure pairs, nothing else."""
    write_pairs(tmp_path, N_ITEMS)
    db = tmp_path / "swapjudge.db"
    with UnsureJudge(policy="better") as server:
        url = server.openai_url
        cfg = load_config(write_config(tmp_path, base_url=url, judge={"logprobs": True}, adaptive_swap=0.9))
        first = run_session(cfg, progress=False)
        assert server.total == N_ITEMS + len(UNSURE)
        # as if killed during the first orders: four of them (two sure, two unsure) and every swap not stored yet
        lost = ("q001", "q002", "q004", "q008")
        where = f"order_index=1 OR item IN ({','.join('?' * len(lost))})"
        con = sqlite3.connect(db)
        gone = [g[0] for g in con.execute(f"SELECT prompt_hash FROM calls WHERE {where}", lost)]
        assert len(gone) == len(lost) + len(UNSURE)
        con.execute(f"DELETE FROM cache WHERE prompt_hash IN ({','.join('?' * len(gone))})", gone)
        con.execute(f"DELETE FROM calls WHERE {where}", lost)
        con.execute("UPDATE runs SET status='running'")
        con.commit()
        con.close()
        # the dry run counts every swap (the upper bound) and the skips it can already tell from stored firsts
        est = estimate(cfg)
        assert est.calls_to_make == len(lost) + N_ITEMS and est.adaptive_swaps_planned == N_ITEMS
        assert est.adaptive_firsts_known == N_ITEMS - len(lost)
        assert est.adaptive_skips_known == N_ITEMS - len(UNSURE) - 2  # q001 and q002's firsts are not known
        res = CliRunner().invoke(app, ["run", str(tmp_path / "run.yaml"), "--dry-run"], catch_exceptions=False)
        assert res.exit_code == 0 and server.total == N_ITEMS + len(UNSURE)
        text = " ".join(res.stdout.split())
        assert f"of its {N_ITEMS} swapped calls, 20 would be skipped" in text and "4 depend on first verdicts" in text
        server.total = 0
        server.requests.clear()
        again = run_session(cfg, progress=False)
        # the 4 lost first orders, then the 8 unsure pairs' swaps; no sure pair's swap, no call twice
        assert again.resumed and again.run_id == first.run_id
        assert server.total == len(lost) + len(UNSURE) and max(server.requests.values()) == 1
        assert again.stats.adaptive_skipped == N_ITEMS - len(UNSURE) and again.stats.already_stored == N_ITEMS - 4
        listing = CliRunner().invoke(app, ["runs", "--store", str(db)], catch_exceptions=False)
        text = " ".join(listing.stdout.split())
        assert f"{N_ITEMS + len(UNSURE)}/{2 * N_ITEMS}" in text and "(adaptive swap below 0.9)" in text
    calls = stored_calls(db, first.run_id)
    assert len(calls) == N_ITEMS + len(UNSURE)
    fresh = estimate(load_config(write_config(tmp_path, base_url="http://127.0.0.1:9/v1", name="other.yaml",
                                              judge={"logprobs": True, "max_tokens": 9}, adaptive_swap=0.9)))
    # another judge: nothing known, every call to make, no skip known in advance
    assert (fresh.calls_to_make, fresh.adaptive_swaps_planned, fresh.adaptive_firsts_known,
            fresh.adaptive_skips_known) == (2 * N_ITEMS, N_ITEMS, 0, 0)
    # the same judge under another tie policy (a new run): the first verdicts come from the reply cache, and
    # the 22 sure pairs' swaps (never made, so not cached) are known to be skipped
    cached = estimate(load_config(write_config(tmp_path, base_url=url, name="excl.yaml",
                                               judge={"logprobs": True}, adaptive_swap=0.9,
                                               tie_policy="exclude")))
    sure = N_ITEMS - len(UNSURE)
    assert (cached.cached, cached.calls_to_make, cached.adaptive_firsts_known, cached.adaptive_skips_known) == (
        N_ITEMS + len(UNSURE), sure, sure, sure)
    assert {c["item"] for c in calls if c["order_index"] == 1} == {f"q{i:03d}" for i in UNSURE}


def test_adaptive_run_with_no_pair_swapped_measures_nothing(tmp_path: Path) -> None:
    """Every first verdict at least as confident as the threshold: no swap is made, swap-consistency is not
    measured (rather than 100%), the gate fails and the win rate over the single verdicts is withheld."""
    write_pairs(tmp_path, N_ITEMS)
    with UnsureJudge(policy="better") as server:
        cfg = write_config(tmp_path, base_url=server.openai_url, judge={"logprobs": True}, adaptive_swap=0.55)
        out = run_session(load_config(cfg), progress=False)
    assert server.total == N_ITEMS and out.stats.adaptive_skipped == N_ITEMS
    with Store(tmp_path / "swapjudge.db") as st:
        (analysis,) = analyze_run(st, out.run_id)
    assert analysis.consistency is None and not analysis.gate.passed and analysis.withheld
    assert analysis.win_rate is not None and analysis.win_rate.pairs == N_ITEMS
    assert any("No pair was swapped, so swap-consistency is not measured" in n for n in analysis.notes)


def test_adaptive_needs_both_orders(tmp_path: Path) -> None:
    write_pairs(tmp_path, 2)
    cfg = write_config(tmp_path, base_url="http://127.0.0.1:9/v1", orders="random", adaptive_swap=0.9)
    with pytest.raises(ConfigError, match="adaptive_swap"):
        load_config(cfg)
    plain = load_config(write_config(tmp_path, base_url="http://127.0.0.1:9/v1", name="plain.yaml"))
    assert "adaptive_swap" not in plain.normalised()  # absent unless used: configurations hash as before


def test_adaptive_command_needs_probabilities(tmp_path: Path) -> None:
    write_pairs(tmp_path, 4)
    with JudgeServer(policy="better") as server:
        outcome = run_session(load_config(write_config(tmp_path, base_url=server.openai_url)), progress=False)
    res = CliRunner().invoke(app, ["adaptive", str(outcome.run_id), "--store", str(tmp_path / "swapjudge.db")])
    assert res.exit_code == 2 and "no call carries verdict probabilities" in res.stderr
    res = CliRunner().invoke(app, ["adaptive", "1", "--store", str(tmp_path / "swapjudge.db"), "--thresholds", "x"])
    assert res.exit_code == 2 and "--thresholds" in res.stderr


def _cli_json(args: list[str], exit_code: int) -> dict[str, Any]:
    res = CliRunner().invoke(app, [*args, "--format", "json"], catch_exceptions=False)
    assert res.exit_code == exit_code, res.output
    return dict(json.loads(res.stdout))


def _without(path: Path, column: str) -> Path:
    """The same export with one column dropped (JSONL or CSV)."""
    out = path.with_name(f"bare{path.suffix}")
    if path.suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        with out.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, [k for k in rows[0] if k != column])
            writer.writeheader()
            writer.writerows({k: v for k, v in r.items() if k != column} for r in rows)
    else:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert all(column in r for r in rows)
        out.write_text("".join(json.dumps({k: v for k, v in r.items() if k != column}) + "\n" for r in rows),
                       encoding="utf-8")
    return out


@pytest.mark.parametrize(("threshold", "flips", "gate_exit"), [(0.9, {0}, 0), (0.55, set(), 1)])
def test_export_of_adaptive_run_analyses_as_the_run_did(tmp_path: Path, threshold: float, flips: set[int],
                                                        gate_exit: int) -> None:
    """`swapjudge analyze` of an adaptive run's export (JSONL and CSV) prints what `swapjudge run` printed: the
    registered threshold makes the skipped swaps an expected part of the run. Without it they are an error."""
    write_pairs(tmp_path, N_ITEMS)
    db = tmp_path / "swapjudge.db"
    with UnsureJudge(flips=flips, policy="better") as server:
        cfg = write_config(tmp_path, base_url=server.openai_url, judge={"logprobs": True}, adaptive_swap=threshold)
        ran = _cli_json(["run", str(cfg), "--no-progress"], gate_exit)
    run_info = ran.pop("run")
    sure = N_ITEMS - len(UNSURE)
    swapped = len(UNSURE) if threshold == 0.9 else 0
    assert run_info["stats"]["adaptive_skipped"] == N_ITEMS - swapped
    if swapped:
        # 8 unsure pairs swapped, q000 flipped: consistency 7 of 8, the gate passes; the win rate counts the
        # 22 single verdicts and 7 consistent wins for `good` and the flip as a split
        assert (ran["consistency"]["consistent"], ran["consistency"]["pairs"]) == (swapped - 1, swapped)
        counts = ran["win_rate"]["counts"]
        assert ran["gate"]["passed"] and counts == {"a_wins": sure + swapped - 1, "b_wins": 0, "splits": 1,
                                                    "pairs": N_ITEMS}
        assert ran["win_rate"]["value"] == pytest.approx((N_ITEMS - 0.5) / N_ITEMS)
    else:
        # nothing swapped: single-order data, swap-consistency not measured, the gate fails
        assert ran["single_order"] and ran["consistency"]["rate"] is None and not ran["gate"]["passed"]
    assert any(n.startswith(f"adaptive swapping (threshold {threshold:g}): {swapped} pair(s) swapped, "
                            f"{N_ITEMS - swapped} judged in one order only") for n in ran["notes"])
    for suffix in ("jsonl", "csv"):
        export = tmp_path / f"out.{suffix}"
        res = CliRunner().invoke(app, ["export", "--latest", "-o", str(export), "--store", str(db)],
                                 catch_exceptions=False)
        assert res.exit_code == 0, res.output
        # the export registers which system is `a`, so analyze reads it the same way round as the run did
        got = _cli_json(["analyze", str(export)], gate_exit)
        assert got == ran, suffix
        # asking for the other side is honoured
        flipped = _cli_json(["analyze", str(export), "--a", "bad"], gate_exit)
        assert flipped["systems"] == {"a": "bad", "b": "good"} and flipped["consistency"] == ran["consistency"]
        # the acceptance is tied to the registration: without it the skipped swaps are lonely calls again
        # (in single-order data, with no pair swapped, they were always accepted, as single-order data)
        bare = _without(export, "registered_adaptive_swap")
        res = CliRunner().invoke(app, ["analyze", str(bare), "--format", "json"])
        if swapped:
            assert res.exit_code == 2 and "pair judged in one order only" in res.stderr, res.output
        else:
            assert json.loads(res.stdout)["win_rate"] is None and json.loads(res.stdout)["pairs"]["total"] == N_ITEMS


def _call(item: str, first: str, second: str, verdict: str | None, **extra: Any) -> dict[str, Any]:
    return {"item": item, "first": first, "second": second, "verdict": verdict, **extra}


def test_registered_threshold_accepts_skipped_swaps_only(tmp_path: Path) -> None:
    """A record carrying the threshold and a verdict may stand alone (a skipped swap); a failed second call
    leaves its pair incomplete as before; a lonely call without a verdict cannot be a skipped swap."""
    reg = {"registered_adaptive_swap": 0.8, "registered_tie_policy": "half_credit"}
    rows = [_call("q0", "a", "b", "first", **reg), _call("q0", "b", "a", "second", **reg),  # swapped, a wins
            _call("q1", "b", "a", "second", **reg),  # skipped swap: a wins in its one order
            _call("q2", "b", "a", "first", **reg),  # skipped swap: b wins
            _call("q3", "a", "b", "first", **reg), _call("q3", "b", "a", None, **reg)]  # swap made, failed
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for recs in (read_records(path, extras=False), read_records(path), records_from_dicts(rows)):
        assert recs.registered_adaptive_swap == 0.8
        (res,) = analyze_records(recs, a="a", b="b")
        assert (res.outcomes.complete, res.outcomes.incomplete) == (1, 3)
        assert res.win_rate is not None and (res.win_rate.a_wins, res.win_rate.b_wins, res.win_rate.pairs) == (2, 1, 3)
        assert "1 pair(s) without two usable verdicts (failed or unparsable calls) are shown and left out of " \
               "every rate" in res.notes
        assert any(n.startswith("adaptive swapping (threshold 0.8): 1 pair(s) swapped, 2 judged in one order only")
                   for n in res.notes)
    bad = [*rows, _call("q4", "a", "b", None, **reg)]
    path.write_text("".join(json.dumps(r) + "\n" for r in bad), encoding="utf-8")
    with pytest.raises(InputError, match="pair judged in one order only") as err:
        read_records(path, extras=False)
    assert err.value.line == 7
    # a threshold outside (0.5, 1] registers nothing
    odd = [{**r, "registered_adaptive_swap": "yes"} for r in rows]
    with pytest.raises(InputError, match="pair judged in one order only"):
        records_from_dicts(odd)
