"""`swapjudge report` (HTML and Markdown) and `swapjudge review queue|sheet|tally`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from swapjudge.cli.app import app, display_path, stderr, user_errors
from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, TiePolicy
from swapjudge.defaults import DEFAULT_REPORT_ROUNDS
from swapjudge.errors import SwapjudgeError

review_app = typer.Typer(name="review", help="Human review: the queue of unsettled pairs, blind review sheets.",
                         no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
app.add_typer(review_app, name="review")

SourceArg = Annotated[Path, typer.Argument(help="Presentation records (JSONL or CSV) or a run store (SQLite).",
                                           show_default=False)]
RunOpt = Annotated[int | None, typer.Option("--run", help="Run id in a store (default: the latest run).")]
PairsOpt = Annotated[Path | None, typer.Option(
    "--pairs", help="Pairs file ({item, prompt, answers: {system: text}}) to show answer texts from.")]
JudgeOpt = Annotated[str | None, typer.Option("--judge", help="Report on this judge only.")]
AOpt = Annotated[str | None, typer.Option("--a", help="System whose win rate is reported.")]
BOpt = Annotated[str | None, typer.Option("--b", help="The system it is compared against.")]
UnpairedOpt = Annotated[bool, typer.Option(
    "--allow-unpaired", help="Count a pair judged in one order only as incomplete instead of an error.")]


@app.command("report")
@user_errors
def report_command(
    source: SourceArg,
    html_out: Annotated[Path | None, typer.Option("--html", help="Write the HTML report here.")] = None,
    markdown_out: Annotated[Path | None, typer.Option(
        "--markdown", help="Write the compact Markdown summary (for a pull-request comment) here.")] = None,
    judge: JudgeOpt = None,
    a: AOpt = None,
    b: BOpt = None,
    tie_policy: Annotated[TiePolicy | None, typer.Option(
        "--tie-policy", help="What a split pair is worth (default: the run's registered policy, else half_credit).",
        show_default=False)] = None,
    min_consistency: Annotated[float | None, typer.Option(
        "--min-consistency", help="Gate: below this swap-consistency no win rate is reported, exit 1 "
        f"(default: the run's registered gate, else {DEFAULT_MIN_CONSISTENCY}).", show_default=False)] = None,
    segment: Annotated[str | None, typer.Option(
        "--segment", help="A record field (e.g. task) to analyse each value of separately.")] = None,
    pairs: PairsOpt = None,
    max_pairs: Annotated[int, typer.Option(
        "--max-pairs", min=0, help="Show at most this many unsettled pairs in full in the HTML.")] = 1000,
    run: RunOpt = None,
    allow_unpaired: UnpairedOpt = False,
    confidence: Annotated[float, typer.Option("--confidence", help="Confidence level of every interval.")] = 0.95,
    rank_bootstrap: Annotated[int, typer.Option(
        "--rank-bootstrap", min=0, help="Bootstrap rounds over items behind the ranking's intervals when there are "
        "more than two systems (0: no intervals; `swapjudge rank` defaults to 1000).")] = DEFAULT_REPORT_ROUNDS,
    rank_seed: Annotated[int, typer.Option("--rank-seed", help="Seed of the ranking's bootstrap.")] = 0,
    human: Annotated[Path | None, typer.Option(
        "--human", help="People's records on some of the items (`review tally` output or any records file): adds "
                        "the human-corrected win rate (as `swapjudge calibrate` computes it).")] = None,
) -> None:
    """Write a report people read: a self-contained HTML file with plots and the unsettled pairs, and/or a
    Markdown summary. Exits 1 (after writing) when a judge fails the self-consistency gate."""
    from swapjudge.core.records import load_records
    from swapjudge.core.textfiles import write_atomic
    from swapjudge.report.source import report_source

    if html_out is None and markdown_out is None:
        raise SwapjudgeError("nothing to write: give --html FILE and/or --markdown FILE")
    from swapjudge.report.build import prepare_report

    loaded = report_source(source, pairs=pairs, run=run, allow_unpaired=allow_unpaired)
    people = load_records(human, allow_unpaired=True) if human is not None else None
    inputs = prepare_report(loaded, judge=judge, a=a, b=b, tie_policy=tie_policy, min_consistency=min_consistency,
                            confidence=confidence, segment=segment,
                            rank_rounds=rank_bootstrap, rank_seed=rank_seed,
                            human=people.frame if people is not None else None,
                            human_source=people.source if people is not None else "human records")
    if html_out is not None:
        from swapjudge.report.html import render_html

        write_atomic(html_out, render_html(inputs, max_pairs=max_pairs))
        stderr.print(f"wrote {display_path(html_out)}", highlight=False, markup=False)
    if markdown_out is not None:
        from swapjudge.report.markdown import render_report

        write_atomic(markdown_out, render_report(inputs))
        stderr.print(f"wrote {display_path(markdown_out)}", highlight=False, markup=False)
    failed = [x for x in inputs.analyses if not x.gate.passed]
    if failed:
        for x in failed:
            stderr.print(f"gate: {x.judge or '(unnamed judge)'}: {x.gate.reason}", highlight=False, markup=False)
        raise typer.Exit(1)


@review_app.command("queue")
@user_errors
def queue_command(
    source: SourceArg,
    output: Annotated[Path, typer.Option("--output", "-o", help="Queue file: .jsonl or .csv.")],
    judge: JudgeOpt = None,
    a: AOpt = None,
    b: BOpt = None,
    pairs: PairsOpt = None,
    run: RunOpt = None,
    allow_unpaired: UnpairedOpt = False,
) -> None:
    """The pairs that flipped or half-tied, with both answers (when known) and both raw judge replies."""
    from swapjudge.report.source import report_source
    from swapjudge.review.queue import QUEUE_FIELDS, review_queue, write_table

    if (a is None) != (b is None):
        raise SwapjudgeError("give both --a and --b, or neither")
    loaded = report_source(source, pairs=pairs, run=run, allow_unpaired=allow_unpaired)
    if judge is not None and judge not in loaded.records.judges:
        raise SwapjudgeError(f"no records for judge {judge!r}; judges: "
                             + ", ".join(repr(j) for j in loaded.records.judges))
    queue = review_queue(loaded.frame, judge=judge, a=a, b=b)
    write_table(queue, output, QUEUE_FIELDS)
    stderr.print(f"wrote {queue.height:,} pairs to {display_path(output)}", highlight=False, markup=False)


@review_app.command("sheet")
@user_errors
def sheet_command(
    pairs: Annotated[Path, typer.Argument(help="Pairs file: {item, prompt, answers: {system: text}, label}.",
                                          show_default=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="The blind sheet (CSV) for reviewers.")],
    key: Annotated[Path, typer.Option("--key", help="The key (CSV): which system sat where. Keep it apart.")],
    seed: Annotated[int | None, typer.Option("--seed", help="Seed of the coin and the shuffle.")] = None,
    html_out: Annotated[Path | None, typer.Option("--html", help="Also write a printable HTML sheet.")] = None,
    a: AOpt = None,
    b: BOpt = None,
    flipped: Annotated[Path | None, typer.Option(
        "--flipped", help="Records of a judge: put on the sheet only the pairs it could not settle (flips and "
                          "half-ties), for people to decide.", show_default=False)] = None,
    judge: Annotated[str | None, typer.Option(
        "--judge", help="With --flipped: the judge whose unsettled pairs are reviewed (needed when the records "
                        "hold several).")] = None,
) -> None:
    """A blind review sheet: each pair twice (the second time swapped), shuffled, no system names."""
    from swapjudge.core.records import load_records
    from swapjudge.core.textfiles import write_atomic
    from swapjudge.review.queue import load_pair_items, unsettled_pairs
    from swapjudge.review.sheet import make_sheet, write_sheet

    if (a is None) != (b is None):
        raise SwapjudgeError("give both --a and --b, or neither")
    if judge is not None and flipped is None:
        raise SwapjudgeError("--judge chooses whose flipped pairs to review: give --flipped RECORDS too")
    only = None
    if flipped is not None:
        only = unsettled_pairs(load_records(flipped, allow_unpaired=True), judge=judge, a=a, b=b)
        if not only:
            stderr.print(f"{display_path(flipped)}: the judge settled every pair (no flip, no half-tie): "
                         "no sheet written", highlight=False, markup=False)
            return
    sheet = make_sheet(load_pair_items(pairs), seed=seed, a=a, b=b, source=str(pairs), only=only)
    write_sheet(sheet, output, key)
    if html_out is not None:
        from swapjudge.report.sheet_html import render_sheet

        write_atomic(html_out, render_sheet(sheet))
    what = f" ({len(only):,} unsettled pairs)" if only is not None else ""
    stderr.print(f"wrote {len(sheet.tasks):,} tasks{what} to {display_path(output)} and the key to {key} "
                 f"(seed {sheet.seed})", highlight=False, markup=False)


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
