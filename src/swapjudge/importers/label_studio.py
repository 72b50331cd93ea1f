"""Label Studio Pairwise projects (a project's JSON export: Export → JSON), as presentation records.

Schema (HumanSignal/label-studio, "Label Studio JSON format of annotated tasks"): a JSON array of tasks
`{"id", "data": {...}, "annotations": [{"id", "result": [...], "was_cancelled", "lead_time", "completed_by"}]}`.
The `Pairwise` control tag (web/libs/editor/src/tags/control/Pairwise.js) writes a result
`{"type": "pairwise", "value": {"selected": "left" | "right"}}`: left is the first object of its `toName`,
shown first. Pairwise has no tie; a `Choices` result whose choice is `tie` or `both_bad` (as in the labeling
configuration `swapjudge review export --format label-studio` writes) is read as a tie.

Identities: the task's `data.first_id` and `data.second_id` (the systems behind the left and the right text;
keep them out of the labeling configuration so the review stays blind). Item: `data.item`, else the task id.
Round: `data.round`, else 0. Judge: `human:<annotator>` (the annotator's email, else their user id), or
`--judge-name`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from swapjudge.importers.base import FileImport, ImportResult, finish, make_record, read_json_array, read_paths

FORMAT = "label-studio"
NO_PREFERENCE = {"tie": "tie", "both_bad": "both_bad", "both bad": "both_bad", "both are bad": "both_bad",
                 "no preference": "tie", "equal": "tie"}


def _annotator(annotation: dict[str, Any]) -> str:
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        who = who.get("email") or who.get("id")
    return str(who) if who not in (None, "") else "annotator"


def _choice(result: list[Any]) -> tuple[str | None, str]:
    """(choice, why not): "1", "2", "tie" or "both_bad" from an annotation's results; None with the reason."""
    found: list[str] = []
    for part in result:
        if not isinstance(part, dict):
            continue
        value = part.get("value") or {}
        if part.get("type") == "pairwise":
            selected = value.get("selected")
            if selected in ("left", "right"):
                found.append("1" if selected == "left" else "2")
        elif part.get("type") == "choices":
            for choice in value.get("choices") or []:
                key = NO_PREFERENCE.get(str(choice).strip().lower())
                if key is not None:
                    found.append(key)
    distinct = sorted(set(found))
    if len(distinct) == 1:
        return distinct[0], ""
    if not distinct:
        return None, "no Pairwise selection and no tie / both_bad choice in the annotation"
    return None, f"contradicting selections in one annotation ({', '.join(distinct)})"


def read_file(imp: FileImport, *, judge_name: str | None = None) -> None:
    for index, where, task in read_json_array(imp):
        data = task.get("data")
        if not isinstance(data, dict):
            imp.flag(where, "error", "the task has no `data` object")
            continue
        first, second = data.get("first_id"), data.get("second_id")
        if first in (None, "") or second in (None, ""):
            imp.flag(where, "error", "data.first_id and data.second_id are needed: the systems behind the left "
                                     "and the right text")
            continue
        if str(first) == str(second):
            imp.flag(where, "error", f"data.first_id and data.second_id are both {first!r}")
            continue
        item = data.get("item") if data.get("item") not in (None, "") else task.get("id", index)
        round_ = data.get("round", 0)
        if isinstance(round_, bool) or not isinstance(round_, int):
            imp.flag(where, "warning", f"data.round {round_!r} is not an integer: round 0 used")
            round_ = 0
        annotations = task.get("annotations") or []
        if not annotations:
            imp.flag(where, "skipped", "task without annotations (not labelled yet)")
            continue
        for number, annotation in enumerate(annotations):
            place = f"{where}.annotations[{number}]"
            if not isinstance(annotation, dict):
                imp.flag(place, "error", "an annotation must be an object")
                continue
            if annotation.get("was_cancelled"):
                imp.flag(place, "skipped", "annotation cancelled (skipped by the annotator)")
                continue
            choice, why = _choice(annotation.get("result") or [])
            verdict = None if choice is None else {"1": "first", "2": "second"}.get(choice, "tie")
            if choice is None:
                imp.flag(place, "null_verdict", why)
            extra = {k: data[k] for k in ("origin", "reshow") if k in data}
            imp.add(make_record(
                item=item, first=str(first), second=str(second), verdict=verdict,
                judge=judge_name if judge_name is not None else f"human:{_annotator(annotation)}", round=round_,
                label=None, raw=None, choice=choice, seconds=annotation.get("lead_time"),
                task_id=task.get("id"), annotation_id=annotation.get("id"), **extra, _where=place,
            ))


def import_label_studio(paths: Sequence[Path], *, judge_name: str | None = None) -> ImportResult:
    """Presentation records, one per annotation of a Label Studio Pairwise project's JSON export."""
    return finish(read_paths(paths, FORMAT, read_file, judge_name=judge_name))
