"""`swapjudge review queue|sheet|serve|export`: the pairs a judge could not settle, blind sheets for people (their
filled copies are read back by `review.sheet.tally_sheets`); the live review page opened
(created from its plan, or resumed) with what its status page compares the votes with, and its votes written out."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swapjudge.errors import ArgumentError, SwapjudgeError
from swapjudge.reading.records import read_records
from swapjudge.workflows.sources import report_source

if TYPE_CHECKING:
    import polars as pl

    from swapjudge.review.sheet import Sheet
    from swapjudge.review.status import JudgeContext
    from swapjudge.review.votes import ReviewStore


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
        only = unsettled_pairs(read_records(flipped, allow_unpaired=True), judge=judge, a=a, b=b)
        if not only:
            return None, only
    return make_sheet(load_pair_items(pairs), seed=seed, a=a, b=b, source=str(pairs), only=only), only


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
                a: str | None = None, b: str | None = None, design: str | None = None,
                budget: float | None = None, pi_min: float | None = None) -> LiveReview:
    """Create the review store with its plan (seeded sample, the judge's priority queue from `queue`, overlap,
    shown orders, re-shows), or resume it when it was made with the same options; and load the judge records
    (`judge_records`, default `queue`) the status page compares the votes with.

    `design` uniform / active with `budget`: the sample is a Poisson draw, each item with its probability pi
    (recorded with every pair, exported with every vote); active draws by the judge's uncertainty on each item,
    read from `judge_records` (default `queue`), pi proportional to its square root, floored at `pi_min`."""
    from swapjudge.core.active_ppi import ACTIVE, DESIGNS
    from swapjudge.reading.pairs_file import load_pairs
    from swapjudge.reading.records import read_records
    from swapjudge.review.assign import ReviewPlan, parse_reviewers, plan_review
    from swapjudge.review.queue import unsettled_pairs
    from swapjudge.review.status import judge_context
    from swapjudge.review.votes import ReviewStore

    names = parse_reviewers(reviewers) if isinstance(reviewers, str) else parse_reviewers(",".join(reviewers))
    if (a is None) != (b is None):
        raise ArgumentError("give both {a} and {b}, or neither", "a", "b")
    config: dict[str, Any] = {
        "pairs_sha256": _sha256(pairs), "reviewers": names, "reshow": reshow, "overlap": overlap, "sample": sample,
        "queue_sha256": _sha256(queue) if queue is not None else None, "judge": judge, "a": a, "b": b, "seed": seed,
        "design": design, "budget": budget, "pi_min": pi_min}
    judged = judge_records if judge_records is not None else queue
    if design is not None and design not in DESIGNS:
        raise ArgumentError(f"{{design}} must be one of {', '.join(DESIGNS)}, got {design!r}", "design")
    if design == ACTIVE and judged is None:
        raise ArgumentError("the active {design} draws by the judge's uncertainty: give the judge's records "
                            "({judge_records} or {queue})", "design", "judge_records", "queue")

    def make_plan() -> ReviewPlan:
        queued = (unsettled_pairs(read_records(queue, allow_unpaired=True), judge=judge, a=a, b=b)
                  if queue is not None else None)
        items = load_pairs(pairs).items
        uncertainty = None
        if design == ACTIVE:
            from swapjudge.review.assign import pair_of
            from swapjudge.review.design import item_uncertainty

            systems = [pair_of(it, a, b, str(pairs)) for it in items]
            uncertainty, _ = item_uncertainty(read_records(judged, allow_unpaired=True), items, systems,
                                              judge=judge)
        return plan_review(items, names, seed=seed, reshow=reshow, overlap=overlap, sample=sample, queue=queued,
                           a=a, b=b, source=str(pairs), design=design, budget=budget, uncertainty=uncertainty,
                           pi_min=pi_min)

    opened, resumed = ReviewStore.create_or_resume(store, make_plan, config)
    try:
        context = judge_context(judged, opened.systems(), judge=judge, a=a, b=b) if judged is not None else None
    except BaseException:
        opened.close()
        raise
    return LiveReview(opened, resumed, context)


@dataclass
class ServedReview:
    """The live review page, built and listening (not yet serving): its store, the address reviewers open, the
    links (one secret token each) and the app. `serve()` runs it until Ctrl-C, then closes the store."""

    review: LiveReview
    app: Any
    sock: Any  # the bound socket.socket
    host: str
    base: str  # http://HOST:PORT

    @property
    def loopback(self) -> bool:
        from swapjudge.review.serve import is_loopback

        return is_loopback(self.host)

    def links(self) -> list[tuple[str, str]]:
        """(reviewer, URL) for each reviewer, in the store's order."""
        return [(p.name, f"{self.base}/?token={token}") for p, token in self.review.store.tokens()
                if p.role == "reviewer"]

    def status_link(self) -> str:
        """The owner's status page."""
        owner = next(token for p, token in self.review.store.tokens() if p.role == "owner")
        return f"{self.base}/status?token={owner}"

    def serve(self) -> None:
        from swapjudge.review.serve import run_server

        try:
            run_server(self.app, self.sock)
        finally:
            self.review.store.close()


def serve_review(pairs: str | Path, store: str | Path, reviewers: str | list[str], *, host: str = "127.0.0.1",
                 port: int = 8765, **options: Any) -> ServedReview:
    """Open the review (`open_review`, with its `options`) and bind its page on `host`:`port` (0: any free port),
    open to loopback hosts only unless `host` is another address. Needs the review extra."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise SwapjudgeError("the review server needs the review extra: pip install 'swapjudge[review]'") from None
    from swapjudge.review.serve import bind, is_loopback, url_host
    from swapjudge.review.web import LOOPBACK_HOSTS, create_app

    review = open_review(pairs, store, reviewers, **options)
    try:
        loopback = is_loopback(host)
        app = create_app(review.store, judge=review.judge, allowed_hosts=LOOPBACK_HOSTS if loopback else ["*"])
        sock = bind(host, port)
    except BaseException:
        review.store.close()
        raise
    return ServedReview(review, app, sock, host, f"http://{url_host(host)}:{sock.getsockname()[1]}")


def export_votes(store: str | Path, output: str | Path, *, format: str = "records",
                 origin: str = "all") -> tuple[int, int]:
    """Write the store's live votes (see `swapjudge.review.export.export_review`); (votes, reviewers who voted)."""
    from swapjudge.review.export import EXPORT_FORMATS, ORIGINS, export_review
    from swapjudge.review.votes import store_summary

    if format not in EXPORT_FORMATS:
        raise ArgumentError(f"{{format}} must be one of {', '.join(EXPORT_FORMATS)}, got {format!r}", "format")
    if origin not in ORIGINS:
        raise ArgumentError(f"{{origin}} must be one of {', '.join(ORIGINS)}, got {origin!r}", "origin")
    summary = store_summary(store)  # checks it is a review store before anything is written
    return export_review(store, output, format=format, origin=origin), len(summary["votes"])
