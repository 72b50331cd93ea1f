"""Errors a user can cause: one clear line each, no traceback (the CLI prints the message and exits)."""

from __future__ import annotations


class SwapjudgeError(Exception):
    """Base of every user-facing error. The CLI prints `str(err)` on one line and exits with `exit_code`."""

    exit_code = 2


class InputError(SwapjudgeError):
    """A problem in an input file, located by file, line and field where they are known."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None, more: int = 0) -> None:
        self.path, self.line, self.field, self.more = path, line, field, more
        self.message = message  # without the place, for callers that name the place their own way
        where = path or ""
        if path and line is not None:
            where = f"{path}:{line}"
        parts = [p for p in (where, f"field `{field}`" if field else "") if p]
        text = ": ".join([*parts, message])
        if more:
            text += f" (and {more} more problem{'s' if more > 1 else ''})"
        super().__init__(text)


class ConfigError(SwapjudgeError):
    """A run configuration that does not validate; names the file and the key."""


class GateError(SwapjudgeError):
    """The judge's self-consistency is below the gate: no win rate is reported."""

    exit_code = 1
