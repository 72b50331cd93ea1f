"""Plain parameters converted without pydantic (cli/coercion.py) give exactly what typer's own adapters give: for
every parameter of every command, its default and the values people type (and mistype), the same value of the
same type, or the same error in the same words."""

from __future__ import annotations

import enum
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.core
from typer.main import get_command

from swapjudge.cli import app
from swapjudge.cli.coercion import plain_value

ADAPTER = typer.core.build_runtime_param.original  # type: ignore[attr-defined]
TYPED = {
    int: ["0", "7", "-3", "007", "1e3", "1_000", " 5", "x", "", "2.0"],
    float: ["0.95", "1", "-0.5", ".5", "5.", "1e-3", "nan", "inf", "x", "", "0.1234567890123456789", "1_0"],
    str: ["x", "", "naïve", "-"],
    bool: [True, False],
    Path: ["-", "a/b.jsonl", "", ".", "~/x.jsonl"],
}


def _parameters(command: Any, path: str = "swapjudge") -> Iterator[tuple[str, Any, Any]]:
    """(where, parameter, command) for every parameter of the application, its groups and their commands."""
    for param in command.params:
        yield f"{path} {param.name}", param, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _parameters(sub, f"{path} {name}")


PARAMETERS = [p for p in _parameters(get_command(app)) if hasattr(p[1], "type_descriptor")]


def _outcome(convert: Any) -> tuple[str, Any]:
    try:
        value = convert()
    except Exception as err:  # the same error, in the same words
        return "error", (type(err).__name__, str(err))
    return "value", (type(value), repr(value))  # repr: nan is nan


def _candidates(annotation: Any, default: Any) -> list[Any]:
    values = [default]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        values += [*annotation, *(m.value for m in annotation), "nonsense", "HALF_CREDIT"]
    else:
        values += TYPED.get(annotation, [])
    return values


def test_the_application_has_plain_parameters_of_every_kind() -> None:
    kinds = {p.type_descriptor.annotation for _, p, _ in PARAMETERS}
    assert {int, float, str, bool, Path} <= kinds
    assert any(isinstance(k, type) and issubclass(k, enum.Enum) for k in kinds)
    assert len(PARAMETERS) > 100


@pytest.mark.parametrize(("where", "param", "command"), PARAMETERS, ids=[w for w, _, _ in PARAMETERS])
def test_each_parameter_converts_as_typers_adapter_does(where: str, param: Any, command: Any) -> None:
    descriptor = param.type_descriptor
    ctx = typer.core._click.Context(command)
    plain = typer.core.build_runtime_param(descriptor)
    adapter = ADAPTER(descriptor)
    for value in _candidates(descriptor.annotation, param.default):
        if param.multiple or param.nargs == -1:
            value = () if value is None else (value,)
        expected = _outcome(lambda v=value: adapter.coerce(v, param=param, ctx=ctx))
        assert _outcome(lambda v=value: plain.coerce(v, param=param, ctx=ctx)) == expected, f"{where}: {value!r}"


def test_a_typed_number_is_taken_here_and_anything_unusual_left_to_the_adapter() -> None:
    """The check can fail: the plain converter does take the common values (pydantic is not asked), and leaves an
    exponent, a padded number and a number of another type to the adapter."""
    (param,) = [p for w, p, _ in PARAMETERS if w == "swapjudge analyze confidence"]
    descriptor = param.type_descriptor
    assert plain_value(descriptor, "0.9") == 0.9
    assert plain_value(descriptor, 0.95) == 0.95
    untaken = plain_value(descriptor, "9e-1")
    assert all(plain_value(descriptor, v) is untaken for v in (" 0.9", "1_0", 1, "nan"))
