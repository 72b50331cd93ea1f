"""Command-line interface: thin wrappers that parse arguments, call the library and render."""

from __future__ import annotations

import swapjudge.cli.importers  # registers import
import swapjudge.cli.probes  # noqa: F401  (registers segments, probe, agreement, panel, variants)
from swapjudge.cli import core  # noqa: F401  (registers calc, analyze)
from swapjudge.cli.app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
