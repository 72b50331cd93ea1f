"""The judge's uncertainty on each item of a review, from its records in both orders: what an active design
draws by (`core.active_ppi.pair_uncertainty` of `core.confidence`'s pair confidence, the escalation cascade's)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from swapjudge.core.active_ppi import UNSETTLED_UNCERTAINTY, pair_uncertainty
from swapjudge.core.confidence import records_confidence
from swapjudge.errors import InputError
from swapjudge.reading.pairs_file import PairItem
from swapjudge.reading.records import RecordSet


def item_uncertainty(records: RecordSet, items: Sequence[PairItem], pairs: Sequence[tuple[str, str]], *,
                     judge: str | None = None) -> tuple[list[float], int]:
    """(u per item, items the judge never judged): u of the judge's pair of each item's two systems `pairs[i]`
    (x, y), averaged over its rounds; an item the judge has no pair for gets the largest u (0.25: nothing is
    known of it)."""
    frame = records.frame
    judges = records.judges
    if judge is None and len(judges) > 1:
        raise InputError(f"records hold {len(judges)} judges ({', '.join(judges)}); choose one with {{judge}}",
                         path=records.source, arguments=("judge",))
    if judge is not None:
        if judge not in judges:
            raise InputError(f"no records of judge {judge!r} (judges: {', '.join(judges) or '(unnamed)'})",
                             path=records.source)
        frame = frame.filter(frame.get_column("judge") == judge)
    table, confidence = records_confidence(frame)
    u = pair_uncertainty(confidence)
    sums: dict[tuple[str, str, str], list[float]] = {}
    for (item, x, y), value in zip(table.frame.select("item", "x", "y").iter_rows(), u, strict=True):
        key = (str(item), *sorted((str(x), str(y))))
        sums.setdefault(key, []).append(float(value))  # type: ignore[arg-type]
    out, unseen = [], 0
    for it, (x, y) in zip(items, pairs, strict=True):
        found = sums.get((str(it.item), *sorted((x, y))))  # type: ignore[arg-type]
        if found is None:
            unseen += 1
            out.append(UNSETTLED_UNCERTAINTY)
        else:
            out.append(float(np.mean(found)))
    return out, unseen
