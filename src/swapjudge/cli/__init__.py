"""Command-line interface: thin wrappers that parse arguments, call the library and render.

`swapjudge CMD` imports only the module that defines CMD: the other command modules, and what they import
at their top, are no part of CMD's work (typer builds an option's validator only when a command parses it). `from
swapjudge.cli import app`, `--help` and a name no module claims get every command; `--version` gets none.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import swapjudge.cli.app as _app_module

# importing the submodule bound `app` to it; the name is served by __getattr__ below, with every command loaded
del app  # type: ignore[name-defined]  # noqa: F821

# the modules that register commands, in the order of `swapjudge --help`
COMMAND_MODULES = ("analyze", "run", "card", "decide", "rank", "calibrate", "report", "review", "importers",
                   "probes", "history", "models", "escalate")
# the top-level command (or group) -> the module that registers it; tests/cli/test_lazy_commands.py holds it true
COMMANDS = {
    "calc": "analyze", "analyze": "analyze",
    "run": "run", "runs": "run", "export": "run",
    "card": "card",
    "plan": "decide", "decide": "decide",
    "rank": "rank",
    "calibrate": "calibrate",
    "report": "report",
    "review": "review",
    "import": "importers",
    "segments": "probes", "agreement": "probes", "panel": "probes", "variants": "probes", "probe": "probes",
    "history": "history", "compare": "history", "releases": "history", "adaptive": "history", "anchors": "history",
    "models": "models",
    "escalate": "escalate",
}


def load_commands(modules: tuple[str, ...] = COMMAND_MODULES) -> Any:
    """Register the commands of `modules` (each on import) and return the Typer application."""
    for name in modules:
        importlib.import_module(f"swapjudge.cli.{name}")
    return _app_module.app


def __getattr__(name: str) -> Any:
    if name == "app":
        return load_commands()
    raise AttributeError(f"module 'swapjudge.cli' has no attribute {name!r}")


def main() -> None:
    command = sys.argv[1] if len(sys.argv) > 1 else None
    module = COMMANDS.get(command) if command is not None else None
    if command == "--version":
        load_commands(())()  # the eager --version option answers before any command is looked at
    load_commands((module,) if module is not None else COMMAND_MODULES)()


__all__ = ["COMMANDS", "COMMAND_MODULES", "app", "load_commands", "main"]
