"""`swapjudge import FORMAT PATH... -o records.jsonl`: other harnesses' judgments as presentation records."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from swapjudge.cli.app import OutputFormat, app, display_path, flag_group, stderr, user_errors, wide_console
from swapjudge.errors import InputError

if TYPE_CHECKING:
    from swapjudge.importers import ImportOptions, ImportResult

_OPTION_FLAGS = {
    "judge_name": "--judge-name", "baseline": "--baseline", "round_choice": "--round first|last",
    "order": "--order", "item": "--item", "first": "--first", "second": "--second", "verdict": "--verdict",
    "map": "--map", "judge": "--judge", "label": "--label", "round": "--round COL",
    "delimiter": "--delimiter", "seed": "--seed", "keep": "--keep COL", "identical_draws": "--identical-draws",
}


def _formats_help() -> str:
    from swapjudge.importers import FORMATS

    lines = []
    for fmt in FORMATS.values():
        flags = ", ".join(_OPTION_FLAGS[o] for o in fmt.options)
        # help is rendered as Markdown: bold the name, and file patterns in code spans so their stars stay
        summary = re.sub(r"\(([^()]*[*/][^()]*)\)", r"(`\1`)", fmt.summary)
        lines.append(f"- **{fmt.name}**: {summary}. Options: {flags}.")
    return "\n".join(lines)


HELP = (
    "Turn another harness's judgments into presentation records (docs/records.md) that analyze, rank and report "
    "read unchanged. Prints a one-line summary per file and every awkward row (file:line and reason) to "
    "stderr; writes the records atomically to -o. See docs/importers.md.\n\n"
    "FORMAT is one of:\n\n" + _formats_help()
)


def _options(fmt: str, flags: ImportFlags) -> ImportOptions:
    """CLI values -> ImportOptions; `--round` is a round choice for llmbar and a column name for csv."""
    from swapjudge.importers import ImportOptions

    f = flags
    round_, order, seed, keep, delimiter = f.round_, f.order, f.seed, f.keep, f.delimiter
    extra: dict[str, Any] = {}
    if round_ is not None:
        if fmt == "llmbar":
            if round_ not in ("first", "last"):
                raise InputError(f"--round must be first or last for llmbar, not {round_!r}")
            extra["round_choice"] = round_
        elif fmt == "csv":
            extra["round"] = round_
        else:
            raise InputError(f"option --round does not apply to format {fmt}")
    if order is not None:
        if order not in ("recorded", "as-stored"):
            raise InputError(f"--order must be recorded or as-stored, not {order!r}")
        extra["order"] = order
    if seed is not None:
        extra["seed"] = seed
    if keep:
        extra["keep"] = tuple(keep)
    if f.identical_draws:
        extra["identical_draws"] = True
    if delimiter is not None:
        extra["delimiter"] = "\t" if delimiter in ("\\t", "tab") else delimiter
    return ImportOptions(judge_name=f.judge_name, baseline=f.baseline, item=f.item, first=f.first, second=f.second,
                         verdict=f.verdict, map=f.map_, judge=f.judge, label=f.label, **extra)


def _print_report(result: ImportResult, max_listed: int | None) -> None:
    from swapjudge.importers import AWKWARD_MEANING
    from swapjudge.importers.base import AWKWARD_KINDS

    for report in result.reports:
        stderr.print(report.summary_line(), highlight=False, markup=False)
    for report in result.reports:
        for kind in AWKWARD_KINDS:
            rows = [a for a in report.awkward if a.kind == kind]
            if not rows:
                continue
            stderr.print(f"  {len(rows)} {kind.replace('_', ' ')} in {report.path}: {AWKWARD_MEANING[kind]}",
                         highlight=False, markup=False)
            shown = rows if max_listed is None else rows[:max_listed]
            for a in shown:
                stderr.print(f"    {a.location}: {a.reason}", highlight=False, markup=False)
            if len(shown) < len(rows):
                stderr.print(f"    ... and {len(rows) - len(shown)} more (--report FILE lists them all)",
                             highlight=False, markup=False)
    notes = dict.fromkeys(n for r in result.reports for n in r.notes)
    for note in notes:
        stderr.print(f"note: {note}", highlight=False, markup=False)


def _print_per_call(result: ImportResult, output: OutputFormat) -> None:
    from swapjudge.importers import per_call_consistency

    rows = per_call_consistency(result.records)
    if output is OutputFormat.json:
        print(json.dumps([r.to_dict() for r in rows], indent=2))
        return
    if output is OutputFormat.markdown:
        print("| benchmark | judge | round | consistent | parsed calls | calls | rate |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r.benchmark} | {r.judge} | {r.round} | {r.consistent} | {r.parsed_calls} | {r.calls} "
                  f"| {r.rate:.2%} |")
        return
    table = Table(title="per-call consistency, counted as the Shi et al. logs do (calls, not pairs)")
    table.add_column("judge", overflow="fold")
    for col in ("round", "consistent", "parsed", "calls", "rate"):
        table.add_column(col, justify="right")
    for r in rows:
        name = r.judge if not r.benchmark or r.judge.startswith(r.benchmark) else f"{r.benchmark}/{r.judge}"
        table.add_row(name, str(r.round), str(r.consistent), str(r.parsed_calls), str(r.calls),
                      f"{r.rate:.2%}")
    wide_console().print(table)


@dataclass(frozen=True)
class ImportFlags:
    """The options of `swapjudge import` that belong to one format or another (what `--help` lists per format)."""

    judge_name: Annotated[str | None, typer.Option(
        "--judge-name", help="Judge name for every record (overrides what the files say).")] = None
    baseline: Annotated[str | None, typer.Option(
        "--baseline", help="arena-hard: baseline model for old rows without a `baseline` field.")] = None
    round_: Annotated[str | None, typer.Option(
        "--round", help="llmbar: which round, first or last (default last). csv: column holding the repeat "
                        "index.")] = None
    order: Annotated[str | None, typer.Option(
        "--order", help="alpaca-eval: `recorded` (default) reads the presented order from the file, else "
                        "recomputes AlpacaEval 2's seeded switch; `as-stored` says output_1 was always shown "
                        "first.")] = None
    seed: Annotated[int | None, typer.Option(
        "--seed", help="alpaca-eval: the annotator's seed for the switch (default 0, as the shipped "
                       "annotators use).")] = None
    identical_draws: Annotated[bool, typer.Option(
        "--identical-draws", help="alpaca-eval: write the rows whose two outputs are identical (never judged; "
                                  "AlpacaEval counts them as draws) as ties marked identical_outputs, instead of "
                                  "skipping them: its length-controlled win rate fits them.")] = False
    item: Annotated[str | None, typer.Option("--item", help="csv: column with the item id.")] = None
    first: Annotated[str | None, typer.Option("--first", help="csv: column with the identity shown first.")] = None
    second: Annotated[str | None, typer.Option("--second", help="csv: column with the identity shown 2nd.")] = None
    verdict: Annotated[str | None, typer.Option("--verdict", help="csv: column with the verdict.")] = None
    map_: Annotated[str | None, typer.Option(
        "--map", help="csv: verdict values, e.g. A=first,B=second,C=tie (targets first|second|tie|null).")] = None
    judge: Annotated[str | None, typer.Option("--judge", help="csv: column with the judge name.")] = None
    label: Annotated[str | None, typer.Option(
        "--label", help="csv: column with the identity of the better answer (or tie).")] = None
    keep: Annotated[list[str] | None, typer.Option(
        "--keep", help="csv: also copy this column into the records under its own name (repeatable), e.g. "
                       "a task group for `segments --by`.")] = None
    delimiter: Annotated[str | None, typer.Option(
        "--delimiter", help="csv: field separator (default: tab for .tsv, else comma).")] = None


@app.command(name="import", help=HELP)
@user_errors
@flag_group(ImportFlags, as_="flags")
def import_command(
    fmt: Annotated[str, typer.Argument(metavar="FORMAT", help="Input format (listed above).",
                                       show_default=False)],
    paths: Annotated[list[Path], typer.Argument(metavar="PATH", help="Files to import.",
                                                show_default=False)],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Records file to write (.jsonl; CSV "
                                                "when it ends in .csv, Parquet in .parquet).")] = None,
    flags: ImportFlags = ImportFlags(),
    per_call: Annotated[bool, typer.Option(
        "--per-call", help="Print per-call consistency as the Shi et al. repository logs count it (unparsed "
                           "calls dropped, a call whose twin is unparsed counted consistent) instead of, or "
                           "besides -o, writing records.")] = False,
    report: Annotated[Path | None, typer.Option(
        "--report", help="Also write the full import report (every awkward row) as JSON here.")] = None,
    max_listed: Annotated[int | None, typer.Option(
        "--max-listed", help="List at most this many awkward rows per kind and file on stderr (default: "
                             "all).")] = None,
    output_format: Annotated[OutputFormat, typer.Option(
        "--format", "-f", help="Format of the --per-call table.")] = OutputFormat.text,
) -> None:
    from swapjudge.importers import FORMATS, import_files, write_records
    from swapjudge.importers.base import write_json

    if fmt not in FORMATS:
        raise InputError(f"unknown import format {fmt!r}; known: {', '.join(FORMATS)}")
    if output is None and not per_call:
        raise InputError("give -o RECORDS.jsonl (or --per-call to print the per-call figures)")
    options = _options(fmt, flags)
    result = import_files(fmt, paths, options)
    _print_report(result, max_listed)
    if report is not None:
        write_json(result.to_dict(), report)
    if per_call:
        _print_per_call(result, output_format)
    if output is not None:
        if not result.records:
            raise InputError("no records converted; nothing written", path=str(output))
        if output.suffix.lower() in (".csv", ".tsv") and any("slots" in r for r in result.records):
            raise InputError("listwise records are written as JSON Lines (a CSV cell cannot hold the list "
                             "`slots`): name the output .jsonl", path=str(output))
        count = write_records(result.records, output)
        stderr.print(f"wrote {count} records to {display_path(output)}", highlight=False, markup=False)
