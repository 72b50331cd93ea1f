"""The report's ranking, length-probe and panel sections, and a report built from a real `swapjudge run` store,
rendered in headless Chromium. Every figure is compared with the command that computes it on its own."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from test_report_html import console_problems, parse, render, run_cli

from conftest import shared_data, shi2024_records, write_jsonl
from runner_helpers import write_config
from swapjudge.report.wording import interval, pct

MTBENCH_JUDGES = ("gpt-4-0613", "gpt-3.5-turbo-1106", "gemini-pro")


def values(doc: Any, name: str) -> list[float]:
    return [float(v) for v, _ in doc.figures[name]]


def texts(doc: Any, name: str) -> list[str]:
    return [t for _, t in doc.figures[name]]


@pytest.mark.slow
def test_three_mtbench_judges_ranking_and_panel_match_their_commands(tmp_path: Path) -> None:
    records = write_jsonl(tmp_path / "mtbench3.jsonl",
                          [r for j in MTBENCH_JUDGES for r in shi2024_records("MTBench", j)])
    page, md = tmp_path / "r.html", tmp_path / "r.md"
    # gpt-3.5 and gemini fail the 70% gate on MT-Bench: the report is written and the command exits 1
    done = run_cli("report", str(records), "--html", str(page), "--markdown", str(md), "--rank-bootstrap", "120",
                   "--rank-seed", "3", "--max-pairs", "0", ok=(1,))
    assert "gate: gemini-pro" in done.stderr and "gate: gpt-4-0613" not in done.stderr
    ranked = json.loads(run_cli("rank", str(records), "--judge", "gpt-4-0613", "--bootstrap", "120", "--seed", "3",
                                "--format", "json").stdout)
    html = page.read_text()
    doc = parse(html)

    # the forest plot's table holds exactly `swapjudge rank`'s figures, in its order (only the judge that passed)
    systems = ranked["systems"]
    assert len(systems) == 31 and html.count('alt="forest plot of the ranking"') == 1
    assert texts(doc, "ranking.system") == [s["system"] for s in systems]
    for name in ("score", "low", "high", "rank"):
        assert values(doc, f"ranking.{name}") == [s[name] for s in systems], name
    assert texts(doc, "ranking.rank_range") == [
        str(s["rank_low"]) if s["rank_low"] == s["rank_high"] else f"{s['rank_low']}–{s['rank_high']}"
        for s in systems]
    assert "120 bootstrap rounds over items (seed 3)" in html
    assert f"theta = {ranked['tie_parameter']['value']:.3f}" in html
    # the judges that failed the gate get no ranking, said out loud
    assert html.count("Ranking of 31 systems</h3><p class=\"fail\">withheld: the judge failed") == 2

    panel = json.loads(run_cli("panel", str(records), "--format", "json").stdout)
    assert values(doc, "panel.disagreement") == [panel["disagreement"]["rate"]]
    assert values(doc, "panel.common_pairs") == [panel["common_pairs"]] and panel["common_pairs"] == 2371
    for judge in panel["judges"]:
        c = judge["consistency"]
        assert f"<td>{judge['judge']}</td><td class=\"n\">{judge['pairs']['complete']:,}</td>" \
               f"<td class=\"n\">{pct(c['rate'])}</td><td class=\"n\">{interval(c['low'], c['high'])}</td>" in html
    # no labels: the accuracy columns are left out rather than shown as n/a
    assert "accuracy (both)" not in html

    summary = md.read_text()
    top = systems[0]
    assert (f"| 1 | gpt-4 | {top['score']:+.2f} | {top['low']:+.2f} … {top['high']:+.2f} | "
            f"{top['rank_low']}{'' if top['rank_low'] == top['rank_high'] else '–' + str(top['rank_high'])} |"
            in summary)
    assert "<details><summary>Ranking of 31 systems (rao-kupper" in summary
    d = panel["disagreement"]
    assert (f"**Panel of 3 judges** over 2,371 common pairs: their order-cancelled verdicts differ on "
            f"{pct(d['rate'])} ({interval(d['low'], d['high'])})") in summary
    assert summary.count("withheld: the judge failed the self-consistency gate") == 2


def test_two_systems_get_no_ranking_and_zero_rounds_no_intervals(tmp_path: Path) -> None:
    rows = shi2024_records("MTBench", "gpt-4-0613")
    two = write_jsonl(tmp_path / "two.jsonl", [r for r in rows if "gpt-4" in (r["first"], r["second"])])
    page = tmp_path / "two.html"
    run_cli("report", str(two), "--html", str(page), "--markdown", str(tmp_path / "two.md"))
    assert "Ranking of" not in page.read_text() and "Ranking of" not in (tmp_path / "two.md").read_text()
    three = write_jsonl(tmp_path / "three.jsonl",
                        [r for r in rows if {r["first"], r["second"]} & {"gpt-4", "claude-v1"}])
    run_cli("report", str(three), "--html", str(page), "--rank-bootstrap", "0")
    html = page.read_text()
    assert "Ranking of 3 systems" in html and "no bootstrap: no intervals" in html
    assert 'data-figure="ranking.low"' not in html and html.count('data-figure="ranking.score"') == 3


def llmbar_pairs(directory: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The 100 LLMBar Natural pairs (real answers, gold labels) as a runner pairs file."""
    source = json.loads(shared_data("llmbar", "dataset__LLMBar__Natural.json").read_text())
    rows = [{"item": f"n{i:03d}", "prompt": p["input"],
             "answers": {"output_1": p["output_1"], "output_2": p["output_2"]}, "label": f"output_{p['label']}"}
            for i, p in enumerate(source)]
    path = write_jsonl(directory / "pairs.jsonl", rows)
    return path, rows


def length_judge(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A planted judge: it names the longer answer in both orders, except on every fourth item, where it names
    slot 1 whatever sits there (a flip toward slot 1); equal lengths are a tie."""
    out = []
    for i, row in enumerate(rows):
        one, two = row["answers"]["output_1"], row["answers"]["output_2"]
        longer = "output_1" if len(one) > len(two) else "output_2" if len(two) > len(one) else None
        for first, second in (("output_1", "output_2"), ("output_2", "output_1")):
            verdict = ("first" if i % 4 == 3 else "tie" if longer is None else
                       "first" if longer == first else "second")
            out.append({"judge": "length-judge", "item": row["item"], "first": first, "second": second,
                        "verdict": verdict, "raw": f"Verdict: [[{verdict}]]"})
    return out


@pytest.mark.slow
def test_report_of_a_stored_run_in_a_browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pairs, rows = llmbar_pairs(tmp_path)
    write_jsonl(tmp_path / "replay.jsonl", length_judge(rows))
    write_config(tmp_path, base_url="", store="run.db",
                 judge={"backend": "replay", "path": "replay.jsonl", "model": None, "base_url": None},
                 pairs={"path": "pairs.jsonl", "a": "output_1", "b": "output_2"})
    monkeypatch.chdir(tmp_path)
    analysis = json.loads(run_cli("run", "run.yaml", "--no-progress", "--format", "json").stdout)
    assert analysis["consistency"]["rate"] == 0.75 and analysis["flip_direction"]["first"] == 25
    page, md = tmp_path / "run.html", tmp_path / "run.md"
    # No --pairs: the run's own pairs file, unchanged since the run, gives the answer texts.
    run_cli("report", "run.db", "--html", str(page), "--markdown", str(md))

    dom, log = render(page, tmp_path)
    assert console_problems(log) == []
    doc = parse(dom)
    assert doc.root.get("data-script") == "ran" and doc.root.get("data-js-errors") is None
    cons, flips, win = analysis["consistency"], analysis["flip_direction"], analysis["win_rate"]
    for name, exact in (("consistency.rate", cons["rate"]), ("flip_direction.first_share", flips["first_share"]),
                        ("flip_direction.p_value", flips["p_value"]), ("win_rate.value", win["value"]),
                        ("pairs.complete", analysis["pairs"]["complete"])):
        assert values(doc, name) == [pytest.approx(exact, rel=1e-12)], name
    assert texts(doc, "win_rate.interval") == [interval(win["low"], win["high"])]
    [(_, sentence)] = doc.figures["headline"]
    assert f"output_1 scores {pct(win['value'])} (a split counts half) against output_2" in sentence

    # provenance: the run's configuration hash as the store holds it
    with sqlite3.connect(tmp_path / "run.db") as con:
        [(config_hash,)] = con.execute("SELECT config_hash FROM runs").fetchall()
    assert re.search(rf"<dt>config_hash</dt><dd>{config_hash}</dd>", dom)
    assert config_hash[:12] in md.read_text()

    # the planted length preference: every consistent win went to the longer answer
    apart = [i for i, r in enumerate(rows) if i % 4 != 3
             and abs(len(r["answers"]["output_1"]) - len(r["answers"]["output_2"])) > 100]
    assert values(doc, "length.prefer_longer") == [1.0]
    assert texts(doc, "length.prefer_longer") == ["100.0%"]
    assert re.search(rf"the longer answer won <span [^>]+>100.0%</span> \({len(apart)} of {len(apart)};", dom)
    run_cli("export", "--store", "run.db", "--latest", "-o", "out.jsonl")
    probe = json.loads(run_cli("probe", "length", "out.jsonl", "--pairs", str(pairs), "--a", "output_1",
                               "--b", "output_2", "--length-controlled", "--format", "json").stdout)
    assert probe["prefer_longer"]["k"] == probe["prefer_longer"]["n"] == len(apart)
    # splits worth 1/2 keep the outcome from being separated by length: a finite, positive slope
    assert probe["slope"]["slope"] > 0
    assert values(doc, "length.slope") == [pytest.approx(probe["slope"]["slope"], rel=1e-9)]
    lc = probe["length_controlled"]
    assert f"<td>length-controlled win rate of output_1 vs output_2</td><td class=\"n\">{pct(lc['value'])}</td>" in dom
    assert "Length probe (" in md.read_text() and "the longer answer won 100.0%" in md.read_text()
    assert re.search(rf"<dt>pairs_file</dt><dd>{re.escape(str(pairs))}</dd>", dom)

    # Once the pairs file has changed, its texts are not trusted to be the ones judged: the report says so.
    pairs.write_text(pairs.read_text().replace("output_1", "output_one", 1))
    run_cli("report", "run.db", "--html", str(page))
    changed = page.read_text()
    assert "Length probe" not in changed and "changed since the run (give --pairs" in changed


def test_length_fields_without_texts_give_the_length_section(tmp_path: Path) -> None:
    """Real gpt-4 verdicts on MT-Bench (gpt-4 vs vicuna), with planted lengths: the consistent winner of a pair
    wrote 900 characters and the loser 300, both answers of a split pair 500."""
    rows = [r for r in shi2024_records("MTBench", "gpt-4-0613") if "gpt-4" in (r["first"], r["second"])]
    named: dict[str, set[str | None]] = {}
    for r in rows:
        named.setdefault(r["item"], set()).add({"first": r["first"], "second": r["second"]}.get(r["verdict"] or "",
                                                                                              "tie"))
    winner = {item: next(iter(n)) for item, n in named.items() if len(n) == 1 and n != {"tie"}}
    for r in rows:
        w = winner.get(r["item"])
        r["first_length"] = 500 if w is None else 900 if r["first"] == w else 300
        r["second_length"] = 500 if w is None else 900 if r["second"] == w else 300
    records = write_jsonl(tmp_path / "lengths.jsonl", rows)
    page, md = tmp_path / "l.html", tmp_path / "l.md"
    run_cli("report", str(records), "--html", str(page), "--markdown", str(md))
    doc = parse(page.read_text())
    assert values(doc, "length.prefer_longer") == [1.0] and len(winner) == 66 + 1  # gpt-4: 66 wins, 1 loss
    assert f"the longer answer won 100.0% of {len(winner)} consistent wins" in md.read_text()
    assert "length-matched pairs (|d| &lt;= 20)</td><td class=\"n\">13</td>" in page.read_text()


def test_length_section_without_consistent_wins_says_so(tmp_path: Path) -> None:
    """A judge that always names slot 1 has no consistent win: the length sentence says the preference is not
    measured instead of printing n/a figures."""
    rows = []
    for i in range(6):
        for first, second in (("x", "y"), ("y", "x")):
            rows.append({"item": f"q{i}", "first": first, "second": second, "verdict": "first",
                         "first_length": 900 if first == "x" else 200, "second_length": 900 if second == "x" else 200})
    records = write_jsonl(tmp_path / "slot1.jsonl", rows)
    page, md = tmp_path / "s.html", tmp_path / "s.md"
    run_cli("report", str(records), "--html", str(page), "--markdown", str(md), "--min-consistency", "0")
    html = page.read_text()
    assert "No consistent win where the lengths differ by more than 100 chars" in html
    assert 'data-figure="length.prefer_longer"' not in html
    assert "no consistent win where lengths differ by more than 100 chars" in md.read_text()


def test_hostile_system_names_are_text_in_the_ranking(tmp_path: Path) -> None:
    names = ["<script>alert(1)</script>", "a|b</td>", "<img src=x onerror=alert(2)>"]
    rows: list[dict[str, Any]] = []
    for i in range(12):  # every pair of the three systems on every item; names[0] always wins, names[2] loses
        for x, y in ((0, 1), (0, 2), (1, 2)):
            rows += [{"item": i, "first": names[x], "second": names[y], "verdict": "first"},
                     {"item": i, "first": names[y], "second": names[x], "verdict": "second"}]
    records = write_jsonl(tmp_path / "hostile3.jsonl", rows)
    page, md = tmp_path / "h.html", tmp_path / "h.md"
    run_cli("report", str(records), "--html", str(page), "--markdown", str(md), "--rank-bootstrap", "20")
    html, summary = page.read_text(), md.read_text()
    assert "<script>alert" not in html and "<img src=x" not in html and "a|b</td>" not in html
    assert texts(parse(html), "ranking.system") == names  # escaped in the page, read back as the names
    assert "| 1 | &lt;script&gt;alert(1)&lt;/script&gt; |" in summary and "| 2 | a\\|b&lt;/td&gt; |" in summary
