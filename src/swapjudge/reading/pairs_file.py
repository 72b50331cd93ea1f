"""The pairs file a run judges: one item per line, the task and every system's answer.

JSONL: `{"item": ..., "prompt": "task text", "answers": {"v1": "...", "v2": "..."}, "label": "v1"}`.
CSV: columns `item`, `prompt`, `label` (optional) and one `answer.<system>` column per system.
Errors name file:line:field.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swapjudge.errors import InputError
from swapjudge.reading.textfiles import allow_long_cells, decode_text, has_lone_surrogate, json_lines, read_bytes


@dataclass(frozen=True)
class PairItem:
    item: str
    prompt: str
    answers: dict[str, str]
    label: str | None
    line: int


@dataclass(frozen=True)
class PairsFile:
    path: Path
    items: tuple[PairItem, ...]
    digest: str  # sha256 of the file's bytes: part of the run's coin seed

    @property
    def systems(self) -> list[str]:
        seen: dict[str, None] = {}
        for it in self.items:
            for name in it.answers:
                seen.setdefault(name, None)
        return list(seen)


def _text(value: Any, *, path: str, line: int, field: str, allow_int: bool = False) -> str:
    if isinstance(value, str):
        return _unicode(value, path=path, line=line, field=field)
    if allow_int and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    kind = "a string or integer" if allow_int else "a string"
    raise InputError(f"must be {kind}, got {type(value).__name__}", path=path, line=line, field=field)


def _unicode(value: str, *, path: str, line: int, field: str) -> str:
    """The text as it is; a lone surrogate (a JSON escape such as \\udced with no partner) is no character any
    file, prompt or store can hold, so it is named here rather than failing later, mid-run."""
    if has_lone_surrogate(value):
        raise InputError("not valid Unicode (lone surrogate)", path=path, line=line, field=field)
    return value


def _item_from(obj: Any, *, path: str, line: int) -> PairItem:
    if not isinstance(obj, dict):
        raise InputError("each line must be a JSON object", path=path, line=line)
    for key in ("item", "prompt", "answers"):
        if key not in obj or obj[key] is None:
            raise InputError("is missing", path=path, line=line, field=key)
    item = _text(obj["item"], path=path, line=line, field="item", allow_int=True)
    if not item.strip():
        raise InputError("is empty", path=path, line=line, field="item")
    prompt = _text(obj["prompt"], path=path, line=line, field="prompt")
    answers_raw = obj["answers"]
    if not isinstance(answers_raw, dict) or len(answers_raw) < 2:
        raise InputError("must map at least two system names to answer texts", path=path, line=line, field="answers")
    answers: dict[str, str] = {}
    for name, text in answers_raw.items():
        _unicode(str(name), path=path, line=line, field="answers")
        if not str(name).strip() or str(name).strip().lower() == "tie":
            raise InputError(f"invalid system name {name!r}", path=path, line=line, field="answers")
        answers[str(name)] = _text(text, path=path, line=line, field=f"answers.{name}")
    label = obj.get("label")
    if label is not None:
        label = _text(label, path=path, line=line, field="label", allow_int=True)
        if label != "tie" and label not in answers:
            raise InputError(
                f"names {label!r}, which is not one of the answers ({', '.join(answers)})",
                path=path,
                line=line,
                field="label",
            )
    unknown = set(obj) - {"item", "prompt", "answers", "label"}
    if unknown:
        raise InputError(f"unknown field(s): {', '.join(sorted(unknown))}", path=path, line=line)
    return PairItem(item=item, prompt=prompt, answers=answers, label=label, line=line)


def _jsonl_rows(text: str, path: str) -> Iterator[PairItem]:
    for n, obj in json_lines(text, path):
        yield _item_from(obj, path=path, line=n)


def _csv_rows(text: str, path: str) -> Iterator[PairItem]:
    allow_long_cells()  # answers can be longer than csv's default cell limit
    reader = csv.DictReader(io.StringIO(text, newline=""))
    fields = reader.fieldnames or []
    for key in ("item", "prompt"):
        if key not in fields:
            raise InputError("missing column", path=path, line=1, field=key)
    answer_cols = [f for f in fields if f.startswith("answer.")]
    if len(answer_cols) < 2:
        raise InputError("needs at least two `answer.<system>` columns", path=path, line=1, field="answers")
    extra = set(fields) - {"item", "prompt", "label", *answer_cols}
    if extra:
        raise InputError(f"unknown column(s): {', '.join(sorted(extra))}", path=path, line=1)
    previous = 1
    for row in reader:
        # a quoted cell may span lines: the record starts just after the previous one ended
        line, previous = previous + 1, reader.line_num
        if None in row:  # an unquoted comma in an answer: the cells after it would shift into other columns
            raise InputError(f"more cells than header columns ({len(fields)})", path=path, line=line)
        answers = {c.removeprefix("answer."): row[c] for c in answer_cols if row.get(c)}
        obj = {
            "item": row["item"],
            "prompt": row["prompt"],
            "answers": answers,
            "label": row.get("label") or None,
        }
        yield _item_from(obj, path=path, line=line)


def load_pairs(path: str | Path) -> PairsFile:
    p = Path(path)
    data = read_bytes(p)
    text = decode_text(data, str(p))
    rows = _csv_rows(text, str(p)) if p.suffix.lower() == ".csv" else _jsonl_rows(text, str(p))
    items: list[PairItem] = []
    seen: dict[str, int] = {}
    for it in rows:
        if it.item in seen:
            raise InputError(
                f"duplicate item {it.item!r} (first on line {seen[it.item]})",
                path=str(p),
                line=it.line,
                field="item",
            )
        seen[it.item] = it.line
        items.append(it)
    if not items:
        raise InputError("has no pairs", path=str(p))
    return PairsFile(path=p, items=tuple(items), digest=hashlib.sha256(data).hexdigest())
