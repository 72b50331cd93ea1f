"""History, compare and adaptive swapping on runs stored by the real embedded test model (SmolLM2-135M-Instruct,
`backend: local`, verdicts from next-token log-probabilities) judging real labelled LLMBar pairs. Every figure
the commands print is checked against the stored verdicts, recomputed here from the store's rows."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from swapjudge.cli import app
from swapjudge.config import load_config
from swapjudge.core.adaptive import verdict_confidence
from swapjudge.core.stats import binomial_p
from swapjudge.drift.history import STALE_SWAP, compare_runs
from swapjudge.judges.model_files import TEST_MODEL
from swapjudge.runner.session import run_session
from swapjudge.store import Store
from swapjudge.store.analysis import analyze_run

ROOT = Path(__file__).resolve().parents[2]
NATURAL = ROOT.parent / "shared" / "data" / "llmbar" / "dataset__LLMBar__Natural.json"
# The four shortest of the first 40 pairs (task and both answers under 160 characters): a quick test. Every figure
# below is recomputed from the stored rows, so the count of pairs only has to leave the adaptive run both swapped
# and unswapped pairs (asserted).
SHORT = (20, 33, 34, 35)
N_PAIRS = len(SHORT)
RUBRIC_1 = "Prefer the answer that follows the instruction and is correct.\nIgnore length."
RUBRIC_2 = "Prefer the answer that follows the instruction and is correct.\nPenalise padding.\nIgnore length."
THRESHOLDS = (0.55, 0.6, 0.65, 0.7, 0.8)
cli = CliRunner()


def _setup(directory: Path) -> None:
    if not NATURAL.is_file():
        pytest.fail(f"real data missing: {NATURAL} (the tests need ../shared/data, see its README.md)")
    data = json.loads(NATURAL.read_text(encoding="utf-8"))
    rows = [{"item": f"n{i}", "prompt": data[i]["input"], "answers": {"o1": data[i]["output_1"],
                                                                       "o2": data[i]["output_2"]},
             "label": "o1" if data[i]["label"] == 1 else "o2"} for i in SHORT]
    (directory / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _config(directory: Path, name: str, rubric: str, judge: dict[str, Any] | None = None, **top: Any) -> Path:
    cfg = {"schema": "forced_choice", "tie_policy": "half_credit", "rubric": rubric, "store": "runs.db",
           "judge": {"backend": "local", "model": TEST_MODEL, "n_threads": 1, "n_ctx": 4096, "max_concurrency": 1,
                     "timeout_s": 300, **(judge or {})},
           "pairs": {"path": "pairs.jsonl", "a": "o1", "b": "o2"}, **top}
    path = directory / name
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _calls(db: Path, run_id: int) -> list[dict[str, Any]]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    rows = [dict(r) for r in con.execute("SELECT * FROM calls WHERE run_id=?", (run_id,))]
    con.close()
    for r in rows:
        r["probabilities"] = json.loads(r["probabilities"]) if r["probabilities"] else None
    return rows


def _named(c: dict[str, Any]) -> str:
    return str(c["first"] if c["verdict"] == "first" else c["second"])


def _per_pair(calls: list[dict[str, Any]], label: dict[str, str]) -> dict[str, dict[str, Any]]:
    """item -> first call's confidence, consistent, right in both orders (forced choice: no ties)."""
    by_item: dict[str, dict[int, dict[str, Any]]] = {}
    for c in calls:
        by_item.setdefault(c["item"], {})[c["order_index"]] = c
    out = {}
    for item, orders in by_item.items():
        if set(orders) != {0, 1}:
            continue
        a, b = _named(orders[0]), _named(orders[1])
        out[item] = {"conf": verdict_confidence(orders[0]["verdict"], orders[0]["probabilities"]),
                     "consistent": a == b, "right": a == b == label[item]}
    return out


@pytest.mark.slow
def test_history_compare_and_adaptive_on_local_model_runs(tmp_path: Path) -> None:
    _setup(tmp_path)
    label = {json.loads(x)["item"]: json.loads(x)["label"] for x in (tmp_path / "pairs.jsonl").read_text().splitlines()}
    db = tmp_path / "runs.db"
    r1 = run_session(load_config(_config(tmp_path, "r1.yaml", RUBRIC_1)), progress=False)
    r2 = run_session(load_config(_config(tmp_path, "r2.yaml", RUBRIC_2)), progress=False)
    # the rubric edited again and judged in one order only: no fresh swap measurement
    r3 = run_session(load_config(_config(tmp_path, "r3.yaml", RUBRIC_2 + "\nBe brief.", orders="random")),
                     progress=False)
    assert (r1.stats.made, r2.stats.made, r3.stats.made) == (2 * N_PAIRS, 2 * N_PAIRS, N_PAIRS)
    c1, c2 = _calls(db, r1.run_id), _calls(db, r2.run_id)
    assert all(c["error"] is None and c["verdict"] in ("first", "second") and c["probabilities"] for c in c1 + c2)
    p1, p2 = _per_pair(c1, label), _per_pair(c2, label)
    assert len(p1) == len(p2) == N_PAIRS

    # compare: the rubric edit is the only change, and the paired figures are the stored verdicts' own
    with Store(db) as st:
        cmp = compare_runs(st, r1.run_id, r2.run_id)
        stale = compare_runs(st, r2.run_id, r3.run_id)
    assert [c.what for c in cmp.changes] == ["rubric"] and "+Penalise padding." in cmp.rubric_diff
    t = cmp.consistency_test
    both = sum(p1[i]["consistent"] and p2[i]["consistent"] for i in p1)
    only_1 = sum(p1[i]["consistent"] and not p2[i]["consistent"] for i in p1)
    only_2 = sum(not p1[i]["consistent"] and p2[i]["consistent"] for i in p1)
    assert (t.pairs, t.both, t.only_a, t.only_b, t.neither) == (N_PAIRS, both, only_1, only_2,
                                                                 N_PAIRS - both - only_1 - only_2)
    assert t.p_value == binomial_p(only_1, only_1 + only_2)
    diffs = {d.what: d for d in cmp.paired_differences}
    cons = diffs["consistency"]
    assert cons.difference == pytest.approx((only_2 - only_1) / N_PAIRS)
    assert cons.low is not None and cons.high is not None and cons.low <= cons.difference <= cons.high
    right_1 = sum(p1[i]["right"] for i in p1)
    right_2 = sum(p2[i]["right"] for i in p2)
    assert diffs["accuracy"].rate_a == pytest.approx(right_1 / N_PAIRS)
    assert diffs["accuracy"].rate_b == pytest.approx(right_2 / N_PAIRS)
    first_1 = sum(c["verdict"] == "first" for c in c1)
    first_2 = sum(c["verdict"] == "first" for c in c2)
    fs = diffs["first_slot_rate"]
    assert fs.units == 2 * N_PAIRS and fs.difference == pytest.approx((first_2 - first_1) / (2 * N_PAIRS))
    moved = cmp.to_dict()["behaviour"]
    assert moved["consistency"]["before"]["k"] == sum(p["consistent"] for p in p1.values())
    # the single-order run under another rubric: flagged, its changes named
    assert {c.what for c in stale.changes} >= {"rubric", "orders"}
    assert any(f.startswith(STALE_SWAP) and "rubric" in f for f in stale.flags)
    hist = cli.invoke(app, ["history", "--store", str(db), "-f", "json"], catch_exceptions=False)
    rows = json.loads(hist.stdout)
    assert [r["run"] for r in rows] == [1, 2, 3] and rows[2]["flags"][0].startswith(STALE_SWAP)
    assert rows[0]["consistency"]["rate"] == pytest.approx(sum(p["consistent"] for p in p1.values()) / N_PAIRS)

    # adaptive swapping offline on both two-order runs: calls saved and flips missed at each threshold
    for run_id, pairs in ((r1.run_id, p1), (r2.run_id, p2)):
        res = cli.invoke(app, ["adaptive", str(run_id), "--store", str(db), "-f", "json",
                               "--thresholds", ",".join(map(str, THRESHOLDS))], catch_exceptions=False)
        assert res.exit_code == 0, res.output
        data = json.loads(res.stdout)
        assert data["pairs"] == N_PAIRS and data["without_confidence"] == 0
        got = {r["threshold"]: (r["calls_saved"], r["flips_missed"], r["consistency_reported"])
               for r in data["thresholds"]}
        want = {}
        for th in THRESHOLDS:
            kept = [p for p in pairs.values() if p["conf"] < th]  # swapped: the run measures these only
            want[th] = (N_PAIRS - len(kept), sum(p["conf"] >= th and not p["consistent"] for p in pairs.values()),
                        sum(p["consistent"] for p in kept) / len(kept) if kept else None)
        assert got == want

    # the adaptive option in a live run (another judge version: a new judge, nothing served from the cache):
    # the swap is made exactly for the pairs whose stored first verdict is below the threshold
    threshold = sorted(p["conf"] for p in p1.values())[N_PAIRS // 2]
    ad = run_session(load_config(_config(tmp_path, "ad.yaml", RUBRIC_1, judge={"version": "adaptive"},
                                 adaptive_swap=round(threshold, 4))), progress=False)
    ca = _calls(db, ad.run_id)
    heads = {c["item"]: c for c in ca if c["order_index"] == 0}
    swapped = {c["item"] for c in ca if c["order_index"] == 1}
    assert len(heads) == N_PAIRS and {c["source"] for c in ca} == {"api"}
    unsure = {i for i, c in heads.items() if verdict_confidence(c["verdict"], c["probabilities"]) < round(threshold, 4)}
    assert swapped == unsure and ad.stats.adaptive_skipped == N_PAIRS - len(unsure)
    assert ad.stats.made == N_PAIRS + len(unsure) and 0 < len(unsure) < N_PAIRS
    with Store(db) as st:
        (analysis,) = analyze_run(st, ad.run_id)
    pa = _per_pair(ca, label)
    assert analysis.consistency is not None and analysis.consistency.pairs == len(unsure)
    assert analysis.consistency.consistent == sum(p["consistent"] for p in pa.values())
    wr = analysis.win_rate
    assert wr is not None and wr.pairs == N_PAIRS
    single = [_named(heads[i]) for i in heads if i not in swapped]
    o1_wins = sum(n == "o1" for n in single) + sum(p["consistent"] and _named(heads[i]) == "o1" for i, p in pa.items())
    assert wr.a_wins == o1_wins
    assert any(n.startswith("adaptive swapping") and "selected subset" in n for n in analysis.notes)


@pytest.mark.slow
def test_anchored_scoring_through_the_local_model_is_stored_and_listed(tmp_path: Path) -> None:
    """The embedded model scores in `logprobs` mode: the level whose token is most likely after `Score: `. Its
    stored probabilities decide its stored scores; a re-run against its own pin is stable; history lists both."""
    refs = [("r1", "What is the capital of France?", "Paris."), ("r2", "What is 7 times 8?", "54"),
            ("r3", "Name a primary colour.", "Blue is a primary colour.")]
    (tmp_path / "reference.jsonl").write_text(
        "".join(json.dumps({"item": i, "prompt": p, "answer": a}) + "\n" for i, p, a in refs), encoding="utf-8")
    cfg = {"judge": {"backend": "local", "model": TEST_MODEL, "n_threads": 1, "n_ctx": 2048},
           "criteria": "Judge correctness first.", "scale": {1: "wrong", 2: "partly right", 3: "right"},
           "exemplars": [{"name": "low", "task": "Add 2 and 3.", "answer": "It is 6.", "score": 1},
                         {"name": "high", "task": "Add 2 and 3.", "answer": "2 + 3 = 5.", "score": 3}],
           "reference": "reference.jsonl", "store": "anchors.db"}
    (tmp_path / "anchors.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    first = cli.invoke(app, ["anchors", str(tmp_path / "anchors.yaml"), "-o", str(tmp_path / "pinned.jsonl"),
                             "-f", "json"], catch_exceptions=False)
    data = json.loads(first.stdout)
    con = sqlite3.connect(tmp_path / "anchors.db")
    rows = con.execute("SELECT item, exemplar, score, raw, probabilities FROM anchor_scores WHERE run_id=1").fetchall()
    con.close()
    assert len(rows) == 2 + len(refs)
    for item, exemplar, score, raw, probs in rows:
        p = json.loads(probs)
        assert set(p) == {"1", "2", "3"} and 0 < sum(p.values()) <= 1
        assert score == int(max(p, key=p.__getitem__)) and raw == f"Score: {score}"
        if not exemplar:
            assert data["scores"][item] == score
    # flagged exactly when the model does not reproduce an exemplar's stated score (no pin yet)
    off = {k: v for k, v in data["exemplars"].items() if v["scored"] != v["stated"]}
    assert data["flagged"] is bool(off) and first.exit_code == (1 if off else 0)
    again = cli.invoke(app, ["anchors", str(tmp_path / "anchors.yaml"), "--pinned", str(tmp_path / "pinned.jsonl"),
                             "-f", "json"], catch_exceptions=False)
    check = json.loads(again.stdout)["check"]
    assert check["mean_shift"] == 0 and check["moved"]["k"] == 0  # the same model, greedy: the same levels
    hist = json.loads(cli.invoke(app, ["history", "--store", str(tmp_path / "anchors.db"), "-f", "json"]).stdout)
    assert [(h["kind"], h["anchored_run"]) for h in hist] == [("anchors", 1), ("anchors", 2)]
    assert hist[1]["check"]["items"] == len(refs) and hist[0]["judge"] == f"local:{TEST_MODEL}"
    # a generate-mode reply must be a `Score: N` line (the tiny model's greedy replies are not: one clear line)
    cfg["judge"]["mode"] = "generate"
    (tmp_path / "gen.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    gen = cli.invoke(app, ["anchors", str(tmp_path / "gen.yaml"), "-f", "json"])
    if gen.exit_code == 2:
        assert "no reference answer got a parsable `Score: N` reply" in gen.stderr
        assert len(gen.stderr.strip().splitlines()) == 1
    else:
        got = json.loads(gen.stdout)
        assert got["unparsed"] == sum(v is None for v in got["scores"].values()) < len(refs)
