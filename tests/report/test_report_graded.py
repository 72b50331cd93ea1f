"""The graded sections of text, Markdown and HTML: the figures are the JSON analysis', a lean is said only
when its test rejects, and arena-hard's convention is shown beside the honest figure, labelled, never the
headline. The HTML is loaded in headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path

from test_report_html import console_problems, parse, render, run_cli

from swapjudge.report.wording import interval, pct

# (level with a in slot 1, level with b in slot 1): 30 strong consistent a wins, 12 weak flips toward slot 1,
# 2 strong flips (one each way), 6 pairs that agree in direction only
LEVELS = {"A>>B": ("first", 2), "A>B": ("first", 1), "A=B": ("tie", None), "B>A": ("second", 1),
          "B>>A": ("second", 2)}
PAIRS = ([("A>>B", "B>>A")] * 30 + [("A>B", "A>B")] * 12 + [("A>>B", "A>>B"), ("B>>A", "B>>A")]
         + [("A>>B", "B>A")] * 6)


def graded_file(tmp_path: Path) -> Path:
    rows = []
    for i, (la, lb) in enumerate(PAIRS):
        for first, second, level in (("cand", "base", la), ("base", "cand", lb)):
            verdict, strength = LEVELS[level]
            rows.append({"item": f"q{i}", "first": first, "second": second, "verdict": verdict,
                         "strength": strength})
    path = tmp_path / "graded.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_text_and_markdown_say_what_the_graded_figures_support(tmp_path: Path) -> None:
    path = graded_file(tmp_path)
    pick = ["--a", "cand", "--b", "base"]
    doc = json.loads(run_cli("analyze", str(path), *pick, "--format", "json").stdout)
    g, w = doc["graded"], doc["win_rate"]
    assert g["weak_flips"] == 12 and g["strong_flips"] == 2 and g["flip_direction"]["weak"]["lean"] == "first"
    assert g["flip_direction"]["strong"]["lean"] is None
    text = run_cli("analyze", str(path), *pick).stdout
    md = run_cli("analyze", str(path), *pick, "--format", "markdown").stdout
    for out in (text, md):
        sc = g["strength_consistency"]
        assert f"strength consistency {pct(sc['rate'])} ({interval(sc['low'], sc['high'])}) of 50 graded pairs" \
            in out.replace("Strength", "strength")
        assert "12 weak flip(s), 12 toward slot 1 and 0 toward slot 2" in out
        assert "the weak flips lean toward the first slot" in out
        assert "2 strong flip(s), 1 toward slot 1 and 1 toward slot 2 (p = 1): no clear lean" in out
        assert pct(w["graded"]["value"]) in out and pct(w["arena_hard"]["value"]) in out
        assert "arena-hard convention (×3, orders unreconciled)" in out
        assert "narrower than the data support" in out
    # the headline stays the registered tie policy's figure
    assert doc["win_rate"]["policy"] == "half_credit"
    assert text.splitlines()[1].startswith(f"cand scores {pct(w['value'])}")


def test_html_shows_the_graded_section_with_the_json_figures(tmp_path: Path) -> None:
    path = graded_file(tmp_path)
    page = tmp_path / "report.html"
    run_cli("report", str(path), "--html", str(page), "--a", "cand", "--b", "base")
    expected = json.loads(run_cli("analyze", str(path), "--a", "cand", "--b", "base", "--format", "json").stdout)
    dom, log = render(page, tmp_path)
    assert console_problems(log) == []
    doc = parse(dom)
    rate = doc.figures["graded.strength_consistency.rate"][0]
    assert float(rate[0]) == expected["graded"]["strength_consistency"]["rate"]
    assert float(doc.figures["win_rate.graded.value"][0][0]) == expected["win_rate"]["graded"]["value"]
    assert float(doc.figures["win_rate.arena_hard.value"][0][0]) == expected["win_rate"]["arena_hard"]["value"]
    assert doc.figures["graded.weak_flips"][0][1] == "12 / 0"
    assert "Graded verdicts (50 graded pairs)" in dom and "B&gt;&gt;A" in dom
