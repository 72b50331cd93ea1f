"""`swapjudge CMD` imports only CMD's module: the table that says which module registers which command is true,
a lazily started command prints what the full application prints, and analyze of a small file starts without
DuckDB, the other commands' modules or the Markdown renderer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.main import get_command
from typer.testing import CliRunner

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


def test_analyze_of_a_small_file_imports_only_what_it_needs():
    code = """
import sys
from swapjudge.cli import main
try:
    main()
except SystemExit as e:
    code = e.code
else:
    code = 0
heavy = sorted(m for m in sys.modules if m == 'duckdb' or m == 'swapjudge.report.markdown'
               or (m.startswith('swapjudge.cli.') and m not in ('swapjudge.cli.app', 'swapjudge.cli.analyze',
                                                                'swapjudge.cli.terminal')))
print('HEAVY', heavy, code, file=sys.stderr)
"""
    out = _python(code, "analyze", str(EXAMPLE), "--format", "json")
    assert "HEAVY [] 0" in out.stderr, out.stderr
    lazy = json.loads(out.stdout)
    full = CliRunner().invoke(app, ["analyze", str(EXAMPLE), "--format", "json"])
    assert full.exit_code == 0
    assert lazy == json.loads(full.stdout)
    assert lazy["pairs"]["complete"] > 0


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
    assert "EXIT 0 ['swapjudge.cli.app', 'swapjudge.cli.terminal']" in out.stderr, out.stderr
