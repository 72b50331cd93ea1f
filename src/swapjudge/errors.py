"""Errors a user can cause: one clear line each, no traceback (the CLI prints the message and exits)."""

from __future__ import annotations

from collections.abc import Callable, Sequence


def _with_names(template: str, arguments: Sequence[str], name_of: Callable[[str], str]) -> str:
    for argument in arguments:
        template = template.replace("{" + argument + "}", name_of(argument))
    return template


class SwapjudgeError(Exception):
    """Base of every user-facing error. The CLI prints it on one line and exits with `exit_code`.

    A message that names an argument writes it `{name}` and lists it in `arguments`: `str(err)` says the Python
    name (`confidence must be ...`), and the CLI says its flag instead (`--confidence must be ...`)."""

    exit_code = 2

    def __init__(self, message: str = "", *, arguments: Sequence[str] = ()) -> None:
        self.arguments = tuple(arguments)
        self.template = message
        super().__init__(_with_names(message, self.arguments, str))

    def named(self, name_of: Callable[[str], str]) -> str:
        """The message with each argument called by `name_of(argument)` (the CLI: its flag)."""
        return _with_names(self.template, self.arguments, name_of) if self.arguments else str(self)


class InputError(SwapjudgeError):
    """A problem in an input file, located by file, line and field where they are known."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None, more: int = 0, arguments: Sequence[str] = ()) -> None:
        self.path, self.line, self.field, self.more = path, line, field, more
        where = path or ""
        if path and line is not None:
            where = f"{path}:{line}"
        parts = [p for p in (where, f"field `{field}`" if field else "") if p]
        text = ": ".join([*parts, message])
        if more:
            text += f" (and {more} more problem{'s' if more > 1 else ''})"
        super().__init__(text, arguments=arguments)
        self.message = _with_names(message, self.arguments, str)  # without the place, for callers that name it


class ArgumentError(SwapjudgeError):
    """A function called with a value it cannot take; the message names the argument as `{name}` (see
    `SwapjudgeError`)."""

    def __init__(self, message: str, *arguments: str) -> None:
        super().__init__(message, arguments=arguments)


class ConfigError(SwapjudgeError):
    """A run configuration that does not validate; names the file and the key."""


class GateError(SwapjudgeError):
    """A verdict, not a fault of the input: the judge's self-consistency is below the gate (no win rate is
    reported), an incumbent is kept, a check is flagged, or the data do not decide yet. The CLI prints its lines as
    they are (one per judge) and exits with its `outcome` (`swapjudge.outcome.Conclusion`): 1, or 3 when
    inconclusive."""

    exit_code = 1

    def __init__(self, message: str = "", *, arguments: Sequence[str] = (), outcome: int | None = None) -> None:
        super().__init__(message, arguments=arguments)
        if outcome is not None:
            self.exit_code = int(outcome)  # an instance's ending (swapjudge.outcome), over the class's default

    @property
    def outcome(self) -> int:
        """The exit code as a `swapjudge.outcome.Conclusion` value (an int)."""
        return self.exit_code
