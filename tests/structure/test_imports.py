"""The import rules of docs/architecture.md, read from the source with `ast` (imports inside functions count;
`if TYPE_CHECKING:` blocks, which never run, do not), so the house stays as it is drawn."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "src" / "swapjudge"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skipped


def imported(name: str, modules: dict[str, Path] = MODULES) -> Iterator[tuple[str, int]]:
    """(swapjudge module imported, line) for every import of `name`, at module level or inside a function:
    `import`, `from ... import` (relative too; `from swapjudge import X` is the package's face, `swapjudge`) and
    `importlib.import_module("swapjudge....")` with a literal name."""
    path = modules[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from swapjudge.reading import records` imports the module swapjudge.reading.records
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                       for a in node.names]
        elif (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module") and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            targets = [node.args[0].value]
        else:
            continue
        for target in targets:
            if target == "swapjudge" or target.startswith("swapjudge."):
                yield _known(target, modules), node.lineno


def _known(target: str, modules: dict[str, Path] = MODULES) -> str:
    """The module a dotted import names (a name imported from a module resolves to the module)."""
    while target not in modules and "." in target:
        target = target.rpartition(".")[0]
    return target


def part(module: str) -> str:
    """The part of the package a module belongs to: `core`, `runner`, ...; a top-level module is its own part."""
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else ""


@functools.cache
def edges() -> list[tuple[str, str, int]]:
    return [(source, target, line) for source in MODULES for target, line in imported(source) if target != source]


def violations(sources: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    return [f"{s}:{line} imports {t}" for s, t, line in edges() if part(s) in sources and part(t) in forbidden]


def test_the_reader_finds_imports_inside_functions_and_skips_type_checking_blocks() -> None:
    found = dict(imported("swapjudge.api"))
    assert "swapjudge.workflows.rank" in found  # imported inside `rank`
    assert "swapjudge.ranking.bradley_terry" not in found  # under TYPE_CHECKING only


@pytest.mark.parametrize(("sources", "forbidden"), [
    (("reading", "core", "probes", "ranking", "drift"), ("report", "cli")),
    (("report",), ("store", "runner", "judges")),
    (("store",), ("judges", "config")),
    (("judges",), ("core", "store", "runner")),
])
def test_parts_import_only_downward(sources: tuple[str, ...], forbidden: tuple[str, ...]) -> None:
    assert violations(sources, forbidden) == []


# docs/architecture.md's order of the parts, bottom first; a part may import only those before it
LAYERS = [("errors", "redact", "defaults", "version"), ("outcome", "yamlfile"), ("reading",), ("core",),
          ("probes", "ranking", "decision"), ("config",), ("judges",),
          ("store",), ("drift",), ("runner",), ("importers", "review"), ("workflows",), ("report",), ("api",),
          ("",), ("integrations", "cli"), ("__main__",)]
# "" is the package's face (`swapjudge/__init__.py`, whose names load the api lazily): `from swapjudge import X`
# inside the package counts as importing it, so only the two ends above it may


def upward_imports(found: list[tuple[str, str, int]]) -> list[str]:
    level = {name: i for i, names in enumerate(LAYERS) for name in names}
    assert {part(s) for s, _, _ in found} <= set(level), "a part the documented order does not name"
    return [f"{s}:{line} imports {t}" for s, t, line in found
            if part(s) != part(t) and level[part(t)] >= level[part(s)]]


def test_each_part_imports_only_the_parts_below_it() -> None:
    assert set(map(part, MODULES)) <= {name for names in LAYERS for name in names}
    assert upward_imports(edges()) == []


def _planted(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    """A package `swapjudge` of `files` (path -> source) under tmp_path: its modules by name."""
    root = tmp_path / "swapjudge"
    for rel, text in {"__init__.py": "", "core/__init__.py": "", "report/__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return {".".join(p.relative_to(tmp_path).with_suffix("").parts).removesuffix(".__init__"): p
            for p in sorted(root.rglob("*.py"))}


@pytest.mark.parametrize("source", [
    "from swapjudge.report import text\n",
    "def f():\n    from swapjudge import analyze\n",  # the package's face, from below it
    "import importlib\nM = importlib.import_module('swapjudge.report.text')\n",
])
def test_a_planted_upward_import_is_found(tmp_path: Path, source: str) -> None:
    modules = _planted(tmp_path, {"core/stats.py": source, "report/text.py": ""})
    found = [("swapjudge.core.stats", t, line) for t, line in imported("swapjudge.core.stats", modules)]
    assert len(upward_imports(found)) == 1, found


def test_core_imports_no_other_part() -> None:
    outside = [f"{s}:{line} imports {t}" for s, t, line in edges()
               if part(s) == "core" and part(t) not in ("core", "reading", "errors", "outcome")]
    assert outside == []


# what reads files, opens databases, starts threads or asks the environment: the floor below core does that
IO_MODULES = ("duckdb", "sqlite3", "threading", "concurrent", "subprocess", "socket", "io", "pathlib", "shutil",
              "tempfile", "httpx", "pyarrow")
IO_CALLS = ("open", "getenv", "environ", "read_text", "read_bytes", "write_text", "read_parquet", "read_csv",
            "read_ndjson", "scan_parquet", "scan_csv", "scan_ndjson")


def io_uses(path: Path) -> list[str]:
    """Every import of an I/O module and every call or attribute of an I/O function in one file, with its line."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [(node.module or "").split(".")[0]]
        found += [f"{path.name}:{node.lineno} imports {n}" for n in names if n in IO_MODULES]
        if isinstance(node, ast.Name | ast.Attribute):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name in IO_CALLS:
                found.append(f"{path.name}:{node.lineno} uses {name}")
    return found


def test_core_reads_no_file_database_thread_or_environment() -> None:
    assert [use for p in sorted((PACKAGE / "core").rglob("*.py")) for use in io_uses(p)] == []


def test_the_io_reader_finds_a_planted_file_read(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("import duckdb\nfrom pathlib import Path\n\n"
                       "def f(p):\n    return open(p).read() + Path(p).read_text()\n")
    assert sorted(io_uses(planted)) == ["planted.py:1 imports duckdb", "planted.py:2 imports pathlib",
                                "planted.py:5 uses open", "planted.py:5 uses read_text"]


def test_nothing_imports_the_cli() -> None:
    entry = "swapjudge.__main__"  # `python -m swapjudge` is the CLI
    assert [f"{s}:{line}" for s, t, line in edges() if part(t) == "cli" and part(s) != "cli" and s != entry] == []


def test_no_import_cycle_among_the_modules() -> None:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for source, target, _ in edges():
        graph[source].add(target)
    cycles: list[list[str]] = []
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert cycles == []
