"""The one strict reader of every YAML file a user writes: run configurations, decision files, card and anchor
configurations, suites. A key given twice in one mapping is refused (YAML's "the last one wins" would hide a typo),
every mapping remembers the line of each key (`key_line`), so an unknown or invalid key is named by file, line and
key (`where`), and a file that is not YAML, not UTF-8 or not readable is one line naming the file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

from swapjudge.errors import SwapjudgeError

if TYPE_CHECKING:
    from pydantic import BaseModel

Model = TypeVar("Model", bound="BaseModel")  # the pydantic model a file is validated as


class KeyLines(dict):  # type: ignore[type-arg]
    """A YAML mapping: a dict, and the 1-based line of each of its keys in `lines`."""

    lines: dict[Any, int]


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader where a key given twice in one mapping is an error."""


def _mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> KeyLines:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            first = seen.get(key)
        except TypeError:  # an unhashable key: the constructor below reports it
            continue
        if first is not None:
            raise yaml.constructor.ConstructorError(
                None, None, f"key `{key}` is given twice (first on line {first}); give it once", key_node.start_mark)
        seen[key] = key_node.start_mark.line + 1
    out = KeyLines(loader.construct_mapping(node, deep=deep))
    out.lines = seen
    return out


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def load_yaml(text: str, *, source: str, error: type[SwapjudgeError] = SwapjudgeError) -> Any:
    """The YAML document in `text`; `error` (naming `source` and the line) when it is not YAML or repeats a key."""
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or "invalid YAML"
        raise error(f"{source}{at}: {problem}") from None


def read_yaml(path: str | Path, *, what: str, error: type[SwapjudgeError] = SwapjudgeError) -> Any:
    """The YAML file at `path` (`what` names it in an error: "the configuration", "the decision file")."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8-sig")
    except OSError as err:
        raise error(f"{source}: cannot read {what}: {err.strerror}") from None
    except UnicodeDecodeError as err:
        raise error(f"{source}: {what} is not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset "
                    f"{err.start})") from None
    return load_yaml(text, source=str(source), error=error)


def key_line(data: Any, loc: Sequence[Any]) -> int | None:
    """The line of the key at `loc` (a path of keys and list indexes, as pydantic's error locations), or of the
    deepest mapping key on it that is known; None for data not read by this module."""
    line = None
    for step in loc:
        if isinstance(data, KeyLines) and step in data.lines:
            line = data.lines[step]
        try:
            data = data[step]
        except (KeyError, IndexError, TypeError):
            break
    return line


def where(source: str | Path, data: Any, loc: Sequence[Any]) -> str:
    """`FILE:LINE` of the key at `loc`, or `FILE` when its line is not known."""
    line = key_line(data, loc)
    return f"{source}:{line}" if line is not None else str(source)


def refuse_unknown_keys(data: Mapping[str, Any], known: Sequence[str], *, source: str | Path, what: str,
                        error: type[SwapjudgeError] = SwapjudgeError) -> None:
    """`error` naming the file, line and key of the first key of `data` not in `known`, with the closest known
    key when one is close."""
    import difflib

    for key in data:
        if key not in known:
            match = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.6)
            hint = f"; did you mean `{match[0]}`?" if match else ""
            raise error(f"{where(source, data, [key])}: key `{key}`: not a key of {what}{hint}")


def read_validated(path: str | Path, model: type[Model], *, what: str, error: type[SwapjudgeError]) -> Model:
    """The YAML file at `path` validated as the pydantic `model`; the first problem is one `error` line naming
    the file, the key's line and the key."""
    from pydantic import ValidationError

    data = read_yaml(path, what=what, error=error)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise error(f"{where(path, data, first['loc'])}: key `{key}`: "
                    f"{str(first['msg']).removeprefix('Value error, ')}") from None
