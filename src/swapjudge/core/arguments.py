"""The public functions' argument checks: each public function checks every argument at its entry with these, so
a wrong type or value is one `ArgumentError` naming the Python argument (`{bootstrap} must be an integer, got
'x'`; the CLI names its flag), never a TypeError from deep inside, and never a value taken silently (10.5 pairs,
True pairs, -1 bootstrap rounds).

Each check returns the value as the function goes on with it (a choice as its enum). Stdlib only: `calc` starts
without the heavy stacks."""

from __future__ import annotations

import enum
import math
import numbers
import os
from collections.abc import Mapping
from typing import Any, TypeVar

from swapjudge.errors import ArgumentError

E = TypeVar("E", bound=enum.Enum)


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, str | numbers.Number | bool) or value is None else type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def integer(value: Any, name: str, *, minimum: int | None = None, optional: bool = False) -> Any:
    """A whole number (not a bool, not a float such as 10.5 or 10.0), at least `minimum`; None when `optional`."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ArgumentError(f"{{{name}}} must be an integer{' or None' if optional else ''}, got {_shown(value)}",
                            name)
    if minimum is not None and value < minimum:
        raise ArgumentError(f"{{{name}}} must be {minimum} or more, got {value}", name)
    return int(value)


def number(value: Any, name: str, *, low: float | None = None, high: float | None = None, open_low: bool = False,
           open_high: bool = False, optional: bool = False) -> Any:
    """A finite real number (not a bool, not text) in [low, high] (ends excluded when `open_*`); None when
    `optional`."""
    if value is None and optional:
        return None
    real = not isinstance(value, bool) and isinstance(value, numbers.Real) and math.isfinite(float(value))
    inside = real and not (
        (low is not None and (value < low or (open_low and value == low)))
        or (high is not None and (value > high or (open_high and value == high))))
    if not inside:
        span = (f" {'strictly ' if open_low and open_high else ''}between {low:g} and {high:g}"
                if low is not None and high is not None else f" of at least {low:g}" if low is not None
                else f" of at most {high:g}" if high is not None else "")
        raise ArgumentError(f"{{{name}}} must be a number{span}{' or None' if optional else ''}, got "
                            f"{_shown(value)}", name)
    return float(value)


def share(value: Any, name: str, *, optional: bool = False) -> Any:
    """A share in [0, 1] (a gate's minimum, a margin, an expected rate)."""
    return number(value, name, low=0.0, high=1.0, optional=optional)


def confidence(value: Any, name: str = "confidence") -> float:
    """A confidence level, strictly between 0 and 1."""
    result: float = number(value, name, low=0.0, high=1.0, open_low=True, open_high=True)
    return result


def flag(value: Any, name: str) -> bool:
    """True or False (not 1, not "yes")."""
    if not isinstance(value, bool):
        raise ArgumentError(f"{{{name}}} must be True or False, got {_shown(value)}", name)
    return value


def text(value: Any, name: str, *, optional: bool = True, what: str = "a string") -> Any:
    """A non-empty string (a system, judge or covariate name); None when `optional`."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        raise ArgumentError(f"{{{name}}} must be {what}{' or None' if optional else ''}, got {_shown(value)}", name)
    return value


def choice(value: Any, name: str, kind: type[E], *, optional: bool = False) -> Any:
    """One of the enum `kind`'s members, given as the member or its value; None when `optional`."""
    if value is None and optional:
        return None
    if isinstance(value, kind):
        return value
    if isinstance(value, str):
        for member in kind:
            if member.value == value:
                return member
    names = ", ".join(str(m.value) for m in kind)
    raise ArgumentError(f"{{{name}}} must be one of {names}{' or None' if optional else ''}, got {_shown(value)}",
                        name)


def path(value: Any, name: str, *, optional: bool = True, what: str = "a path") -> Any:
    """A file path: a string or an os.PathLike (pathlib.Path); None when `optional`."""
    if value is None and optional:
        return None
    if (isinstance(value, str) and value) or isinstance(value, os.PathLike):
        return value
    raise ArgumentError(f"{{{name}}} must be {what}{' or None' if optional else ''}, got {_shown(value)}", name)


def instance(value: Any, name: str, kinds: tuple[type, ...], what: str, *, optional: bool = True) -> Any:
    """An instance of one of `kinds` (described as `what`); None when `optional`."""
    if value is None and optional:
        return None
    if not isinstance(value, kinds):
        raise ArgumentError(f"{{{name}}} must be {what}{' or None' if optional else ''}, got {_shown(value)}", name)
    return value


def names(value: Any, name: str) -> tuple[str, ...]:
    """A list or tuple of names (strings)."""
    if isinstance(value, str) or not isinstance(value, list | tuple) or not all(
            isinstance(v, str) and v for v in value):
        raise ArgumentError(f"{{{name}}} must be a list of names (strings), got {_shown(value)}", name)
    return tuple(value)


RECORDS = "a path (str or pathlib.Path), a list of dicts, a RecordSet, or a pandas or polars DataFrame"


def _is_frame(value: Any) -> bool:
    """A pandas or polars DataFrame, told by its type's module (neither library is imported here)."""
    kind = type(value)
    return kind.__name__ == "DataFrame" and kind.__module__.split(".")[0] in ("pandas", "polars")


def records_source(value: Any, name: str, *, optional: bool = False) -> Any:
    """What `load_records` reads: a path, a list (or tuple) of dicts, a RecordSet, or a pandas or polars
    DataFrame; None when `optional`. The rows themselves are checked by the loader, which names row and field."""
    if value is None and optional:
        return None
    if (isinstance(value, str) and value) or isinstance(value, os.PathLike | list | tuple) or _is_frame(value):
        return value  # decided before importing the loader: a path needs no polars yet (reading.small)
    from swapjudge.reading.records import RecordSet

    if isinstance(value, RecordSet):
        return value
    raise ArgumentError(f"{{{name}}} must be {RECORDS}{' or None' if optional else ''}, got {_shown(value)}", name)


def mapping_or_path(value: Any, name: str, kinds: tuple[type, ...], what: str) -> Any:
    """A file path, a mapping of the file's keys, or an already loaded object of `kinds` (a configuration, a
    decision file)."""
    if (isinstance(value, str) and value) or isinstance(value, (os.PathLike, Mapping, *kinds)):
        return value
    raise ArgumentError(f"{{{name}}} must be {what}, got {_shown(value)}", name)
