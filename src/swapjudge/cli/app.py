"""The Typer application and the shared plumbing of every command: formats, error handling, exit codes."""

from __future__ import annotations

import enum
import functools
import json
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
        except KeyboardInterrupt:
            stderr.print("interrupted")
            raise typer.Exit(130) from None
        except BrokenPipeError:
            sys.stderr.close()
            raise typer.Exit(0) from None

    return wrapper  # type: ignore[return-value]


JSON_SCHEMA_VERSION = 1  # docs/json.md: bumped when a key changes meaning; new keys do not bump it


def json_document(payload: Any) -> Any:
    """A `--format json` document: an object gets `schema_version` first; an array (a listing) is as it is."""
    if isinstance(payload, dict):
        return {"schema_version": JSON_SCHEMA_VERSION, **{k: v for k, v in payload.items() if k != "schema_version"}}
    return payload


def dump_json(payload: Any) -> None:
    """JSON to stdout, exactly as scripts read it (no rich markup, no wrapping)."""
    print(json.dumps(json_document(payload), indent=2, allow_nan=False))
