"""Command-line interface: thin wrappers that parse arguments, call the library and render."""

from __future__ import annotations

# Each module registers its commands on import; the order here is the order of `swapjudge --help`.
from swapjudge.cli import analyze, run, card, decide, rank, calibrate  # noqa: F401  # isort: skip
from swapjudge.cli import report, review, importers, probes, history, models  # noqa: F401  # isort: skip
from swapjudge.cli import escalate  # noqa: F401  # isort: skip
from swapjudge.cli.app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
