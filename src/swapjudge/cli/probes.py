"""`swapjudge segments`, `probe length|repeat`, `agreement`, `panel`, `variants`: analyses of records that look
past the swap. Thin: load, call the library, render."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from swapjudge.cli.app import OutputFormat, app, stderr, stdout, user_errors
from swapjudge.cli.core import ConfidenceOpt, FormatOpt, dump_json
from swapjudge.policy import DEFAULT_MIN_CONSISTENCY, TiePolicy
from swapjudge.records import load_records
from swapjudge.report import probe_tables
from swapjudge.report.probe_tables import Table
from swapjudge.segments import segment_analyses

RecordsArg = Annotated[Path, typer.Argument(help="Presentation records: JSON Lines or CSV (DESIGN 3.1).",
                                            show_default=False)]
AllowUnpairedOpt = Annotated[bool, typer.Option(
    "--allow-unpaired", help="Count a pair judged in one order only as incomplete instead of an error.")]


def _emit(output: OutputFormat, payload: object, tables: list[Table]) -> None:
    if output is OutputFormat.json:
        dump_json(payload)
    elif output is OutputFormat.markdown:
        print(probe_tables.to_markdown(tables), end="")
    else:
        probe_tables.print_tables(stdout, tables)


@app.command()
@user_errors
def segments(
    records: RecordsArg,
    by: Annotated[str, typer.Option("--by", help="Record field to break the analysis down by (e.g. task); it "
                                                 "must be the same on both calls of a pair.")],
    judge: Annotated[str | None, typer.Option("--judge", help="Analyse this judge only.")] = None,
    a: Annotated[str | None, typer.Option("--a", help="System whose win rate is reported.")] = None,
    b: Annotated[str | None, typer.Option("--b", help="The system it is compared against.")] = None,
    tie_policy: Annotated[TiePolicy, typer.Option("--tie-policy", help="What a split pair is worth.")]
    = TiePolicy.half_credit,
    min_consistency: Annotated[float, typer.Option(
        "--min-consistency", help="Gate, applied to the whole file (exit 1) and shown per segment.")]
    = DEFAULT_MIN_CONSISTENCY,
    allow_unpaired: AllowUnpairedOpt = False,
    confidence: ConfidenceOpt = 0.95,
    output: FormatOpt = OutputFormat.text,
) -> None:
    """The analysis broken down by a record field: swap-consistency, flip direction and win rate per segment,
    with intervals. Position preference concentrates on close, hard items; one overall figure can hide it."""
    loaded = load_records(records, allow_unpaired=allow_unpaired)
    result = segment_analyses(loaded, by, judge=judge, a=a, b=b, tie_policy=tie_policy,
                              min_consistency=min_consistency, confidence=confidence)
    _emit(output, result.to_dict(), probe_tables.segments_tables(result))
    failed = [x for x in result.overall if not x.gate.passed]
    if failed:
        for x in failed:
            stderr.print(f"gate: {x.judge or '(unnamed judge)'}: {x.gate.reason}", highlight=False)
        raise typer.Exit(1)
