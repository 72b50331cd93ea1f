"""`swapjudge CMD` imports only CMD's module: the table that says which module registers which command is true,
a lazily started command prints what the full application prints, and analyze of a small JSON Lines file starts
without polars, DuckDB, scipy, the other commands' modules or the Markdown renderer."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from typer.main import get_command
from typer.testing import CliRunner

from conftest import write_jsonl
from swapjudge.cli import COMMAND_MODULES, COMMANDS, app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "mtbench_gpt4_vs_vicuna.jsonl"
# the subprocess must import this checkout's package
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}


def _python(code: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=ENV, cwd=ROOT)


def test_every_command_of_the_full_application_is_in_the_table():
    assert sorted(get_command(app).commands) == sorted(COMMANDS)  # type: ignore[attr-defined]
    assert set(COMMANDS.values()) == set(COMMAND_MODULES)


def test_each_module_registers_exactly_the_commands_the_table_gives_it():
    # one fresh process imports the command modules one at a time and records what each one added
    code = """
import importlib, json
from swapjudge.cli.app import app
seen, added = set(), {}
for m in json.loads(__import__('sys').argv[1]):
    importlib.import_module('swapjudge.cli.' + m)
    names = {c.name or c.callback.__name__.replace('_', '-') for c in app.registered_commands}
    names |= {g.name for g in app.registered_groups}
    added[m] = sorted(names - seen)
    seen |= names
print(json.dumps(added))
"""
    out = _python(code, json.dumps(list(COMMAND_MODULES)))
    assert out.returncode == 0, out.stderr
    added = json.loads(out.stdout)
    expected = {m: sorted(c for c, owner in COMMANDS.items() if owner == m) for m in COMMAND_MODULES}
    assert added == expected


# what analyze of a small JSON Lines file does without: the other commands' modules, the Markdown renderer, the
# loaders and engines of larger files (polars, DuckDB), scipy (reading.small, workflows.analyze) and pydantic
# (typer's converters, cli/coercion.py)
_HEAVY = """
import sys
from swapjudge.cli import main
try:
    main()
except SystemExit as e:
    code = e.code
else:
    code = 0
heavy = sorted(m for m in sys.modules if m in ('duckdb', 'polars', 'scipy', 'pydantic', 'swapjudge.report.markdown',
                                               'swapjudge.reading.records', 'swapjudge.reading.streaming')
               or (m.startswith('swapjudge.cli.') and m not in ('swapjudge.cli.app', 'swapjudge.cli.analyze',
                                                                'swapjudge.cli.coercion', 'swapjudge.cli.terminal')))
print('HEAVY', heavy, code, file=sys.stderr)
"""


# the two verdicts (a shown first, b shown first) of a pair, by item number modulo 20: 85% consistent
_PATTERN = [("first", "second")] * 10 + [("second", "first")] * 6 + [("tie", "tie"), ("first", "first"),
                                                                     ("tie", "first"), ("second", "second")]


def _two_systems(items: int) -> list[dict[str, str]]:
    """Records of two systems, one pair per item, both orders, a clear lead for `a` and a passing gate."""
    rows = []
    for i in range(items):
        a_first, b_first = _PATTERN[i % len(_PATTERN)]
        rows += [{"item": f"q{i}", "first": "a", "second": "b", "verdict": a_first},
                 {"item": f"q{i}", "first": "b", "second": "a", "verdict": b_first}]
    return rows


def _started(*argv: str) -> tuple[list[str], str]:
    """The heavy modules `swapjudge ARGV` imported (the command must exit 0), and what it printed."""
    out = _python(_HEAVY, *argv)
    line = next((x for x in out.stderr.splitlines() if x.startswith("HEAVY ")), "")
    assert line.endswith(" 0"), out.stderr
    return ast.literal_eval(line.removeprefix("HEAVY ").removesuffix(" 0")), out.stdout


def test_analyze_of_a_small_file_imports_only_what_it_needs(tmp_path: Path):
    # one pair per item: no interval is clustered, so not even scipy's t distribution is asked for
    plain = write_jsonl(tmp_path / "records.jsonl", _two_systems(200))
    for path, needed in ((plain, []), (EXAMPLE, ["scipy"])):  # the example's items hold several pairs each
        for output in ("json", "text"):
            heavy, printed = _started("analyze", str(path), "--format", output)
            assert heavy == needed
            full = CliRunner().invoke(app, ["analyze", str(path), "--format", output])
            assert full.exit_code == 0
            assert printed == full.stdout  # the full application's document, to the byte
            if output == "json":
                assert json.loads(printed)["pairs"]["complete"] > 0


def test_the_import_check_finds_a_heavy_import():
    """Planted: the same command with --fragility reads the records into memory (polars), and the check says so."""
    heavy, _ = _started("analyze", str(EXAMPLE), "--format", "json", "--fragility")
    assert {"polars", "swapjudge.reading.records"} <= set(heavy)


def test_help_of_the_lazy_start_lists_every_command_in_order():
    out = subprocess.run([sys.executable, "-m", "swapjudge", "--help"], capture_output=True, text=True, env=ENV)
    assert out.returncode == 0, out.stderr
    positions = [out.stdout.find(f" {name} ") for name in ("calc", "analyze", "run", "review", "models")]
    assert -1 not in positions and positions == sorted(positions)


def test_a_misspelled_command_still_gets_the_suggestion():
    out = subprocess.run([sys.executable, "-m", "swapjudge", "analyse"], capture_output=True, text=True, env=ENV)
    assert out.returncode == 2
    assert "analyze" in out.stderr


def test_version_starts_without_any_command():
    code = """
import sys
from swapjudge.cli import main
try:
    main()
except SystemExit as e:
    print('EXIT', e.code, sorted(m for m in sys.modules if m.startswith('swapjudge.cli.')), file=sys.stderr)
"""
    out = _python(code, "--version")
    assert out.stdout.startswith("swapjudge ")
    assert "EXIT 0 ['swapjudge.cli.app', 'swapjudge.cli.coercion', 'swapjudge.cli.terminal']" in out.stderr, out.stderr
