"""`swapjudge review serve` and `review export`: a live review opened (created from its plan, or resumed) with
what its status page compares the votes with, and the votes written out."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swapjudge.errors import ArgumentError, SwapjudgeError

if TYPE_CHECKING:
    from swapjudge.review.status import JudgeContext
    from swapjudge.review.store import ReviewStore


@dataclass
class LiveReview:
    """An open review store, whether it was resumed, and the judge its status page compares the votes with."""

    store: ReviewStore
    resumed: bool
    judge: JudgeContext | None


def _sha256(path: str | Path) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as err:
        raise SwapjudgeError(f"{path}: cannot read: {err.strerror}") from None


def open_review(pairs: str | Path, store: str | Path, reviewers: str | list[str], *, reshow: float = 0.10,
                seed: int | None = None, sample: int | None = None, queue: str | Path | None = None,
                judge: str | None = None, judge_records: str | Path | None = None, overlap: int = 1,
                a: str | None = None, b: str | None = None) -> LiveReview:
    """Create the review store with its plan (seeded sample, the judge's priority queue from `queue`, overlap,
    shown orders, re-shows), or resume it when it was made with the same options; and load the judge records
    (`judge_records`, default `queue`) the status page compares the votes with."""
    from swapjudge.core.pairs_file import load_pairs
    from swapjudge.core.records import load_records
    from swapjudge.review.assign import ReviewPlan, parse_reviewers, plan_review
    from swapjudge.review.queue import unsettled_pairs
    from swapjudge.review.status import judge_context
    from swapjudge.review.store import ReviewStore

    names = parse_reviewers(reviewers) if isinstance(reviewers, str) else parse_reviewers(",".join(reviewers))
    if (a is None) != (b is None):
        raise ArgumentError("give both {a} and {b}, or neither", "a", "b")
    config: dict[str, Any] = {
        "pairs_sha256": _sha256(pairs), "reviewers": names, "reshow": reshow, "overlap": overlap, "sample": sample,
        "queue_sha256": _sha256(queue) if queue is not None else None, "judge": judge, "a": a, "b": b, "seed": seed}

    def make_plan() -> ReviewPlan:
        queued = (unsettled_pairs(load_records(queue, allow_unpaired=True), judge=judge, a=a, b=b)
                  if queue is not None else None)
        return plan_review(load_pairs(pairs).items, names, seed=seed, reshow=reshow, overlap=overlap,
                           sample=sample, queue=queued, a=a, b=b, source=str(pairs))

    opened, resumed = ReviewStore.create_or_resume(store, make_plan, config)
    judged = judge_records if judge_records is not None else queue
    try:
        context = judge_context(judged, opened.systems(), judge=judge, a=a, b=b) if judged is not None else None
    except BaseException:
        opened.close()
        raise
    return LiveReview(opened, resumed, context)


def export_votes(store: str | Path, output: str | Path, *, format: str = "records",
                 origin: str = "all") -> tuple[int, int]:
    """Write the store's live votes (see `swapjudge.review.export.export_review`); (votes, reviewers who voted)."""
    from swapjudge.review.export import EXPORT_FORMATS, ORIGINS, export_review
    from swapjudge.review.store import store_summary

    if format not in EXPORT_FORMATS:
        raise ArgumentError(f"{{format}} must be one of {', '.join(EXPORT_FORMATS)}, got {format!r}", "format")
    if origin not in ORIGINS:
        raise ArgumentError(f"{{origin}} must be one of {', '.join(ORIGINS)}, got {origin!r}", "origin")
    summary = store_summary(store)  # checks it is a review store before anything is written
    return export_review(store, output, format=format, origin=origin), len(summary["votes"])
