"""The house's rules beyond the import order, read from the source with `ast`: one name for one thing (defined once,
imported under that name), no private name across modules, one YAML reader, one SQLite layer, one mapping from
outcome to exit code, library errors that name Python arguments. Each rule is one scanner, run on the package and on
a planted violation it must find."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "src" / "swapjudge"


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package at `root`, by dotted name."""
    return {".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__"): p
            for p in sorted(root.rglob("*.py"))}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


# --- one public name, one definition ---------------------------------------------------------------------------

# The protocols a registry calls by module: each stands for its own thing in its own module (a renderer's
# `render_text` per result, an importer's `read_file`, a backend's `from_config`, a program's `main`). Every other
# public name is defined once: the same logic is one function called from both places, and different things have
# names that say which.
PROTOCOL_NAMES = {"from_config", "read_file", "render_html", "render_markdown", "render_text", "main"}


def public_definitions(found: dict[str, Path]) -> dict[str, list[str]]:
    """Each public top-level function or class name -> the modules that define it."""
    where: dict[str, list[str]] = defaultdict(list)
    for name, path in found.items():
        for node in _tree(path).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name[0] != "_" \
                    and name not in where[node.name]:  # a function's typing overloads are one definition
                where[node.name].append(name)
    return {k: v for k, v in where.items() if len(v) > 1}


def test_a_public_name_is_defined_in_one_module() -> None:
    twice = public_definitions(modules())
    assert {k: v for k, v in twice.items() if k not in PROTOCOL_NAMES} == {}


# --- an import does not rename ------------------------------------------------------------------------------------

def renaming_imports(found: dict[str, Path]) -> list[str]:
    """`module:line name as alias` for every `from swapjudge... import name as alias` with another alias: a name is
    read under the name it was defined with, so one name is one thing everywhere (`name as name`, an explicit
    re-export, renames nothing). `import swapjudge.a.b as m` binds a module to a shorter name than its dotted
    path, and is allowed: the one left is cli/__init__.py's `_app_module`, since the package's `app` is served,
    with every command loaded, by its `__getattr__`."""
    hits = []
    for name, path in found.items():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("swapjudge")):
                hits += [f"{name}:{node.lineno} {a.name} as {a.asname}" for a in node.names
                         if a.asname is not None and a.asname != a.name]
    return hits


def test_no_import_renames_a_name() -> None:
    assert renaming_imports(modules()) == []


# --- no private name across modules -----------------------------------------------------------------------------

def private_imports(found: dict[str, Path]) -> set[tuple[str, str]]:
    """(importing module, name) for every `from swapjudge.x import _name` (a dunder aside)."""
    out = set()
    for name, path in found.items():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("swapjudge"):
                out |= {(name, a.name) for a in node.names if a.name.startswith("_") and not a.name.startswith("__")}
    return out


def test_no_private_name_is_imported_across_modules() -> None:
    assert private_imports(modules()) == set()


# --- one YAML reader, one SQLite layer, one exit mapping --------------------------------------------------------

YAML_READER = "swapjudge.yamlfile"
SQLITE_LAYER = "swapjudge.store.connection"
EXIT_MAPPING = "swapjudge.cli.app"


def calls_outside(found: dict[str, Path], allowed: str, matches: object) -> list[str]:
    """`module:line` of every node `matches(node)` accepts, outside the `allowed` module."""
    hits = []
    for name, path in found.items():
        if name == allowed:
            continue
        hits += [f"{name}:{node.lineno}" for node in ast.walk(_tree(path)) if matches(node)]  # type: ignore[operator]
    return hits


def yaml_use(node: ast.AST) -> bool:
    """`import yaml`, `from yaml import ...`: only the one reader parses YAML."""
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "yaml" for a in node.names)
    return isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "yaml"


def sqlite_connect(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func).endswith("sqlite3.connect")


def exit_with_verdict(node: ast.AST) -> bool:
    """`typer.Exit(1)`, `typer.Exit(3)` (or any code but 0, or one computed): a verdict's exit code, which only the
    one mapping gives; `raise SystemExit(...)`/`sys.exit(...)` alike."""
    if not isinstance(node, ast.Call):
        return False
    func = ast.unparse(node.func)
    if not (func.endswith("Exit") or func in ("SystemExit", "sys.exit", "exit")):
        return False
    code = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "code"), None)
    return not (isinstance(code, ast.Constant) and code.value in (0, None))


@pytest.mark.parametrize(("allowed", "matches"), [(YAML_READER, yaml_use), (SQLITE_LAYER, sqlite_connect)])
def test_one_module_does_it(allowed: str, matches: object) -> None:
    assert calls_outside(modules(), allowed, matches) == []


def test_only_the_one_mapping_gives_an_exit_code() -> None:
    # github_action is its own program (an argparse `main`), run by action.yml, and returns its code to sys.exit
    cli = {k: v for k, v in modules().items() if k.startswith(("swapjudge.cli", "swapjudge.workflows"))}
    assert calls_outside(cli, EXIT_MAPPING, exit_with_verdict) == []


# --- library errors name Python arguments -----------------------------------------------------------------------

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
OTHER_PROGRAMS = ("--force-reinstall",)  # pip's flag, in the install hint of the local model's packages


def flags_in_errors(found: dict[str, Path]) -> list[str]:
    """`module:line flag` for every swapjudge flag in the text of an error raised outside the CLI (a library error
    names its argument `{name}`, and the CLI says the flag)."""
    hits = []
    for name, path in found.items():
        if name.startswith("swapjudge.cli") or name == "swapjudge.integrations.github_action":
            continue
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                for sub in ast.walk(node.exc):
                    if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                        hits += [f"{name}:{sub.lineno} {flag}" for flag in FLAG.findall(sub.value)
                                 if flag not in OTHER_PROGRAMS]
    return hits


def test_library_errors_name_python_arguments_not_flags() -> None:
    assert flags_in_errors(modules()) == []


# --- each rule finds a planted violation ------------------------------------------------------------------------

def _plant(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    root = tmp_path / "swapjudge"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return modules(root)


def test_each_rule_finds_its_planted_violation(tmp_path: Path) -> None:
    planted = _plant(tmp_path, {
        "__init__.py": "",
        "core/a.py": "def rank(x):\n    return x\n\nclass Tally:\n    pass\n\ndef _private():\n    pass\n",
        "ranking/b.py": "from swapjudge.core.a import _private\n\ndef rank(y):\n    return y\n",
        "probes/g.py": "import swapjudge.core.a as a_module\nfrom swapjudge.core.a import Tally as Tally\n"
                       "from swapjudge.core.a import rank as order\nfrom .a import rank as ranked\n",
        "decision/c.py": "import yaml\n\ndef load(t):\n    return yaml.safe_load(t)\n",
        "review/d.py": "import sqlite3\n\ndef open_it(p):\n    return sqlite3.connect(p)\n",
        "cli/e.py": "import typer\n\ndef f(ok):\n    if not ok:\n        raise typer.Exit(1)\n"
                    "    raise typer.Exit(0)\n",
        "workflows/f.py": "from swapjudge.errors import SwapjudgeError\n\ndef g():\n"
                          "    raise SwapjudgeError('give --store PATH')\n",
        "yamlfile.py": "import yaml\n",
        "store/connection.py": "import sqlite3\nDB = sqlite3.connect(':memory:')\n",
        "cli/app.py": "import typer\n\ndef end(code):\n    raise typer.Exit(code)\n",
    })
    assert public_definitions(planted) == {"rank": ["swapjudge.core.a", "swapjudge.ranking.b"]}
    assert private_imports(planted) == {("swapjudge.ranking.b", "_private")}
    assert renaming_imports(planted) == ["swapjudge.probes.g:3 rank as order", "swapjudge.probes.g:4 rank as ranked"]
    assert calls_outside(planted, YAML_READER, yaml_use) == ["swapjudge.decision.c:1"]
    assert calls_outside(planted, SQLITE_LAYER, sqlite_connect) == ["swapjudge.review.d:4"]
    assert calls_outside(planted, EXIT_MAPPING, exit_with_verdict) == ["swapjudge.cli.e:5"]
    assert flags_in_errors(planted) == ["swapjudge.workflows.f:4 --store"]
