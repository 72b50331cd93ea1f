"""Notebook displays by registration, so that no statistics module imports a renderer.

A result type inherits `Displayable`; the renderers (`swapjudge.report.notebook`) register, by the type's dotted
name, how it shows as HTML and Markdown, and `import swapjudge` loads them before it hands out a result. A type
nobody registered shows as its plain repr, as scipy's and evalica's results do. Registering by name (as
IPython's `for_type_by_name` does) lets the renderers register a type without importing its module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Render = Callable[[Any], str]
_DISPLAYS: dict[str, tuple[Render, Render]] = {}


def percent(value: float) -> str:
    """58.3%, 50%, 47.5%: one decimal, none when it is 0 (the sentences of results; the renderers' tables use
    `report.wording.pct`)."""
    text = f"{100 * value:.1f}"
    return (text[:-2] if text.endswith(".0") else text) + "%"


def type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def register_display(name: str, *, html: Render, markdown: Render) -> None:
    """How instances of the type called `name` (`module.Class`), and of its subclasses unless they register their
    own, show in a notebook."""
    _DISPLAYS[name] = (html, markdown)


def _registered(obj: object) -> tuple[Render, Render] | None:
    return next((found for k in type(obj).__mro__ if (found := _DISPLAYS.get(type_name(k))) is not None), None)


class Displayable:
    """Jupyter's display hooks, answered by whatever renderer registered for the type (None: the plain repr)."""

    __slots__ = ()

    def _repr_html_(self) -> str | None:
        found = _registered(self)
        return None if found is None else found[0](self)

    def _repr_markdown_(self) -> str | None:
        found = _registered(self)
        return None if found is None else found[1](self)
