"""`swapjudge report`: the HTML report and the Markdown summary people read."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

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
    conclude,
    display_path,
    stderr,
    user_errors,
)
from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, ReadEngine, TiePolicy
from swapjudge.defaults import DEFAULT_REPORT_ROUNDS
from swapjudge.errors import SwapjudgeError


@app.command("report")
@user_errors
def report_command(
    source: RecordsOrStoreArg,
    html_out: Annotated[Path | None, typer.Option("--html", help="Write the HTML report here.")] = None,
    markdown_out: Annotated[Path | None, typer.Option(
        "--markdown", help="Write the compact Markdown summary (for a pull-request comment) here.")] = None,
    judge: JudgeOpt = None,
    a: SystemAOpt = None,
    b: SystemBOpt = None,
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
    allow_unpaired: AllowUnpairedOpt = False,
    confidence: Annotated[float, typer.Option("--confidence", help="Confidence level of every interval.")] = 0.95,
    rank_bootstrap: Annotated[int, typer.Option(
        "--rank-bootstrap", min=0, help="Bootstrap rounds over items behind the ranking's intervals when there are "
        "more than two systems (0: no intervals; `swapjudge rank` defaults to 1000).")] = DEFAULT_REPORT_ROUNDS,
    rank_seed: Annotated[int, typer.Option("--rank-seed", help="Seed of the ranking's bootstrap.")] = 0,
    human: Annotated[Path | None, typer.Option(
        "--human", help="People's records on some of the items (`review tally` output or any records file): adds "
                        "the human-corrected win rate (as `swapjudge calibrate` computes it).")] = None,
    engine: Annotated[ReadEngine, typer.Option(
        "--engine", help="How a records file is read: auto (Parquet, and JSON Lines of 32 MiB or more, reduced to "
        "counts by the streaming engine when DuckDB is installed; a Parquet file of up to 1,000,000 records is read "
        "whole instead when the report has a length probe or a panel of several judges, which need the records "
        "whole), streaming (always: files larger than memory; those two sections are left out, and the report "
        "says so; --human reads back only the compared pair's calls), memory (read whole). A stored run is read "
        "whole. The figures are the same.")] = ReadEngine.auto,
) -> None:
    """Write a report people read: a self-contained HTML file with plots and the unsettled pairs, and/or a
    Markdown summary. Exits 1 (after writing) when a judge fails the self-consistency gate."""
    from swapjudge.reading.textfiles import write_atomic
    from swapjudge.workflows.report import report

    if html_out is None and markdown_out is None:
        raise SwapjudgeError("nothing to write: give --html FILE and/or --markdown FILE")
    from swapjudge.reading.listwise import is_listwise
    from swapjudge.workflows.listwise import stored_listwise

    stored = stored_listwise(source, run)  # a listwise run in a store: its records
    if stored is not None or (run is None and is_listwise(source)):  # best-of-N records: the N-way figures
        _listwise_report(source if stored is None else stored, html_out, markdown_out, judge=judge,
                         min_consistency=DEFAULT_MIN_CONSISTENCY if min_consistency is None else min_consistency,
                         confidence=confidence, rounds=rank_bootstrap, seed=rank_seed)
        return
    inputs = report(source, pairs=pairs, run=run, allow_unpaired=allow_unpaired, human=human, judge=judge, a=a,
                    b=b, tie_policy=tie_policy, min_consistency=min_consistency, confidence=confidence,
                    segment=segment, rank_rounds=rank_bootstrap, rank_seed=rank_seed, engine=engine,
                    queue_limit=max_pairs if html_out is not None else 0)
    if html_out is not None:
        from swapjudge.report.html import render_html

        write_atomic(html_out, render_html(inputs, max_pairs=max_pairs))
        stderr.print(f"wrote {display_path(html_out)}", highlight=False, markup=False)
    if markdown_out is not None:
        from swapjudge.report.markdown import render_report

        write_atomic(markdown_out, render_report(inputs))
        stderr.print(f"wrote {display_path(markdown_out)}", highlight=False, markup=False)
    conclude(inputs)


def _listwise_report(source: Path | list[dict[str, Any]], html_out: Path | None, markdown_out: Path | None, *,
                     judge: str | None, min_consistency: float, confidence: float, rounds: int, seed: int) -> None:
    """The report of listwise records: each judge's slot shares, slot test, winner consistency, gate, accuracy,
    strengths and slot effects; exits 1 after writing when a judge fails the gate."""
    from swapjudge.reading.textfiles import write_atomic
    from swapjudge.report import listwise
    from swapjudge.workflows.listwise import analyze_listwise

    result = analyze_listwise(source, judge=judge, min_consistency=min_consistency, confidence=confidence,
                              bootstrap=rounds, seed=seed)
    blocks = [listwise.analysis_lines(one) for one in result]
    if html_out is not None:
        write_atomic(html_out, listwise.render_html(blocks))
        stderr.print(f"wrote {display_path(html_out)}", highlight=False, markup=False)
    if markdown_out is not None:
        write_atomic(markdown_out, "".join(listwise.render_markdown(lines) for lines in blocks))
        stderr.print(f"wrote {display_path(markdown_out)}", highlight=False, markup=False)
    conclude(result)
