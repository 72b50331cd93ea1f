"""`swapjudge review queue|sheet|tally`: the pairs a judge could not settle, blind sheets for people, and the
filled sheets back as records; `review serve|export`: the live blind review page and its votes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from swapjudge.cli.app import (
    AllowUnpairedOpt,
    JudgeOpt,
    PairsOpt,
    RecordsOrStoreArg,
    RunOpt,
    SystemAOpt,
    SystemBOpt,
    app,
    display_path,
    stderr,
    user_errors,
)

review_app = typer.Typer(name="review", help="Human review: the queue of unsettled pairs, blind review sheets, the "
                         "live review page and its votes.",
                         no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
app.add_typer(review_app, name="review")

@review_app.command("queue")
@user_errors
def queue_command(
    source: RecordsOrStoreArg,
    output: Annotated[Path, typer.Option("--output", "-o", help="Queue file: .jsonl or .csv.")],
    judge: JudgeOpt = None,
    a: SystemAOpt = None,
    b: SystemBOpt = None,
    pairs: PairsOpt = None,
    run: RunOpt = None,
    allow_unpaired: AllowUnpairedOpt = False,
) -> None:
    """The pairs that flipped or half-tied, with both answers (when known) and both raw judge replies."""
    from swapjudge.review.queue import QUEUE_FIELDS, write_table
    from swapjudge.workflows.review import queue

    pending = queue(source, judge=judge, a=a, b=b, pairs=pairs, run=run, allow_unpaired=allow_unpaired)
    write_table(pending, output, QUEUE_FIELDS)
    stderr.print(f"wrote {pending.height:,} pairs to {display_path(output)}", highlight=False, markup=False)


@review_app.command("sheet")
@user_errors
def sheet_command(
    pairs: Annotated[Path, typer.Argument(help="Pairs file: {item, prompt, answers: {system: text}, label}.",
                                          show_default=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="The blind sheet (CSV) for reviewers.")],
    key: Annotated[Path, typer.Option("--key", help="The key (CSV): which system sat where. Keep it apart.")],
    seed: Annotated[int | None, typer.Option("--seed", help="Seed of the coin and the shuffle.")] = None,
    html_out: Annotated[Path | None, typer.Option("--html", help="Also write a printable HTML sheet.")] = None,
    a: SystemAOpt = None,
    b: SystemBOpt = None,
    flipped: Annotated[Path | None, typer.Option(
        "--flipped", help="Records of a judge: put on the sheet only the pairs it could not settle (flips and "
                          "half-ties), for people to decide.", show_default=False)] = None,
    judge: Annotated[str | None, typer.Option(
        "--judge", help="With --flipped: the judge whose unsettled pairs are reviewed (needed when the records "
                        "hold several).")] = None,
) -> None:
    """A blind review sheet: each pair twice (the second time swapped), shuffled, no system names."""
    from swapjudge.review.sheet import write_sheet
    from swapjudge.workflows.review import sheet

    made, only = sheet(pairs, seed=seed, a=a, b=b, flipped=flipped, judge=judge)
    if made is None:
        stderr.print(f"{display_path(flipped)}: the judge settled every pair (no flip, no half-tie): "
                     "no sheet written", highlight=False, markup=False)
        return
    write_sheet(made, output, key)
    if html_out is not None:
        from swapjudge.reading.textfiles import write_atomic
        from swapjudge.report.sheet_html import render_sheet

        write_atomic(html_out, render_sheet(made))
    what = f" ({len(only):,} unsettled pairs)" if only is not None else ""
    stderr.print(f"wrote {len(made.tasks):,} tasks{what} to {display_path(output)} and the key to {key} "
                 f"(seed {made.seed})", highlight=False, markup=False)


@review_app.command("tally")
@user_errors
def tally_command(
    filled: Annotated[list[Path], typer.Argument(
        help="Filled sheets (CSV as a spreadsheet saves it: comma, semicolon or tab; UTF-8 or Windows-1252; "
             "`choice` = left, right or tie). Several sheets, e.g. one per reviewer, make one records file.",
        show_default=False)],
    key: Annotated[Path, typer.Option("--key", help="The key written with the sheet.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Presentation records: .jsonl or .csv.")],
    reviewer: Annotated[str | None, typer.Option(
        "--reviewer", help="Judge name for rows whose `reviewer` cell is empty (default: `reviewer` for one "
                           "sheet, each sheet's file name for several).", show_default=False)] = None,
    allow_partial: Annotated[bool, typer.Option(
        "--allow-partial", help="Tally a half-filled sheet: unanswered tasks are listed, not errors.")] = False,
) -> None:
    """Turn filled sheets into presentation records with each reviewer as a judge (analyse them like any
    judge's: `swapjudge analyze records.jsonl --allow-unpaired`). Every problem is listed at once, by row."""
    from swapjudge.review.queue import write_table
    from swapjudge.review.sheet import tally_sheets

    result = tally_sheets(filled, key, reviewer=reviewer, allow_partial=allow_partial)
    for warning in result.warnings:
        stderr.print(f"warning: {warning}", highlight=False, markup=False)
    write_table(list(result.records), output)
    if result.unanswered:
        by_reviewer: dict[str, list[str]] = {}
        for _, name, task in result.unanswered:
            by_reviewer.setdefault(name, []).append(task)
        for name, tasks in by_reviewer.items():
            stderr.print(f"unanswered by {name}: {len(tasks):,} task(s): {', '.join(sorted(tasks))}",
                         highlight=False, markup=False)
    reviewers = ", ".join(result.reviewers)
    stderr.print(f"wrote {len(result.records):,} records ({reviewers}) to {display_path(output)}", highlight=False,
                 markup=False)


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
    design: Annotated[str | None, typer.Option(
        "--design", help="Draw the sample item by item with a recorded probability pi (exported with every vote, "
                         "weighted by 1/pi in `calibrate`): uniform (pi = budget / items) or active (pi "
                         "proportional to the square root of the judge's uncertainty on the item: a flip or "
                         "half-tie highest; needs --judge-records or --queue). Instead of --sample.",
        show_default=False)] = None,
    budget: Annotated[float | None, typer.Option(
        "--budget", min=1.0, help="With --design: the number of labelled items expected (the pi add up to it).",
        show_default=False)] = None,
    pi_min: Annotated[float | None, typer.Option(
        "--pi-min", min=0.0, max=1.0, help="With --design active: the least pi any item gets (default a quarter "
                                           "of budget / items), which bounds how much a misleading uncertainty "
                                           "can widen the interval.", show_default=False)] = None,
) -> None:
    """Serve a blind review page: each reviewer opens their link and votes with the keyboard (1, 2, t tie,
    b both bad, u undo, ? keys). Prints one `NAME: URL` line per reviewer; every vote is committed to the store
    before it is acknowledged. Export the votes with `swapjudge review export`."""
    from swapjudge.workflows.review import serve_review

    server = serve_review(pairs, store, reviewers, host=host, port=port, reshow=reshow, seed=seed, sample=sample,
                          queue=queue, judge=judge, judge_records=judge_records, overlap=overlap, a=a, b=b,
                          design=design, budget=budget, pi_min=pi_min)
    opened, context = server.review.store, server.review.judge
    summary = opened.summary()
    _say(f"{'resumed' if server.review.resumed else 'created'} {display_path(store)}: {summary['tasks']:,} tasks "
         f"for {len(opened.reviewers)} reviewer(s), {summary['votes']:,} votes so far (seed {opened.meta('seed')})")
    drawn = opened.draws() if design is not None else None
    if drawn is not None and drawn["drawn"]:
        _say(f"{drawn['design']} design: {drawn['drawn']:,} items drawn for the sample (budget {budget:g}), each "
             f"with its probability pi ({drawn['pi_min']:.3g} to {drawn['pi_max']:.3g}), recorded with every vote")
    if not server.loopback:
        _say(f"warning: listening on {host}: the page can be reached from the network by anyone who has a link; "
             "send each link to its reviewer only")
    for name, link in server.links():
        print(f"{name}: {link}", flush=True)
    _say(f"status page (owner only): {server.status_link()}")
    if context is not None:
        _say(f"on the status page, a = {context.a} and b = {context.b} (the page shows no system name)")
    _say("press Ctrl-C to stop; starting again with the same --store resumes where it stopped")
    server.serve()


@review_app.command("export")
@user_errors
def review_export_command(
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
    `agreement`, `panel` and `calibrate --human` read the records as they are (a pair shown once is a
    single-order call by design, counted as incomplete)."""
    from swapjudge.workflows.review import export_votes

    written, reviewers = export_votes(store, output, format=format, origin=origin)
    _say(f"wrote {written:,} votes of {reviewers} reviewer(s) to {display_path(output)} ({format})")
    if format == "records" and written:
        _say(f"analyse them like any judge's: swapjudge analyze {display_path(output)}")
