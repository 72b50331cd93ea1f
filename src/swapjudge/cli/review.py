"""`swapjudge review queue|sheet|tally`: the pairs a judge could not settle, blind sheets for people, and the
filled sheets back as records."""

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

review_app = typer.Typer(name="review", help="Human review: the queue of unsettled pairs, blind review sheets.",
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
    from swapjudge.workflows.reviewing import queue

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
    from swapjudge.workflows.reviewing import sheet as blind_sheet

    made, only = blind_sheet(pairs, seed=seed, a=a, b=b, flipped=flipped, judge=judge)
    if made is None:
        stderr.print(f"{display_path(flipped)}: the judge settled every pair (no flip, no half-tie): "
                     "no sheet written", highlight=False, markup=False)
        return
    write_sheet(made, output, key)
    if html_out is not None:
        from swapjudge.core.textfiles import write_atomic
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
    from swapjudge.workflows.reviewing import tally

    result = tally(filled, key, reviewer=reviewer, allow_partial=allow_partial)
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
