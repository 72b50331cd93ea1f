"""Which swapped calls an adaptive run skips: pure functions of the first verdicts and their probabilities."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def verdict_confidence(verdict: str | None, probabilities: Mapping[str, float] | None) -> float | None:
    """The probability of the verdict given, normalised over the verdict options; None when unknown."""
    if verdict is None or not probabilities or verdict not in probabilities:
        return None
    total = sum(v for v in probabilities.values() if v > 0)
    return None if total <= 0 else probabilities[verdict] / total


def adaptive_skips(calls: Iterable[Mapping[str, Any]], threshold: float) -> dict[tuple[int, str, str, str], float]:
    """The swapped calls adaptive swapping does not make: for each stored first-order call without a transport
    error whose verdict's confidence is at least `threshold`, the key (round, item, first, second) of its swapped
    call, with that confidence. Deterministic from the stored first calls, so a resumed run skips the same ones."""
    out: dict[tuple[int, str, str, str], float] = {}
    for c in calls:
        if c["order_index"] != 0 or c["error"] is not None or c.get("source") == "inferred":
            continue
        conf = verdict_confidence(c["verdict"], c["probabilities"])
        if conf is not None and conf >= threshold:
            out[(int(c["round"]), str(c["item"]), str(c["second"]), str(c["first"]))] = conf
    return out
