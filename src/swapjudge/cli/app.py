"""The Typer application and the shared plumbing of every command: formats, error handling, exit codes."""

from __future__ import annotations

import enum
import functools
import sqlite3
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from swapjudge.errors import SwapjudgeError

app = typer.Typer(
    name="swapjudge",
    help="Honest pairwise LLM-as-judge evaluation: every pair in both orders, flip rates, tie policies, gates.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)

stdout = Console(soft_wrap=False)
stderr = Console(stderr=True, soft_wrap=True)


class OutputFormat(enum.StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


F = TypeVar("F", bound=Callable[..., Any])


def user_errors(func: F) -> F:
    """Turn a SwapjudgeError into one line on stderr and its exit code; Ctrl-C into exit 130."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except SwapjudgeError as err:
            stderr.print(f"[bold red]error:[/] {escape(str(err))}", markup=True, highlight=False)
            raise typer.Exit(err.exit_code) from None
        except sqlite3.OperationalError as err:
            # e.g. a store locked by another process for longer than the write waits (30 s)
            stderr.print(f"[bold red]error:[/] the run store: {escape(str(err))} (another process holds it?); "
                         "run the same command again to resume", markup=True, highlight=False)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            stderr.print("interrupted")
            raise typer.Exit(130) from None
        except BrokenPipeError:
            sys.stderr.close()
            raise typer.Exit(0) from None

    return wrapper  # type: ignore[return-value]
