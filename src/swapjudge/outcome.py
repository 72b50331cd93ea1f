"""How a result ends a command: one `Conclusion` per verdict, and the one protocol every result with a verdict follows.

A result that can fail a gate (or keep an incumbent, or not decide yet) has `ending()`, which says its `Conclusion`
and the lines that explain it, and `raise_for_gate()`, which raises the matching `GateError` when the outcome is
not `ok`. The library never raises on a failed gate by itself: a withheld figure is returned with the reason
(`swapjudge.analyze`, `swapjudge.rank`, `swapjudge.decide`, `swapjudge.card` alike), and raising is the caller's
choice. The CLI maps an outcome to its exit code in one place (`cli/app.py`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from swapjudge.errors import GateError


class Conclusion(enum.IntEnum):
    """What a command's result says, valued as its exit code."""

    ok = 0  # the gate held, the candidate ships, the check passed
    failed = 1  # a failed gate, a kept incumbent, a flagged anchor check
    bad_input = 2  # the input could not be used (a `SwapjudgeError` other than a verdict)
    inconclusive = 3  # the data do not decide yet
    interrupted = 130  # stopped by Ctrl-C; what was finished is kept


@dataclass(frozen=True)
class Ending:
    """A result's outcome and the lines that say why (none when `ok`). A line that names an argument writes it
    `{name}` and lists it in `arguments`, as `SwapjudgeError` does."""

    outcome: Conclusion = Conclusion.ok
    lines: tuple[str, ...] = ()
    arguments: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.outcome is Conclusion.ok

    def error(self) -> GateError:
        """The `GateError` this ending raises (its `outcome` carries the exit code)."""
        return GateError("\n".join(self.lines), arguments=self.arguments, outcome=self.outcome)

    def raise_if_not_ok(self) -> None:
        if not self.ok:
            raise self.error()

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome.name, "exit_code": int(self.outcome), "lines": list(self.lines)}


OK = Ending()


@runtime_checkable
class Concludes(Protocol):
    """A result with a verdict: what it says (`ending`)."""

    def ending(self) -> Ending: ...


class Concluded:
    """Mixin: `raise_for_gate()` from `ending()`, written once for every result."""

    def ending(self) -> Ending:  # pragma: no cover - every subclass says its own
        raise NotImplementedError

    def raise_for_gate(self) -> None:
        """`GateError` (exit 1, or 3 when inconclusive, at the CLI) when the outcome is not ok; nothing otherwise."""
        self.ending().raise_if_not_ok()


def gates_ending(judged: Iterable[tuple[str | None, Any]]) -> Ending:
    """The ending of judges under their gates (`Gate` objects, or None where none applies): `failed`, one line per
    judge below its gate and why; `ok` otherwise."""
    failed = tuple(f"gate: {judge or '(unnamed judge)'}: {g.reason}" for judge, g in judged
                   if g is not None and not g.passed)
    return Ending(Conclusion.failed, failed) if failed else OK


def first_not_ok(endings: Sequence[Ending]) -> Ending:
    """The first ending that is not ok (a run not in yet before its gates, say), or ok."""
    return next((e for e in endings if not e.ok), OK)
