"""Command-line interface: thin wrappers that parse arguments, call the library and render."""

from __future__ import annotations

import swapjudge.cli.importers  # noqa: F401  (registers import)
from swapjudge.cli import core  # noqa: F401  (registers calc, analyze)
from swapjudge.cli import run  # noqa: F401  (registers run, runs, export)
from swapjudge.cli.app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
