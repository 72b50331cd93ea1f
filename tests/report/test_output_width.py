"""Output that reads well wherever it goes: folded at a narrow terminal, unwrapped when piped, and never a
Python `None` or a Markdown backtick where a reader sees it."""

from __future__ import annotations

import io
import re
import subprocess
import sys

from rich.console import Console

from conftest import contract_400, pair, write_jsonl
from swapjudge.core.analysis import analyze_records
from swapjudge.probes.segments import segment_analyses
from swapjudge.reading.records import read_records, records_from_dicts
from swapjudge.report import markdown, probe_tables, text
from swapjudge.report.wording import plain

CLI = [sys.executable, "-m", "swapjudge"]


def segments_tables() -> list[probe_tables.Table]:
    """A real segments table (about 110 columns wide) of the MT-Bench gpt-4 calls, by task."""
    records = read_records("examples/mtbench_gpt4_vs_vicuna.jsonl")
    return probe_tables.segments_tables(segment_analyses(records, "task"))


def test_wide_table_folds_at_a_narrow_terminal():
    tables = segments_tables()
    natural = sum(max(len(c), *(len(r[i]) for r in tables[0].rows)) + 2 for i, c in enumerate(tables[0].columns))
    assert natural > 80
    out = io.StringIO()
    probe_tables.print_tables(Console(file=out, force_terminal=True, width=80, color_system=None), tables)
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80
    blocks = [line.rstrip() for line in lines if line.startswith("Segments by task (columns ")]
    assert len(blocks) >= 2 and blocks[0].endswith(f"(columns 1 of {len(blocks)})")
    # every cell is shown whole once per block it belongs to, and the key column is in every block
    body = out.getvalue()
    for row in tables[0].rows:
        assert all(cell in body for cell in row)
    assert body.count("writing") >= len(blocks)


def test_piped_tables_keep_their_natural_width():
    tables = segments_tables()
    out = io.StringIO()
    probe_tables.print_tables(Console(file=out, force_terminal=False, width=80, color_system=None), tables)
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) > 80
    header = next(line for line in lines if line.startswith("segment"))
    assert header.split()[:4] == ["segment", "judge", "pairs", "consistency"]


def test_no_none_when_no_pair_is_complete():
    """Both orders judged, but no usable verdict: consistency has no rate and no band, said in words."""
    rows = [r for i in range(6) for r in pair(f"q{i}", None, None)]
    [result] = analyze_records(records_from_dicts(rows))
    assert result.consistency is not None and result.consistency.band is None
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(text.text_analysis(result))
    md = markdown.markdown_analysis(result)
    for rendered in (out.getvalue(), md):
        assert "None" not in rendered
        assert "n/a (no complete pair)" in rendered


def test_html_report_and_terminal_show_no_backticks(tmp_path):
    """Three systems and a failed gate: the report withholds the ranking with a sentence that names a command;
    the HTML shows it as code, the terminal without the marks."""
    rows = contract_400()
    rows += [{**r, "item": f"{r['item']}-c", "first": r["first"].replace("B", "C"),
              "second": r["second"].replace("B", "C")} for r in contract_400()[:200]]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    page = tmp_path / "r.html"
    done = subprocess.run([*CLI, "report", str(path), "--html", str(page), "--min-consistency", "0.9"],
                          capture_output=True, text=True)
    assert done.returncode == 1, done.stderr  # the gate failed
    html = re.sub(r"<script.*?</script>", "", page.read_text(), flags=re.S)
    assert "<code>swapjudge rank</code>" in html and "`" not in html
    assert ">None<" not in html and "band None" not in html
    assert plain("run `swapjudge probe repeat` first") == "run swapjudge probe repeat first"


def _two_judges(tmp_path):
    """Two real judges of the Shi et al. DevBench calls: Holm-adjusted p-values make the swap table wide."""
    from conftest import shi2024_records

    rows = shi2024_records("DevBench", "claude-3-haiku-20240307") + shi2024_records("DevBench", "gpt-4-0613")
    return write_jsonl(tmp_path / "two.jsonl", rows)


def test_analyze_piped_cuts_no_cell_and_draws_no_endless_rule(tmp_path):
    out = subprocess.run([*CLI, "analyze", str(_two_judges(tmp_path)), "--min-consistency", "0"],
                         capture_output=True, text=True, check=True).stdout
    assert "…" not in out
    assert re.search(r"splits toward slot 1 +\S+ +\S+ +p = \S+, Holm-adjusted \S+", out)  # one unbroken row
    rules = [line for line in out.splitlines() if line.startswith("judge: ")]
    assert len(rules) == 2 and all(len(line) <= 100 for line in rules)


def test_analyze_at_a_narrow_terminal_wraps_words_and_keeps_every_figure(tmp_path):
    analyses = analyze_records(read_records(_two_judges(tmp_path)), min_consistency=0)
    out = io.StringIO()
    text.print_analyses(Console(file=out, force_terminal=True, width=80, color_system=None), analyses)
    body = out.getvalue()
    assert "…" not in body and max(len(line) for line in body.splitlines()) <= 80
    assert all(f"Holm-adjusted {a.flip_direction.p_holm:.3g}" in body for a in analyses)
