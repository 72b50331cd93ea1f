"""The Typer application and the shared plumbing of every command: formats, error handling, exit codes."""

from __future__ import annotations

import dataclasses
import enum
import errno
import functools
import inspect
import json
import os
import sqlite3
import sys
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
import typer.core
from rich.console import Console
from rich.markup import escape

from swapjudge.cli.coercion import install_plain_coercion
from swapjudge.cli.terminal import SafeConsole, escaping_stdout
from swapjudge.core.choices import ReadEngine
from swapjudge.core.documents import json_document
from swapjudge.errors import GateError, SwapjudgeError
from swapjudge.outcome import Concludes, Conclusion, Ending

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
install_plain_coercion()  # plain parameters converted without pydantic (cli/coercion.py)


def _version(value: bool) -> None:
    if value:
        from swapjudge.version import __version__

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
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", callback=_version,
                                          is_eager=True)] = False,
) -> None:
    """Honest pairwise LLM-as-judge evaluation: every pair in both orders, flip rates, tie policies, gates.

    Every input may be `-` for stdin and every `-o` may be `-` for stdout. The record format is described in
    docs/records.md; the JSON of `--format json` in docs/json.md.
    """
    # every value a command prints reaches the terminal with its control characters escaped (cli/terminal.py)
    ctx.with_resource(escaping_stdout())


stdout = SafeConsole(soft_wrap=False)
stderr = SafeConsole(stderr=True, soft_wrap=True)


class OutputFormat(enum.StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


# The arguments and options many commands share, spelled once.
ConfidenceOpt = Annotated[float, typer.Option("--confidence", help="Confidence level of every interval.")]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")]
RecordsArg = Annotated[Path, typer.Argument(
    help="Presentation records, JSONL, CSV or Parquet (docs/records.md); - for stdin.", show_default=False)]
RecordsOrStoreArg = Annotated[Path, typer.Argument(
    help="Presentation records (JSONL, CSV or Parquet) or a run store (SQLite).", show_default=False)]
RunOpt = Annotated[int | None, typer.Option("--run", help="Run id in a store (default: the latest run).")]
PairsOpt = Annotated[Path | None, typer.Option(
    "--pairs", help="Pairs file ({item, prompt, answers: {system: text}}) to show answer texts from.")]
JudgeOpt = Annotated[str | None, typer.Option("--judge", help="This judge only.")]
SystemAOpt = Annotated[str | None, typer.Option("--a", help="System whose win rate is reported.")]
SystemBOpt = Annotated[str | None, typer.Option("--b", help="The system it is compared against.")]
AllowUnpairedOpt = Annotated[bool, typer.Option(
    "--allow-unpaired", help="Count a pair judged in one order only as incomplete instead of an error.")]
EngineOpt = Annotated[ReadEngine, typer.Option(
    "--engine", help="How a records file is read: auto (Parquet, and JSON Lines of 32 MiB or more, reduced to counts "
                     "by the streaming engine when DuckDB is installed: pip install 'swapjudge[scale]'), streaming "
                     "(always: files larger than memory; not for graded verdicts, which auto reads whole), memory "
                     "(read whole). The figures are the same.")]

F = TypeVar("F", bound=Callable[..., Any])

# Library arguments whose CLI flag is not `--` + the name with dashes.
_FLAGS = {"round_choice": "--round"}


def flag_of(argument: str) -> str:
    """The flag a library argument is given by at the command line (`min_consistency` -> `--min-consistency`)."""
    return _FLAGS.get(argument, "--" + argument.replace("_", "-"))


def exit_code(outcome: Conclusion | int) -> int:
    """The one mapping from a result's outcome to the process's exit code: 0 ok or ship, 1 a failed gate or keep,
    2 bad input, 3 inconclusive, 130 interrupted."""
    return int(Conclusion(outcome))


def end(outcome: Conclusion | int) -> NoReturn:
    """End the command with `outcome`'s exit code (what it had to say is already printed)."""
    raise typer.Exit(exit_code(outcome))


def conclude(result: Concludes | Ending) -> None:
    """How every command with a verdict ends, after its result is shown: nothing when the result's ending is ok;
    otherwise its lines on stderr as they are and its exit code."""
    ending = result if isinstance(result, Ending) else result.ending()
    if not ending.ok:
        end_with(ending.error())


def end_with(err: GateError) -> NoReturn:
    """A verdict raised as `GateError` (a result's `raise_for_gate()`): its lines as they are, its outcome's code."""
    stderr.print(err.named(flag_of), markup=False, highlight=False)
    end(err.outcome)


def user_errors(func: F) -> F:
    """Turn a SwapjudgeError (and the store's errors, a full disk, memory running out) into one line on stderr
    and its exit code; Ctrl-C into exit 130."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except GateError as err:  # a verdict on the judge, not a fault: its lines as they are
            end_with(err)
        except SwapjudgeError as err:
            stderr.print(f"[bold red]error:[/] {escape(err.named(flag_of))}", markup=True, highlight=False)
            end(err.exit_code)
        except sqlite3.Error as err:
            # the store says damaged, full and read-only in words (store.connection); what is left is a lock
            # held by another process for longer than the write waits (30 s), or a database that is no store
            held = "locked" in str(err) or "busy" in str(err)
            why = " (another process holds it?); run the same command again to resume" if held else ""
            stderr.print(f"[bold red]error:[/] the run store: {escape(str(err))}{why}", markup=True, highlight=False)
            end(Conclusion.bad_input)
        except MemoryError:
            # numpy or Python could not allocate: what helps, in one line, instead of a traceback
            stderr.print("[bold red]error:[/] " + escape(
                "out of memory: a command with --engine reads a records file larger than memory with --engine "
                "streaming (pip install 'swapjudge[scale]'); fewer bootstrap rounds, or a lower "
                "SWAPJUDGE_MEMORY_LIMIT for the streaming engine, need less"), markup=True, highlight=False)
            end(Conclusion.bad_input)
        except KeyboardInterrupt:
            stderr.print("interrupted")
            end(Conclusion.interrupted)
        except BrokenPipeError:
            sys.stderr.close()
            end(Conclusion.ok)
        except OSError as err:
            if err.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
                raise
            # a file written outside the store and the atomic writer (a batch request file, say)
            what = "disk full" if err.errno != errno.EROFS else "read-only file system"
            where = f"{err.filename}: " if err.filename else ""
            stderr.print(f"[bold red]error:[/] {escape(where)}{what}: nothing more was written", markup=True,
                         highlight=False)
            end(Conclusion.bad_input)
        except Exception as err:
            if type(err).__module__.split(".")[0] not in ("duckdb", "_duckdb"):
                raise
            # the streaming engine failed past the reader's own checks (its memory limit, say): one line
            first = (str(err).strip().splitlines() or [type(err).__name__])[0]
            hint = (": a larger SWAPJUDGE_MEMORY_LIMIT (e.g. 4GB) gives DuckDB more room"
                    if "Out of Memory" in first else "")
            stderr.print(f"[bold red]error:[/] the streaming engine (DuckDB): {escape(first)}{hint}", markup=True,
                         highlight=False)
            end(Conclusion.bad_input)

    return wrapper  # type: ignore[return-value]


def flag_group(cls: type, *, as_: str) -> Callable[[F], F]:
    """Let a command take a frozen dataclass of related flags (its parameter `as_`) instead of one parameter
    per flag: each field of `cls`, annotated with its `typer.Option`, becomes a flag of the command, and the
    command receives one `cls` built from them. Keeps long option lists out of a command's signature."""
    fields = dataclasses.fields(cls)
    hints = typing.get_type_hints(cls, include_extras=True)

    def decorate(func: F) -> F:
        signature = inspect.signature(func, eval_str=True)  # typer reads the annotations as objects
        kept = [p for p in signature.parameters.values() if p.name != as_]
        grouped = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default,
                                     annotation=hints[f.name]) for f in fields]

        @functools.wraps(func)
        def command(*args: Any, **kwargs: Any) -> Any:
            group = cls(**{f.name: kwargs.pop(f.name) for f in fields})
            return func(*args, **kwargs, **{as_: group})

        command.__signature__ = signature.replace(parameters=[*kept, *grouped])  # type: ignore[attr-defined]
        command.__annotations__ = {**{k: v for k, v in func.__annotations__.items() if k != as_},
                                   **{f.name: hints[f.name] for f in fields}}
        return command  # type: ignore[return-value]

    return decorate


def dump_json(payload: Any) -> None:
    """JSON to stdout, exactly as scripts read it (no rich markup, no wrapping)."""
    print(json.dumps(json_document(payload), indent=2, allow_nan=False))


def wide_console(width: int = 1000) -> Console:
    """stdout for a table: at a terminal its width; piped, `width` columns, wide enough that no cell is split
    mid-word (a CI log has no width to fit)."""
    return stdout if stdout.is_terminal else SafeConsole(width=width, soft_wrap=False)


def shown_path(path: Path) -> str:
    """A path as printed: normalised (no `./`, no `a/../`), as given otherwise (relative stays relative)."""
    return os.path.normpath(path)


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
