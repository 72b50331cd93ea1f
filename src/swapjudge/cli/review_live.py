"""`swapjudge review serve` (the live blind review page) and `swapjudge review export`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from swapjudge.cli.app import display_path, stderr, user_errors
from swapjudge.cli.review import review_app
from swapjudge.errors import SwapjudgeError


def _say(text: str) -> None:
    stderr.print(text, highlight=False, markup=False)


@review_app.command("serve")
@user_errors
def serve_command(
    pairs: Annotated[Path, typer.Argument(help="Pairs file: {item, prompt, answers: {system: text}, label}.",
                                          show_default=False)],
    store: Annotated[Path, typer.Option(
        "--store", help="The review store (SQLite): created at the first start, resumed after a stop or crash "
                        "when started again with the same options.")] = Path("review.db"),
    reviewers: Annotated[str, typer.Option(
        "--reviewers", help="Reviewers' names, comma-separated: one secret link each.", show_default=False)] = "",
    host: Annotated[str, typer.Option(
        "--host", help="Address to listen on. Anything but a loopback address makes the page reachable from the "
                       "network.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port (0: any free one).")] = 8765,
    reshow: Annotated[float, typer.Option(
        "--reshow", min=0.0, max=1.0, help="Share of each reviewer's pairs shown again later, swapped: measures "
                                           "the reviewer's own swap-consistency.")] = 0.10,
    seed: Annotated[int | None, typer.Option(
        "--seed", help="Seed of the sample, the assignment, the orders and the re-shows (default: drawn once and "
                       "kept in the store).", show_default=False)] = None,
    sample: Annotated[int | None, typer.Option(
        "--sample", min=1, help="Review a seeded random sample of this many items (default: every item, unless "
                                "--queue is given). Only the sample's votes enter the corrected win rate.",
        show_default=False)] = None,
    queue: Annotated[Path | None, typer.Option(
        "--queue", help="A judge's records: its flipped and half-tied pairs are reviewed first, as a priority "
                        "queue labelled `queue` in the export.", show_default=False)] = None,
    judge: Annotated[str | None, typer.Option(
        "--judge", help="The judge of --queue / --judge-records, when the file holds several.")] = None,
    judge_records: Annotated[Path | None, typer.Option(
        "--judge-records", help="A judge's records for the status page: agreement with the judge and the corrected "
                                "win rate (default: the --queue file).", show_default=False)] = None,
    overlap: Annotated[int, typer.Option(
        "--overlap", min=1, help="Give each pair to this many reviewers, so their agreement can be measured.")] = 1,
    a: Annotated[str | None, typer.Option("--a", help="One system of the pairs (with --b), for items with more "
                                                      "than two answers; `a` of the win rate.")] = None,
    b: Annotated[str | None, typer.Option("--b", help="The other system.")] = None,
) -> None:
    """Serve a blind review page: each reviewer opens their link and votes with the keyboard (1, 2, t tie,
    b both bad, u undo, ? keys). Prints one `NAME: URL` line per reviewer; every vote is committed to the store
    before it is acknowledged. Export the votes with `swapjudge review export`."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise SwapjudgeError("the review server needs the review extra: pip install 'swapjudge[review]'") from None
    from swapjudge.review.app import LOOPBACK_HOSTS, create_app
    from swapjudge.review.serve import bind, is_loopback, run_server, url_host
    from swapjudge.workflows.review_live import open_review

    review = open_review(pairs, store, reviewers, reshow=reshow, seed=seed, sample=sample, queue=queue, judge=judge,
                         judge_records=judge_records, overlap=overlap, a=a, b=b)
    opened, resumed, context = review.store, review.resumed, review.judge
    names = opened.reviewers
    loopback = is_loopback(host)
    app = create_app(opened, judge=context, allowed_hosts=LOOPBACK_HOSTS if loopback else ["*"])
    sock = bind(host, port)
    base = f"http://{url_host(host)}:{sock.getsockname()[1]}"
    summary = opened.summary()
    _say(f"{'resumed' if resumed else 'created'} {display_path(store)}: {summary['tasks']:,} tasks for "
         f"{len(names)} reviewer(s), {summary['votes']:,} votes so far (seed {opened.meta('seed')})")
    if not loopback:
        _say(f"warning: listening on {host}: the page can be reached from the network by anyone who has a link; "
             "send each link to its reviewer only")
    for principal, token in opened.tokens():
        if principal.role == "reviewer":
            print(f"{principal.name}: {base}/?token={token}", flush=True)
    owner = next(token for p, token in opened.tokens() if p.role == "owner")
    _say(f"status page (owner only): {base}/status?token={owner}")
    if context is not None:
        _say(f"on the status page, a = {context.a} and b = {context.b} (the page shows no system name)")
    _say("press Ctrl-C to stop; starting again with the same --store resumes where it stopped")
    try:
        run_server(app, sock)
    finally:
        opened.close()


@review_app.command("export")
@user_errors
def export_command(
    store: Annotated[Path, typer.Option("--store", help="The review store of `swapjudge review serve`.",
                                        show_default=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write (`-`: stdout).",
                                         show_default=False)],
    format: Annotated[str, typer.Option(
        "--format", "-f", help="records (presentation records, JSON Lines or .csv), label-studio (a JSON task "
                               "list with the votes as annotations) or langsmith (JSON Lines of examples).")]
    = "records",
    origin: Annotated[str, typer.Option(
        "--origin", help="all, sample (the random sample only) or queue (the judge's priority queue only).")]
    = "all",
) -> None:
    """Write the votes so far: one presentation record per vote, judge `human:<reviewer>`, `first`/`second` the
    systems in the order shown, `origin` sample or queue, `reshow` true for the swapped re-shows. `analyze`,
    `agreement`, `panel` and `calibrate --human` read the records as they are (pairs shown once are single-order
    calls: `analyze --allow-unpaired`)."""
    from swapjudge.workflows.review_live import export_votes

    written, reviewers = export_votes(store, output, format=format, origin=origin)
    _say(f"wrote {written:,} votes of {reviewers} reviewer(s) to {display_path(output)} ({format})")
    if format == "records" and written:
        _say(f"analyse them like any judge's: swapjudge analyze {display_path(output)} --allow-unpaired")
