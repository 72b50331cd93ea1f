"""Style covariates for a ranking, in the way of Chatbot Arena's style control: per comparison, the normalised
difference of the two answers' features, (first - second) / (first + second), scaled to unit standard deviation
over the comparisons so each coefficient reads as log-odds per standard deviation of that difference.

Features come from the records (`first_<name>`, `second_<name>` numeric fields, e.g. `first_length`) or from
answer texts (length in characters; markdown: headers, list items and bold spans).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
TEXT_FEATURES = ("length", "markdown")
_MARKDOWN = re.compile(r"(?m)^\s{0,3}#{1,6}\s|^\s*(?:[-*+]|\d+[.)])\s|\*\*[^*\n]+\*\*|__[^_\n]+__")


def text_feature(text: str, name: str) -> float:
    """A feature of one answer's text: its length in characters, or its count of markdown elements."""
    if name == "length":
        return float(len(text))
    if name == "markdown":
        return float(len(_MARKDOWN.findall(text)))
    raise ValueError(f"no text feature {name!r} (known: {', '.join(TEXT_FEATURES)})")


def normalised_difference(first: FloatArray, second: FloatArray) -> FloatArray:
    """(first - second) / (first + second), 0 where both are 0, then scaled to unit standard deviation."""
    total = first + second
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.where(total > 0, (first - second) / np.where(total > 0, total, 1.0), 0.0)
    sd = float(diff.std())
    return diff / sd if sd > 0 else diff


def covariate_matrix(first: Mapping[str, FloatArray], second: Mapping[str, FloatArray],
                     names: Sequence[str]) -> FloatArray:
    """Comparisons x covariates: each named feature's normalised difference, first answer minus second."""
    columns = [normalised_difference(np.asarray(first[n], dtype=np.float64), np.asarray(second[n], dtype=np.float64))
               for n in names]
    n = len(next(iter(first.values()))) if first else 0
    return np.column_stack(columns) if columns else np.empty((n, 0))
