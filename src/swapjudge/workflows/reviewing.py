"""`swapjudge review queue|sheet|tally`: the pairs a judge could not settle, blind sheets for people, and the
filled sheets back as presentation records with each reviewer as a judge."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from swapjudge.core.records import load_records
from swapjudge.errors import ArgumentError, SwapjudgeError
from swapjudge.workflows.sources import report_source

if TYPE_CHECKING:
    import polars as pl

    from swapjudge.review.sheet import Sheet, Tally


def _both_or_neither(a: str | None, b: str | None) -> None:
    if (a is None) != (b is None):
        raise ArgumentError("give both {a} and {b}, or neither", "a", "b")


def queue(source: str | Path, *, judge: str | None = None, a: str | None = None, b: str | None = None,
          pairs: str | Path | None = None, run: int | None = None, allow_unpaired: bool = False) -> pl.DataFrame:
    """The pairs that flipped or half-tied, with both answers (when known) and both raw judge replies."""
    from swapjudge.review.queue import review_queue

    _both_or_neither(a, b)
    loaded = report_source(source, pairs=pairs, run=run, allow_unpaired=allow_unpaired)
    if judge is not None and judge not in loaded.records.judges:
        raise SwapjudgeError(f"no records for judge {judge!r}; judges: "
                             + ", ".join(repr(j) for j in loaded.records.judges))
    return review_queue(loaded.frame, judge=judge, a=a, b=b)


def sheet(pairs: str | Path, *, seed: int | None = None, a: str | None = None, b: str | None = None,
          flipped: str | Path | None = None,
          judge: str | None = None) -> tuple[Sheet | None, list[tuple[str, str, str]] | None]:
    """A blind review sheet: each pair twice (the second time swapped), shuffled, no system names; with
    `flipped` (a judge's records) only the pairs that judge could not settle. Returns the sheet and the unsettled
    pairs (item, x, y) it was limited to: (sheet, None) for every pair, (None, []) when the judge settled every
    pair and there is nothing to review."""
    from swapjudge.review.queue import load_pair_items, unsettled_pairs
    from swapjudge.review.sheet import make_sheet

    _both_or_neither(a, b)
    if judge is not None and flipped is None:
        raise ArgumentError("{judge} chooses whose flipped pairs to review: give {flipped} RECORDS too", "judge",
                            "flipped")
    only = None
    if flipped is not None:
        only = unsettled_pairs(load_records(flipped, allow_unpaired=True), judge=judge, a=a, b=b)
        if not only:
            return None, only
    return make_sheet(load_pair_items(pairs), seed=seed, a=a, b=b, source=str(pairs), only=only), only


def tally(filled: Sequence[str | Path], key: str | Path, *, reviewer: str | None = None,
          allow_partial: bool = False) -> Tally:
    """Filled sheets as presentation records, each reviewer a judge; every problem is listed at once, by row."""
    from swapjudge.review.sheet import tally_sheets

    return tally_sheets(list(filled), key, reviewer=reviewer, allow_partial=allow_partial)
