"""One presentation record's fields checked and normalised (docs/records.md), with the standard library alone: the
line-by-line reader of `reading.records` and the small-file reader of `reading.small` (which loads no polars,
so `swapjudge analyze` of a small file starts fast) both call `parse_row`, so both say the same of a record."""

from __future__ import annotations

import json
from typing import Any

from swapjudge.errors import InputError, SwapjudgeError

VERDICT_VALUES = ("first", "second", "tie")
REQUIRED = ("item", "first", "second", "verdict")
# a call's identity: no two records may share it
KEY = ("judge", "round", "item", "first", "second")
# Provenance the analysis reads even when extras are skipped: the tie policy a run was registered with, the two
# systems it compared (which one is `a`: the side its win rate is of), an adaptive run's threshold (its pairs
# whose swap was skipped are single-order by design, not a defect), and a live review's re-show share (the pairs
# it showed a reviewer once are single-order by design too).
REGISTERED_POLICY = "registered_tie_policy"
REGISTERED_A = "registered_a"
REGISTERED_B = "registered_b"
REGISTERED_ADAPTIVE = "registered_adaptive_swap"
REGISTERED_RESHOW = "registered_reshow"
# Verdict probabilities, read even when extras are skipped: the analysis' debiased verdicts use them.
PROBABILITIES = ("p_first", "p_second")
# A graded verdict's strength (docs/records.md): 1 = slightly better, 2 = much better, null for a tie or unknown;
# read even when extras are skipped, since the graded swap analysis needs it.
STRENGTH = "strength"
STRENGTH_VALUES = (1, 2)
# the names earlier arena-hard imports wrote, read as the numbers they mean
STRENGTH_ALIASES = {"slight": 1, "strong": 2}


def parse_row(obj: dict[str, Any], path: str, number: int) -> dict[str, Any]:
    """Check one record's fields; returns it normalised, with its line number under `_line`."""
    for name in REQUIRED:
        if name not in obj:
            raise InputError("missing", path=path, line=number, field=name)
    out = dict(obj)
    for name in ("item", "first", "second"):
        value = obj[name]
        if value is None or isinstance(value, bool) or not isinstance(value, str | int) or value == "":
            raise InputError(f"must be a non-empty string or integer, got {json.dumps(value)}",
                             path=path, line=number, field=name)
        out[name] = str(value)
    verdict = obj["verdict"]
    if verdict is not None and verdict not in VERDICT_VALUES:
        raise InputError(f"unknown value {json.dumps(verdict)} (expected \"first\", \"second\", \"tie\" or null)",
                         path=path, line=number, field="verdict")
    judge = obj.get("judge")
    if judge is not None and not isinstance(judge, str):
        raise InputError(f"must be a string, got {json.dumps(judge)}", path=path, line=number, field="judge")
    out["judge"] = judge or ""
    out["round"] = _parse_round(obj.get("round"), path, number)
    label = obj.get("label")
    if label is not None and (isinstance(label, bool) or not isinstance(label, str | int)):
        raise InputError(f"must be a string, got {json.dumps(label)}", path=path, line=number, field="label")
    out["label"] = None if label in (None, "") else str(label)
    if STRENGTH in obj:
        out[STRENGTH] = _parse_strength(obj[STRENGTH], verdict, path, number)
    for name in PROBABILITIES:
        if obj.get(name) is not None:
            out[name] = _probability(obj[name], path, number, name)
    out["_line"] = number
    return out


def _parse_strength(value: Any, verdict: Any, path: str, number: int) -> int | None:
    """A graded verdict's strength: 1 (slightly) or 2 (much), null for a tie or unknown."""
    if isinstance(value, str):
        value = value.strip()
        value = None if value == "" else STRENGTH_ALIASES.get(value, int(value) if value in ("1", "2") else value)
    if value is None:
        return None
    if isinstance(value, bool) or value not in STRENGTH_VALUES:
        raise InputError(f"unknown value {json.dumps(value)} (expected 1 for slightly better, 2 for much better, "
                         "or null)", path=path, line=number, field=STRENGTH)
    if verdict is None or verdict == "tie":
        what = "a tie" if verdict == "tie" else "a null verdict"
        raise InputError(f"{json.dumps(value)} on {what}: only a verdict naming a slot has a strength (null here)",
                         path=path, line=number, field=STRENGTH)
    return int(value)


def _probability(value: Any, path: str, number: int, name: str) -> float:
    """A verdict probability: a finite number in [0, 1] (NaN, infinities, negatives and text would move the
    debiased verdicts silently)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
        return float(value)
    shown = json.dumps(value) if isinstance(value, str | int | float) else repr(value)
    raise InputError(f"must be a probability between 0 and 1 (or null), got {shown}", path=path, line=number,
                     field=name)


def _parse_round(value: Any, path: str, number: int) -> int:
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise InputError(f"must be an integer, got {json.dumps(value)}", path=path, line=number, field="round")


def choose_judges(judges: list[str], judge: str | None = None) -> list[str]:
    """The sorted judges, or only `judge` when given (an error naming the others if absent)."""
    if judge is None:
        return judges
    if judge not in judges:
        raise SwapjudgeError(f"no records for judge {judge!r}; judges in the file: "
                             + ", ".join(repr(j) for j in judges))
    return [judge]
