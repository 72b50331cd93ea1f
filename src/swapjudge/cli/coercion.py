"""A command's plain parameters converted without pydantic, so a command starts faster.

typer (0.2x) converts each parameter's value with a pydantic TypeAdapter it builds the first time the parameter is
parsed: importing pydantic and building an adapter per parameter is about a tenth of a second of every command's
start (`swapjudge analyze` has a dozen parameters, each with a default to convert). `install_plain_coercion` wraps
typer's builder: a value of a plain parameter (text, a whole or decimal number, a flag, a choice, a path) that
reads unambiguously is converted here exactly as the adapter converts it, by the same typer functions where typer
has them (choices, paths); anything else, and any value this code does not take (an error among them), goes to
typer's own adapter, so an error reads as typer words it. tests/cli/test_coercion.py holds every parameter of
every command to the adapter's result. A typer without this builder (another version) is left as it is.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# a whole number and a decimal one as a person types them (no exponent, no underscores, no spaces, no inf/nan)
NUMBER_TEXT = {int: re.compile(r"-?(?:0|[1-9][0-9]*)"), float: re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")}
_UNTAKEN = object()


def plain_value(descriptor: Any, value: Any, param: Any = None, ctx: Any = None) -> Any:
    """`value` converted for the parameter `descriptor` (typer's TypeDescriptor) as its adapter converts it, or
    `_UNTAKEN` when this code leaves it to the adapter."""
    from typer import _param_types

    annotation, info = descriptor.annotation, descriptor.parameter_info
    if descriptor.file_annotation is not None or info.parser is not None or not isinstance(annotation, type):
        return _UNTAKEN
    kind = type(value)
    if issubclass(annotation, enum.Enum):
        return _param_types.coerce_cli_choice(value, choices=tuple(annotation), case_sensitive=info.case_sensitive,
                                              ctx=ctx)
    if annotation in (int, float):
        if info.min is not None or info.max is not None or info.clamp:
            return _UNTAKEN
        if kind is annotation:
            return value
        if kind is str and NUMBER_TEXT[annotation].fullmatch(value):
            return annotation(value)
        return _UNTAKEN
    if annotation is bool or annotation is str:
        return value if kind is annotation else _UNTAKEN
    if annotation is Path and info.path_type is None and _param_types.routes_to_path(annotation, info):
        if kind is str and value and "\x00" not in value:
            value = Path(value)  # what pydantic makes of the text (typer then checks the path's options)
        if not isinstance(value, Path):
            return _UNTAKEN
        return _param_types.coerce_cli_path(value, info, path_type=Path, param=param, ctx=ctx)
    return _UNTAKEN


def install_plain_coercion() -> bool:
    """Wrap typer's per-parameter converter (True), or leave a typer without it as it is (False)."""
    try:
        from typer import _coercion
        from typer import core as typer_core
    except ImportError:
        return False
    found = getattr(typer_core, "build_runtime_param", None)
    if found is None or getattr(found, "swapjudge_plain", False) or not hasattr(_coercion, "RuntimeParam"):
        return found is not None
    original: Callable[[Any], Any] = found

    @dataclass(frozen=True)
    class PlainRuntimeParam(_coercion.RuntimeParam):
        """A plain parameter: converted by `plain_value`, else by typer's adapter (built when first needed)."""

        descriptor: Any = None
        adapter: dict[str, Any] = field(default_factory=dict, compare=False)

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            try:
                found = plain_value(self.descriptor, value, param, ctx)
            except Exception:  # typer's adapter raises the error, in its own words
                found = _UNTAKEN
            if found is not _UNTAKEN:
                return found
            if "built" not in self.adapter:
                self.adapter["built"] = original(self.descriptor)
            return self.adapter["built"]._coerce_value(value, param=param, ctx=ctx)

    def build(descriptor: Any) -> Any:
        if descriptor.file_annotation is not None or descriptor.parameter_info.parser is not None:
            return original(descriptor)
        return PlainRuntimeParam(parameter_info=descriptor.parameter_info, annotation=descriptor.annotation,
                                 descriptor=descriptor)

    build.swapjudge_plain = True  # type: ignore[attr-defined]
    build.original = original  # type: ignore[attr-defined]
    setattr(typer_core, "build_runtime_param", build)  # noqa: B010 - typer does not export the name
    return True
