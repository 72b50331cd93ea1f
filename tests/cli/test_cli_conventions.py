"""CLI conventions: --version, `-` for stdin and stdout, export to stdout, runs as Markdown, help for users."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.main import get_command
from typer.testing import CliRunner

import swapjudge
from conftest import contract_400, shared_data, write_jsonl
from swapjudge.cli import app

CLI = [sys.executable, "-m", "swapjudge"]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# a subprocess run in another folder must still import this checkout's package
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLES.parent / "src"), os.environ.get("PYTHONPATH", "")])}


def _cli(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], input=stdin, capture_output=True, text=True, cwd=cwd, env=ENV)


def test_version():
    out = _cli("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"swapjudge {swapjudge.__version__}"


def test_analyze_reads_stdin_jsonl_and_csv(tmp_path):
    rows = contract_400()
    jsonl = "".join(json.dumps(r) + "\n" for r in rows)
    from_file = _cli("analyze", str(write_jsonl(tmp_path / "r.jsonl", rows)), "--format", "json",
                     "--min-consistency", "0.5")
    from_stdin = _cli("analyze", "-", "--format", "json", "--min-consistency", "0.5", stdin=jsonl)
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert json.loads(from_stdin.stdout) == json.loads(from_file.stdout)
    csv_text = "item,first,second,verdict\n" + "".join(f"{r['item']},{r['first']},{r['second']},{r['verdict'] or ''}\n"
                                                       for r in rows)
    from_csv = _cli("analyze", "-", "--format", "json", "--min-consistency", "0.5", stdin=csv_text)
    assert json.loads(from_csv.stdout)["consistency"] == json.loads(from_file.stdout)["consistency"]
    bad = _cli("analyze", "-", stdin='{"item": 1, "first": "a", "second": "b", "verdict": "left"}\n')
    assert bad.returncode == 2 and bad.stderr.startswith("error: <stdin>:1: field `verdict`")


def test_import_dash_o_is_stdout_and_pipes_into_analyze(tmp_path):
    csv_path = shared_data("shi2024", "verdicts_both_orders.csv")
    imported = _cli("import", "shi2024", str(csv_path), "-o", "-", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert not (tmp_path / "-").exists() and "to stdout" in imported.stderr
    first = json.loads(imported.stdout.splitlines()[0])
    assert {"item", "first", "second", "verdict", "judge"} <= set(first)
    analysed = _cli("analyze", "-", "--judge", "MTBench/gpt-4-0613", "--format", "json", stdin=imported.stdout)
    # gpt-4-0613 on MT-Bench: 1,957 of 2,400 pairs consistent (examples/README.md)
    assert json.loads(analysed.stdout)["outcomes"]["consistent"] == 1957


def _replay_run(tmp_path: Path) -> None:
    """A real run through the replay backend: the labelled answer always wins, in both orders."""
    pairs = [json.loads(line) for line in (EXAMPLES / "llmbar_natural_30.jsonl").read_text().splitlines()][:6]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    calls = [{"item": p["item"], "first": f, "second": s, "verdict": "first" if f == p["label"] else "second"}
             for p in pairs for f, s in (("output_1", "output_2"), ("output_2", "output_1"))]
    write_jsonl(tmp_path / "oracle.jsonl", calls)
    config = {"protocol": "pairwise", "orders": ["ab", "ba"], "schema": "forced_choice", "tie_policy": "half_credit",
              "judge": {"backend": "replay", "path": str(tmp_path / "oracle.jsonl"), "name": "oracle"},
              "pairs": {"path": str(tmp_path / "pairs.jsonl"), "a": "output_1", "b": "output_2"},
              "store": str(tmp_path / "swapjudge.db")}
    result = swapjudge.run(config)
    assert result.analyses[0].consistency.rate == 1.0 and result.stats["made"] == 12


def test_export_without_o_writes_stdout_and_runs_markdown(tmp_path):
    _replay_run(tmp_path)
    exported = _cli("export", "--latest", "--store", str(tmp_path / "swapjudge.db"), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    records = [json.loads(line) for line in exported.stdout.splitlines()]
    assert len(records) == 12 and {r["judge"] for r in records} == {"oracle"}
    assert list(tmp_path.glob("-")) == []
    md = _cli("runs", "--store", str(tmp_path / "swapjudge.db"), "--format", "markdown")
    lines = md.stdout.splitlines()
    assert lines[0].startswith("| run | started (UTC) | status | judge |") and lines[1].startswith("|---|")
    assert lines[2].startswith("| 1 | ") and "| done | oracle | 12/12 |" in lines[2]


def test_runs_piped_is_not_wrapped(tmp_path):
    _replay_run(tmp_path)
    text = _cli("runs", "--store", str(tmp_path / "swapjudge.db")).stdout
    header, row = text.splitlines()[:2]
    assert header.split()[:3] == ["run", "started", "(UTC)"] and row.split()[0] == "1" and "oracle" in row


def _commands(group: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, command in getattr(group, "commands", {}).items():
        path = (*prefix, name)
        out.append(path)
        out += _commands(command, path)  # a group's subcommands; a plain command has none
    return out


def test_help_speaks_to_users():
    runner = CliRunner()
    commands = _commands(get_command(app))
    assert len(commands) > 20
    for path in [(), *commands]:
        result = runner.invoke(app, [*path, "--help"], terminal_width=200)
        assert result.exit_code == 0, path
        text = result.stdout
        for leak in ("DESIGN", "<bool>", "<list", "<int>", "<Path>", "shared/data", "../shared"):
            assert leak not in text, (path, leak)


@pytest.mark.parametrize("doc", ["README.md", *[f"docs/{p.name}" for p in (EXAMPLES.parent / "docs").glob("*.md")]])
def test_docs_name_no_internal_document(doc):
    text = (EXAMPLES.parent / doc).read_text()
    body = text.split("## Development")[0]  # the contributors' section may name the development data
    assert "DESIGN" not in body and "../shared" not in body


def test_import_and_report_read_stdin(tmp_path):
    csv_text = shared_data("shi2024", "verdicts_both_orders.csv").read_text()
    imported = _cli("import", "shi2024", "-", "-o", "-", stdin=csv_text, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr[-500:]
    analysed = _cli("analyze", "-", "--judge", "MTBench/gpt-4-0613", "--format", "json", stdin=imported.stdout)
    assert json.loads(analysed.stdout)["outcomes"]["consistent"] == 1957
    records = (EXAMPLES / "mtbench_gpt4_vs_vicuna.jsonl").read_text()
    report = _cli("report", "-", "--markdown", "-", stdin=records, cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert report.stdout.startswith("### swapjudge · gpt-4-0613") or "gpt-4-0613" in report.stdout.splitlines()[0]
    assert "1,957" in report.stdout or "81.5%" in report.stdout
    assert "wrote stdout" in report.stderr and list(tmp_path.iterdir()) == []


def test_help_and_calc_load_no_heavy_stack():
    """`--help` and `calc` import none of polars, numpy, scipy, matplotlib, aiohttp, yaml, pydantic (typer's
    converters for plain options are bypassed: cli/coercion.py)."""
    code = """
import sys
sys.argv = {argv!r}
from swapjudge.cli import main
try:
    main()
except SystemExit:
    pass
heavy = ('polars', 'numpy', 'scipy', 'scipy.stats', 'matplotlib', 'aiohttp', 'yaml', 'pydantic')
print(sorted(m for m in heavy if m in sys.modules), file=sys.stderr)
"""
    def loaded(argv: list[str]) -> list[str]:
        out = subprocess.run([sys.executable, "-c", code.format(argv=argv)], capture_output=True, text=True, env=ENV)
        return json.loads(out.stderr.strip().splitlines()[-1].replace("'", '"'))

    assert loaded(["swapjudge", "--help"]) == []
    assert loaded(["swapjudge", "calc", "--help"]) == []
    calc = loaded(["swapjudge", "calc", "--pairs", "400", "--consistent", "292"])
    assert calc == []  # the Wilson interval and the exact test come from the standard library (core/stats.py)


def test_memory_running_out_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    """An allocation numpy cannot make (the bootstrap of a huge file under a ceiling, say) ends the command with
    one line that says what helps, not a traceback."""
    import numpy as np
    import typer

    from swapjudge.cli.app import user_errors

    @user_errors
    def allocate() -> None:
        np.empty(1 << 62, dtype=np.uint8)  # 4 EiB: more than any machine maps

    with pytest.raises(typer.Exit) as ended:
        allocate()
    assert ended.value.exit_code == 2
    said = capsys.readouterr().err.strip()
    assert said.startswith("error: out of memory") and "--engine streaming" in said and "'swapjudge[scale]'" in said
    assert "Traceback" not in said and len(said.splitlines()) == 1


def test_the_streaming_engine_running_out_of_its_memory_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """A DuckDB error past the reader's checks (its memory limit reached, say) is one line naming the engine and
    what helps, not a traceback: a real DuckDB refusal under a tiny limit."""
    import duckdb
    import typer

    from swapjudge.cli.app import user_errors

    @user_errors
    def sort_too_much() -> None:
        con = duckdb.connect(":memory:")
        con.execute("SET memory_limit = '20MB'")
        con.execute("SET temp_directory = ''")  # nowhere to spill
        con.execute("SELECT list(i ORDER BY random()) FROM range(20000000) t(i)").fetchall()

    with pytest.raises(typer.Exit) as ended:
        sort_too_much()
    assert ended.value.exit_code == 2
    said = capsys.readouterr().err.strip()
    assert said.startswith("error: the streaming engine (DuckDB): Out of Memory Error")
    assert "SWAPJUDGE_MEMORY_LIMIT" in said and len(said.splitlines()) == 1
