"""`swapjudge card` against a real HTTP judge server whose behaviour is known: it names slot 1 on every fourth item
(the task carries a marker) and the better answer (the one containing CORRECT) otherwise. The card's figures must
be those `swapjudge analyze` and `swapjudge agreement` print on the same records (exported from the run's store),
and the figures the server's behaviour implies, counted here from the suite's construction."""

from __future__ import annotations

import html
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binomtest
from typer.testing import CliRunner

from card_helpers import MARK, SUBSETS, write_suite
from judge_server import JudgeServer
from runner_helpers import write_config
from swapjudge.cli import app


def cli(*args: str, ok: tuple[int, ...] = (0,)) -> Any:
    done = CliRunner().invoke(app, list(args))
    assert done.exit_code in ok, (done.exit_code, done.stdout[-2000:], done.stderr[-2000:], done.exception)
    return done


@cache
def _made(directory: str) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], Path]:
    tmp = Path(directory)
    suite, rows = write_suite(tmp)
    with JudgeServer(first_marker=MARK) as server:
        config = write_config(tmp, base_url=server.openai_url, store=str(tmp / "card.db"))
        card = json.loads(cli("card", str(config), "--suite", str(suite), "--format", "json", "--no-progress",
                              "-o", str(tmp / "card.html")).stdout)
    cli("export", "--latest", "--store", str(tmp / "card.db"), "-o", str(tmp / "all.jsonl"))
    records = [json.loads(line) for line in (tmp / "all.jsonl").read_text().splitlines()]
    return card, rows, records, tmp


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[dict[str, Any]],
                                                            list[dict[str, Any]], Path]:
    return _made(str(tmp_path_factory.mktemp("card")))


def test_the_json_names_are_those_scripts_rely_on(made: Any) -> None:
    card = made[0]
    assert card["schema_version"] == 1 and card["kind"] == "judge_card"
    assert {"subsets", "protocol", "references"} <= set(card)
    assert [s["name"] for s in card["subsets"]] == list(SUBSETS)
    for s in card["subsets"]:
        assert {"name", "pairs", "consistency", "flip_direction", "accuracy"} <= set(s)
        assert {"rate", "low", "high", "band", "consistent", "pairs", "independent"} <= set(s["consistency"])
        assert {"first", "second", "first_share", "low", "high", "p_value"} <= set(s["flip_direction"])
        assert {"better_first", "better_second", "both", "consistent", "pairs"} <= set(s["accuracy"])
    protocol = card["protocol"]
    for key in ("orders", "seed", "tie_policy", "rubric_hash", "template_hash", "model", "version", "date",
                "swapjudge_version"):
        assert key in protocol
    assert protocol["model"] == "judge-model" and protocol["tie_policy"] == "half_credit"


@pytest.mark.parametrize("name", SUBSETS)
def test_each_subset_equals_what_analyze_and_agreement_print_on_its_records(made: Any, name: str,
                                                                            tmp_path: Path) -> None:
    card, _, records, _ = made
    subset = next(s for s in card["subsets"] if s["name"] == name)
    mine = tmp_path / f"{name}.jsonl"
    mine.write_text("".join(json.dumps(r) + "\n" for r in records if r["item"].startswith(f"{name}#")))
    analysed = json.loads(cli("analyze", str(mine), "--format", "json", ok=(0, 1)).stdout)
    for key in ("pairs", "outcomes", "consistency", "flip_direction", "accuracy", "verdicts", "gate"):
        assert subset[key] == analysed[key], key
    agreed = json.loads(cli("agreement", str(mine), "--format", "json").stdout)
    agreed = agreed["judges"][0] if "judges" in agreed else agreed
    assert subset["agreement"]["kappa"] == agreed["kappa"]
    assert subset["agreement"]["accuracy"] == agreed["accuracy"]


@pytest.mark.parametrize("name", SUBSETS)
def test_the_figures_are_those_the_servers_behaviour_implies(made: Any, name: str) -> None:
    card, rows, _, _ = made
    subset = next(s for s in card["subsets"] if s["name"] == name)
    mine = [r for r in rows if r["item"].startswith(f"{name}#")]
    marked = [r for r in mine if MARK in r["prompt"]]
    n, m = len(mine), len(marked)
    c = subset["consistency"]
    assert (c["consistent"], c["pairs"]) == (n - m, n)  # slot 1 both times is a flip; the better answer is not
    assert (subset["flip_direction"]["first"], subset["flip_direction"]["second"]) == (m, 0)
    assert subset["flip_direction"]["p_value"] == pytest.approx(binomtest(m, m, 0.5).pvalue)
    acc = subset["accuracy"]
    assert acc["both"] == pytest.approx((n - m) / n)
    assert acc["better_first"] == 1.0  # a slot-1 pick is right whenever the better answer is in slot 1
    assert acc["better_second"] == pytest.approx((n - m) / n)
    ident = subset["identical"]  # identical answers: the CORRECT test ties, and forced choice answers A
    assert ident is not None and ident["second"] == ident["tie"] == 0 and ident["first"] > 0


def test_repeat_stability_and_the_references(made: Any) -> None:
    card = made[0]
    repeat = card["repeat"]
    assert repeat["pairs"] == 4 and repeat["failed_calls"] == 0
    assert repeat["stability"]["unanimous"]["value"] == 1.0  # the server is deterministic
    assert repeat["stability"]["calls_complete"] == 8
    refs = {r["label"]: r for r in card["references"]}
    gpt4 = refs["gpt-4-0613 (Shi et al. 2024)"]
    assert gpt4["shared_subsets"] == [] and "shares no pairs" in gpt4["note"]
    mt = gpt4["subsets"][0]
    assert mt["name"] == "MTBench" and mt["consistency"]["consistent"] == 1957 and mt["consistency"]["pairs"] == 2400
    assert card["differences"] == []  # a suite of one's own shares no pair set with any reference


def test_the_html_card_is_escaped_and_runs_no_script(made: Any) -> None:
    from swapjudge.report.card import render_html

    page = (made[3] / "card.html").read_text()
    assert "<script" not in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in html.unescape(page)
    assert "Judge card" in page and "gpt-4-0613" in page
    hostile = json.loads(json.dumps(made[0]))
    hostile["judge"] = "<img src=x onerror=alert(1)>"
    hostile["subsets"][0]["name"] = "<script>alert(1)</script>"
    page = render_html(hostile)
    assert "<img src=x" not in page and "<script>alert" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_rerunning_resumes_the_run_and_makes_only_the_probe_calls(tmp_path: Path) -> None:
    suite, rows = write_suite(tmp_path, 12)
    with JudgeServer(first_marker=MARK) as server:
        config = write_config(tmp_path, base_url=server.openai_url, store=str(tmp_path / "card.db"))
        cli("card", str(config), "--suite", str(suite), "--no-progress", "--no-references")
        first = server.total
        cli("card", str(config), "--suite", str(suite), "--no-progress", "--no-references")
        again = server.total - first
    identical, repeated = 8, 2 * 4  # the probes are measurements, made again; the run's 24 calls are stored
    assert first == 2 * len(rows) + identical + repeated
    assert again == identical + repeated


def test_dry_run_prices_the_whole_suite_at_sync_and_batch_prices(tmp_path: Path) -> None:
    suite, rows = write_suite(tmp_path, 24)
    prices = {"judge-model": {"input": 2.0, "output": 8.0}}
    with JudgeServer() as server:
        config = write_config(tmp_path, base_url=server.openai_url, prices=prices)
        est = json.loads(cli("card", str(config), "--suite", str(suite), "--dry-run", "--format", "json").stdout)
        text = cli("card", str(config), "--suite", str(suite), "--dry-run").stdout
        # the same suite as an ordinary run's pairs: its dry run is the card's run part
        plain = write_config(tmp_path, base_url=server.openai_url, prices=prices, name="plain.yaml",
                             pairs={"path": str(suite)})
        run_est = cli("run", str(plain), "--dry-run").stdout
        assert server.total == 0
    assert est["run"]["planned_calls"] == 2 * len(rows) and est["probes"]["calls"] == 8 + 2 * 4
    assert est["calls"] == est["run"]["calls_to_make"] + est["probes"]["calls"]
    assert f"{est['run']['input_tokens']:,} in" in run_est and f"{est['run']['calls_to_make']:,}" in run_est
    sync = est["run"]["cost_usd"] + est["probes"]["cost_usd"]
    assert est["cost_usd"]["sync"] == pytest.approx(sync)
    assert est["probes"]["cost_usd"] == pytest.approx(
        (est["probes"]["input_tokens"] * 2.0 + est["probes"]["output_tokens"] * 8.0) / 1e6)
    batch = est["run"]["batch_cached_cost_usd"] if est["run"]["batch_cached_cost_usd"] is not None \
        else est["run"]["batch_cost_usd"]
    assert est["cost_usd"]["batch"] == pytest.approx(batch + est["probes"]["cost_usd"])
    assert est["cost_usd"]["batch"] < est["cost_usd"]["sync"]
    assert "calls in all" in text and "synchronous prices" in text and "batch prices" in text


def test_a_config_without_pairs_and_bad_suites_are_one_line_errors(tmp_path: Path) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text("judge: {backend: openai, model: m, base_url: 'http://127.0.0.1:9/v1'}\nstore: s.db\n")
    done = cli("card", str(config), "--suite", str(tmp_path / "missing.jsonl"), "--dry-run", ok=(2,))
    assert "missing.jsonl" in done.stderr and "Traceback" not in done.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item": "a#1", "prompt": "p", "answers": {"x": "1"}}\n')
    done = cli("card", str(config), "--suite", str(bad), "--dry-run", ok=(2,))
    assert "bad.jsonl:1" in done.stderr and "answers" in done.stderr
    est = json.loads(cli("card", str(config), "--suite", "quick", "--dry-run", "--format", "json").stdout)
    assert est["pairs"] == 32 and est["run"]["planned_calls"] == 64


def test_the_python_api_gives_the_card_and_a_notebook_shows_it(tmp_path: Path) -> None:
    import swapjudge as sj

    suite, _ = write_suite(tmp_path, 12)
    with JudgeServer(first_marker=MARK) as server:
        config = {"judge": {"backend": "openai", "model": "judge-model", "base_url": server.openai_url},
                  "store": str(tmp_path / "api.db")}
        made = sj.card(config, suite=suite, references=False)
    assert isinstance(made.card, sj.JudgeCard)
    assert made.to_dict()["subsets"][0]["consistency"] == made.card.subsets[0].analysis.consistency.to_dict()
    page, md = made._repr_html_(), made._repr_markdown_()
    assert page is not None and "openai:judge-model" in page and "<script" not in page
    assert md is not None and md.startswith("### swapjudge judge card")


def test_a_batch_judge_cards_the_same_as_a_synchronous_one(made: Any, tmp_path: Path) -> None:
    from batch_server import BatchServer

    suite, _ = write_suite(tmp_path)
    with BatchServer() as server:
        server.judge.first_marker = MARK
        config = write_config(tmp_path, base_url=server.openai_url, store=str(tmp_path / "batch.db"),
                              judge={"batch": True, "batch_poll_s": 0.01})
        card = json.loads(cli("card", str(config), "--suite", str(suite), "--format", "json", "--no-progress",
                              "--no-references").stdout)
        assert server.created >= 1 and sum(server.received.values()) == 2 * 48  # the run's calls, by batch
    for batch, sync in zip(card["subsets"], made[0]["subsets"], strict=True):
        for key in ("pairs", "outcomes", "consistency", "flip_direction", "accuracy", "identical", "per_pair"):
            assert batch[key] == sync[key], key


def test_a_suite_without_subsets_or_labels_is_one_subset_without_accuracy(tmp_path: Path) -> None:
    rows = [{"item": f"q{i}", "prompt": f"Question {i}", "answers": {"v1": f"CORRECT {i}", "v2": f"no {i}"}}
            for i in range(10)]
    suite = tmp_path / "plain.jsonl"
    suite.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with JudgeServer() as server:
        config = write_config(tmp_path, base_url=server.openai_url, store=str(tmp_path / "plain.db"))
        card = json.loads(cli("card", str(config), "--suite", str(suite), "--format", "json", "--no-progress",
                              "--no-references", "-o", str(tmp_path / "plain.md")).stdout)
        text = cli("card", str(config), "--suite", str(suite), "--no-progress", "--no-references").stdout
    (only,) = card["subsets"]
    assert only["name"] == "all" and only["accuracy"] is None and only["agreement"] is None
    assert only["consistency"]["consistent"] == 10
    assert "n/a (no labels)" in text
    assert (tmp_path / "plain.md").read_text().startswith("### swapjudge judge card")
