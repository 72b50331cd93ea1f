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


def imported(name: str) -> Iterator[tuple[str, int]]:
    """(swapjudge module imported, line) for every import of `name`, at module level or inside a function."""
    path = MODULES[name]
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
            # `from swapjudge.core import records` imports the module swapjudge.core.records
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            if target == "swapjudge" or target.startswith("swapjudge."):
                yield _known(target), node.lineno


def _known(target: str) -> str:
    """The module a dotted import names (a name imported from a module resolves to the module)."""
    while target not in MODULES and "." in target:
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
    assert "swapjudge.workflows.standings" in found  # imported inside `rank`
    assert "swapjudge.ranking.bradley_terry" not in found  # under TYPE_CHECKING only


@pytest.mark.parametrize(("sources", "forbidden"), [
    (("core", "probes", "ranking", "drift"), ("report", "cli")),
    (("report",), ("store", "runner", "judges")),
    (("store",), ("judges", "config")),
    (("judges",), ("core", "store", "runner")),
])
def test_parts_import_only_downward(sources: tuple[str, ...], forbidden: tuple[str, ...]) -> None:
    assert violations(sources, forbidden) == []


# docs/architecture.md's order of the parts, bottom first; a part may import only those before it
LAYERS = [("errors", "redact", "defaults"), ("core",), ("probes", "ranking", "decision"), ("config",), ("judges",),
          ("store",), ("drift",), ("runner",), ("importers", "review"), ("workflows",), ("report",), ("api",),
          ("integrations", "cli"), ("__main__",)]


def test_each_part_imports_only_the_parts_below_it() -> None:
    level = {name: i for i, names in enumerate(LAYERS) for name in names}
    level[""] = -1  # the package itself (`from swapjudge import __version__`)
    assert set(map(part, MODULES)) <= set(level), "a part the documented order does not name"
    upward = [f"{s}:{line} imports {t}" for s, t, line in edges()
              if part(s) != part(t) and level[part(t)] >= level[part(s)]]
    assert upward == []


def test_core_imports_no_other_part() -> None:
    outside = [f"{s}:{line} imports {t}" for s, t, line in edges()
               if part(s) == "core" and part(t) not in ("core", "errors")]
    assert outside == []


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
