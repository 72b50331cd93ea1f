"""The Typer application and the shared plumbing of every command: formats, error handling, exit codes."""

from __future__ import annotations

import enum
import functools
import json
import sqlite3
import sys
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypeVar

import typer
import typer.core
from rich.console import Console
from rich.markup import escape

from swapjudge.core.documents import json_document
from swapjudge.errors import GateError, SwapjudgeError

_TYPE_WORDS = {"int": "INTEGER", "float": "NUMBER", "str": "TEXT", "Path": "PATH"}


def _plain_metavars(cls: Any) -> None:
    """Help shows after an option nothing for a flag and the value's kind as people read it (INTEGER, PATH, [a|b])
    instead of typer's code-like placeholders (`<bool>`, `<list[Path]>`)."""
    original = cls.display_type_rich

    def display(self: Any, ctx: Any) -> str | None:
        if getattr(self, "is_flag", False) or getattr(self, "count", False):
            return None
        shown = original(self, ctx)
        if not isinstance(shown, str) or not shown.startswith("<"):
            return shown  # type: ignore[no-any-return]
        inner, more = shown.removesuffix("...").strip("<>"), shown.endswith("...")
        if inner.startswith("list[") and inner.endswith("]"):
            inner, more = inner[5:-1], True
        word = f"[{inner}]" if "|" in inner else _TYPE_WORDS.get(inner, inner.upper())
        return word + ("..." if more else "")

    cls.display_type_rich = display


_plain_metavars(typer.core.TyperOption)
_plain_metavars(typer.core.TyperArgument)


def _version(value: bool) -> None:
    if value:
        from swapjudge import __version__

        print(f"swapjudge {__version__}")
        raise typer.Exit(0)


app = typer.Typer(
    name="swapjudge",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", callback=_version,
                                          is_eager=True)] = False,
) -> None:
    """Honest pairwise LLM-as-judge evaluation: every pair in both orders, flip rates, tie policies, gates.

    Every input may be `-` for stdin and every `-o` may be `-` for stdout. The record format is described in
    docs/records.md; the JSON of `--format json` in docs/json.md.
    """


stdout = Console(soft_wrap=False)
stderr = Console(stderr=True, soft_wrap=True)


class OutputFormat(enum.StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


# The options most commands share, spelled once.
ConfidenceOpt = Annotated[float, typer.Option("--confidence", help="Confidence level of every interval.")]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")]

F = TypeVar("F", bound=Callable[..., Any])

# Library arguments whose CLI flag is not `--` + the name with dashes.
_FLAGS: dict[str, str] = {}


def flag_of(argument: str) -> str:
    """The flag a library argument is given by at the command line (`min_consistency` -> `--min-consistency`)."""
    return _FLAGS.get(argument, "--" + argument.replace("_", "-"))


def user_errors(func: F) -> F:
    """Turn a SwapjudgeError into one line on stderr and its exit code; Ctrl-C into exit 130."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except GateError as err:  # a verdict on the judge, not a fault: its lines as they are
            stderr.print(err.named(flag_of), markup=False, highlight=False)
            raise typer.Exit(err.exit_code) from None
        except SwapjudgeError as err:
            stderr.print(f"[bold red]error:[/] {escape(err.named(flag_of))}", markup=True, highlight=False)
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


def dump_json(payload: Any) -> None:
    """JSON to stdout, exactly as scripts read it (no rich markup, no wrapping)."""
    print(json.dumps(json_document(payload), indent=2, allow_nan=False))


def wide_console() -> Console:
    """stdout for a table: at a terminal its width; piped, wide enough that no cell is split mid-word (a CI log
    has no width to fit)."""
    return stdout if stdout.is_terminal else Console(width=1000, soft_wrap=False)


def display_path(path: Any) -> str:
    """How a message names an output: `-` is stdout."""
    return "stdout" if str(path) == "-" else str(path)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table; `|` in a cell is escaped."""
    def cell(text: str) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
