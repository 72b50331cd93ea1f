"""AlpacaEval's two side files of its length-controlled win rate, which AlpacaEval downloads at run time from its
Hugging Face dataset (tatsu-lab/alpaca_eval): read here in exactly those formats (extra columns are ignored).

- `instruction_difficulty.csv`: first column the instruction's index (0..804: its position in the evaluation set
  and in every annotations file; the column's header may be empty), then a column `instruction_difficulty`.
- `df_gamed.csv`: annotations of length-gamed versions of the baseline against the baseline, one row each, with
  columns `model` (the gamed version), `index` (the instruction), `preference` (in [0, 1], 1 = the gamed version
  wins; empty: unusable), `std_delta_len` (standardised len(baseline) - len(gamed version), AlpacaEval's sign),
  and optionally `instruction_difficulty` and `not_gamed_baseline` (must be false). AlpacaEval's fit takes every
  difficulty, the gamed rows' and the evaluated model's, from this file's `instruction_difficulty` (the first row
  of each instruction; AlpacaEval reads it by row position, which is the same row in its file, whose first 805
  rows are the instructions 0..804 in order). Here the file's values are checked against the difficulty file to
  1e-6 and then used as AlpacaEval uses them: they differ from instruction_difficulty.csv in the last digits.

Errors name the file, the line and the column.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from swapjudge.errors import InputError
from swapjudge.probes.alpaca_lc import GamedRows
from swapjudge.reading.textfiles import csv_rows, read_text

DIFFICULTY_COLUMN = "instruction_difficulty"
GAMED_COLUMNS = ("model", "index", "preference", "std_delta_len")
# the two files are written by the same pipeline; a larger gap means they do not belong together
DIFFICULTY_TOLERANCE = 1e-6


def _number(text: str | None, path: Path, line: int, column: str, *, empty_ok: bool = False) -> float:
    if text is None or not text.strip():
        if empty_ok:
            return math.nan
        raise InputError("empty", path=str(path), line=line, field=column)
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"not a number: {text!r}", path=str(path), line=line, field=column) from None
    if not math.isfinite(value):
        raise InputError(f"not a finite number: {text!r}", path=str(path), line=line, field=column)
    return value


def _key(text: str | None, path: Path, line: int, column: str) -> str:
    if text is None or not text.strip():
        raise InputError("empty instruction index", path=str(path), line=line, field=column or "(first column)")
    return text.strip()


def load_instruction_difficulty(path: str | Path) -> dict[str, float]:
    """Difficulty per instruction index (as a string, compared with the records' instruction_index or item)."""
    path = Path(path)
    out: dict[str, float] = {}
    for line, row in csv_rows(read_text(path), str(path), required=(DIFFICULTY_COLUMN,)):
        first = next(iter(row))
        if first == DIFFICULTY_COLUMN:
            raise InputError("the first column must be the instruction index", path=str(path), line=1,
                             field=DIFFICULTY_COLUMN)
        key = _key(row[first], path, line, first)
        if key in out:
            raise InputError(f"instruction {key!r} listed twice", path=str(path), line=line, field=first or None)
        out[key] = _number(row[DIFFICULTY_COLUMN], path, line, DIFFICULTY_COLUMN)
    if not out:
        raise InputError("no rows", path=str(path))
    return out


def load_gamed_baseline(path: str | Path, difficulty: Mapping[str, float] | None = None) -> GamedRows:
    """The gamed baselines' rows, in this package's sign (std_delta_len of gamed minus baseline); each row's
    difficulty from `difficulty` by its index (0 without one)."""
    path = Path(path)
    prefs: list[float] = []
    deltas: list[float] = []
    keys: list[str] = []
    diffs: list[float] = []
    models: set[str] = set()
    own_difficulty: dict[str, float] = {}  # the file's own difficulty of each instruction, from its first row
    for line, row in csv_rows(read_text(path), str(path), required=GAMED_COLUMNS):
        model = (row["model"] or "").strip()
        if not model:
            raise InputError("empty", path=str(path), line=line, field="model")
        key = _key(row["index"], path, line, "index")
        pref = _number(row["preference"], path, line, "preference", empty_ok=True)
        if not (math.isnan(pref) or 0 <= pref <= 1):
            raise InputError(f"must lie between 0 and 1, got {pref!r}", path=str(path), line=line, field="preference")
        if (row.get("not_gamed_baseline") or "").strip().lower() in ("true", "1", "1.0"):
            raise InputError("must be false: this file holds the gamed baselines' rows", path=str(path), line=line,
                             field="not_gamed_baseline")
        value = 0.0
        if difficulty is not None:
            if key not in difficulty:
                raise InputError(f"instruction {key!r} is not in the difficulty file", path=str(path), line=line,
                                 field="index")
            value = difficulty[key]
            own = row.get(DIFFICULTY_COLUMN)
            if own is not None and own.strip():
                stated = _number(own, path, line, DIFFICULTY_COLUMN)
                if abs(stated - value) > DIFFICULTY_TOLERANCE:
                    raise InputError(f"{own.strip()} differs from the difficulty file's {value!r} for instruction "
                                     f"{key!r}", path=str(path), line=line, field=DIFFICULTY_COLUMN)
                own_difficulty.setdefault(key, stated)  # a's rows: the instruction's first row, as AlpacaEval
                value = stated  # the gamed row's own, as AlpacaEval fits it
        models.add(model)
        prefs.append(pref)
        # AlpacaEval's delta is len(baseline) - len(gamed version); here every delta is the compared side minus b
        deltas.append(-_number(row["std_delta_len"], path, line, "std_delta_len"))
        keys.append(key)
        diffs.append(value)
    if not keys:
        raise InputError("no rows", path=str(path))
    return GamedRows(np.array(prefs), np.array(deltas), np.array(keys), np.array(diffs), len(models),
                     own_difficulty if len(own_difficulty) == len(set(keys)) else None)
