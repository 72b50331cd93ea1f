"""`swapjudge run`, `swapjudge runs` and `swapjudge export`."""

from __future__ import annotations

import enum
import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from swapjudge.cli.app import (
    OutputFormat,
    app,
    conclude,
    display_path,
    dump_json,
    end,
    markdown_table,
    shown_path,
    stderr,
    stdout,
    user_errors,
    wide_console,
)
from swapjudge.defaults import DEFAULT_STORE
from swapjudge.errors import InputError
from swapjudge.outcome import Conclusion

if TYPE_CHECKING:
    from swapjudge.runner.check import CheckResult
    from swapjudge.runner.dry_run import DryRunEstimate
    from swapjudge.runner.listwise_run import ListwiseEstimate
    from swapjudge.workflows.run import RunResult

class Engine(enum.StrEnum):
    sync = "sync"
    ray = "ray"


StoreOpt = Annotated[
    Path | None,
    typer.Option("--store", help=f"The run store (default: the configuration's `store`, else ./{DEFAULT_STORE})."),
]


def _adaptive_mark(config: dict[str, Any]) -> str:
    """A done adaptive run stores fewer calls than planned: the skipped swaps were never meant to be made."""
    threshold = config.get("adaptive_swap") if isinstance(config, dict) else None
    return "" if threshold is None else f" (adaptive swap below {threshold:g})"


def _money(value: float | None) -> str:
    return "unknown (no price for this model: add it under `prices:`)" if value is None else f"${value:,.4f}"


def _print_estimate(est: DryRunEstimate) -> None:
    lines = [
        f"dry run: {est.pairs:,} pairs, orders {est.orders}, {est.planned_calls:,} planned calls",
        f"  identical answers (no call, counted as ties): {est.identical:,}",
        f"  already stored by an unfinished run:           {est.already_stored:,}",
        f"  served from the store's cache:                 {est.cached:,}",
        f"  calls to make:                                 {est.calls_to_make:,}",
        f"  estimated tokens (~4 characters per token):    {est.input_tokens:,} in, {est.output_tokens:,} out",
        f"  verdict format: {'structured JSON' if est.structured else 'final label line'}",
        f"  estimated cost ({est.model}): {_money(est.cost_usd)}",
    ]
    if est.prompt_cache_saving_usd is not None:
        lines.append(
            f"  of which prompt caching saves: {_money(est.prompt_cache_saving_usd)} "
            f"(shared prefix ~{est.shared_prefix_tokens:,} tokens, cached after the first call)"
        )
    elif est.prompt_cache_min_tokens is not None and est.calls_to_make:
        lines.append(
            f"  prompt caching saves nothing: the shared prefix (~{est.shared_prefix_tokens:,} tokens) is shorter "
            f"than the provider's minimum cacheable length ({est.prompt_cache_min_tokens:,} tokens for this model)"
        )
    if est.batch_cost_usd is not None:
        lines += [
            "  the same calls three ways (batch: judge.batch true, results within 24 h):",
            f"    synchronous, with prompt caching: {_money(est.cost_usd)}",
            f"    batch, no prompt caching:         {_money(est.batch_cost_usd)}",
            f"    batch with prompt caching:        {_money(est.batch_cached_cost_usd)}",
        ]
    if est.store_cache_saving_usd is not None and est.cached:
        lines.append(f"  the store's cache saves: {_money(est.store_cache_saving_usd)}")
    if est.attacks is not None:
        a = est.attacks
        lines.append(
            f"  attacks after the run ({', '.join(a['attacks'])}) on {a['sample']:,} pairs: {a['calls']:,} calls "
            f"planned, {a['to_make']:,} to make (the placebo's are the run's own), ~{a['input_tokens']:,} tokens in, "
            f"{a['output_tokens']:,} out, cost {_money(a['cost_usd'])}")
    if est.orders == "random":
        lines.append("  random order: one call per pair, so swap-consistency will NOT be measured")
    if est.adaptive_swap is not None:
        unknown = est.adaptive_swaps_planned - est.adaptive_firsts_known
        lines.append(
            f"  adaptive swapping (threshold {est.adaptive_swap:g}): the counts above make every swapped call, the "
            f"upper bound; of its {est.adaptive_swaps_planned:,} swapped calls, {est.adaptive_skips_known:,} would "
            f"be skipped by first verdicts already stored or cached, and {unknown:,} depend on first verdicts not "
            "known yet (the saving is known only after the first orders)"
        )
    stdout.print("\n".join(lines), highlight=False)


def _summary(result: RunResult) -> str:
    s = result.stats
    spend = f"${s['spend_usd']:,.4f}" if s["spend_known"] else "unknown (no price for this model)"
    return (
        f"run {result.run_id}{' (resumed)' if result.resumed else ''}: {s['planned']:,} calls planned; "
        f"{s['already_stored']:,} already stored, {s['identical']:,} identical (ties, no call), "
        f"{s['cached']:,} from cache, {s['made']:,} made ({s['http_attempts']:,} HTTP attempts), "
        + (f"{s['adaptive_skipped']:,} swapped calls skipped (adaptive), " if s["adaptive_skipped"] else "")
        + f"{s['failed']:,} failed, "
        f"{s['unparsed']:,} without a parsable verdict; spend {spend}; {result.elapsed_s:.1f} s"
    )


def _rerun_command(config: Path, *, store: Path | None, progress: bool, output: OutputFormat, wait: bool,
                   retry_unparsed: bool = False, no_wait: bool = False, engine: Engine | None = None) -> str:
    """The command that resumes or retries this run: the user's own options, so it acts on the same store."""
    args = ["swapjudge", "run", shown_path(config)]
    if store is not None:
        args += ["--store", shown_path(store)]
    if engine is not None:
        args += ["--engine", engine.value]
    if not progress:
        args.append("--no-progress")
    if output is not OutputFormat.text:
        args += ["--format", output.value]
    if wait:
        args.append("--wait")
    if retry_unparsed:
        args.append("--retry-unparsed")
    if no_wait:
        args.append("--no-wait")
    return shlex.join(args)


def _print_check(result: CheckResult) -> None:
    stdout.print(
        f"check: {result.url} answered model {result.model} in {result.latency_s:.2f} s "
        f"(verdict {result.verdict or 'unparsable'}); nothing stored",
        highlight=False, markup=False,  # a URL's `[redacted]` is text, not markup
    )


@app.command("run")
@user_errors
def run_command(
    config: Annotated[Path, typer.Argument(help="Run configuration (YAML).", show_default=False)],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count calls, tokens and cost; call nothing.")] = False,
    check: Annotated[bool, typer.Option(
        "--check", help="Make one small request to prove the server, key and model; store nothing.")] = False,
    store: StoreOpt = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show the progress bar.")] = True,
    wait: Annotated[bool, typer.Option(
        "--wait", help="When another process is judging this run, wait for it instead of exiting.")] = False,
    retry_unparsed: Annotated[bool, typer.Option(
        "--retry-unparsed",
        help="Ask the judge again for the calls whose reply had no parsable verdict (the old replies are kept "
             "for the audit).")] = False,
    output: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="How to print the analysis.")
    ] = OutputFormat.text,
    no_wait: Annotated[bool, typer.Option(
        "--no-wait", help="With judge.batch: submit the batches and exit; the same command collects them.")] = False,
    engine: Annotated[Engine | None, typer.Option(
        "--engine", help="Who makes the calls: sync (this process) or ray (Ray Data workers; the configuration's "
                         "`ray:` settings). Default: the configuration's `engine`, else sync.",
        show_default=False)] = None,
) -> None:
    """Judge the configured pairs in both orders, store every call, print the analysis. Running the same
    command again resumes an unfinished run and makes only the missing calls; replies are cached. With
    `cascade:` in the configuration, each later judge is asked only about the pairs the judges before it left
    unsettled, and the win rate is over all pairs, the unsettled ones from all lost to all won. With
    `protocol: listwise`, one call shows all N answers, their order rotated over the slots."""
    from swapjudge.runner.listwise_run import is_listwise_config
    from swapjudge.workflows import run

    if is_listwise_config(config):  # best of N: rotated slot orders, one stored call per slot order
        _run_listwise(config, output, dry_run=dry_run, check=check, store=store, progress=progress, wait=wait,
                      retry_unparsed=retry_unparsed, no_wait=no_wait, engine=engine)
        return
    loaded = run.load_run_config(config)
    if loaded.config.cascade is not None and not check:
        from swapjudge.cli.run_cascade import cascade_command

        cascade_command(loaded, config, dry_run=dry_run, store=store, progress=progress, wait=wait, output=output)
        return
    if dry_run:
        _print_estimate(run.dry_run(loaded, store=store))
        return
    if check:
        _print_check(run.check(loaded))
        return
    rerun = _rerun_command(config, store=store, progress=progress, output=output, wait=wait, no_wait=no_wait,
                           engine=engine)
    result = run.run(loaded, store=store, console=stderr, progress=progress, handle_sigint=True, wait=wait,
                      retry_unparsed=retry_unparsed, batch_wait=not no_wait,
                      engine=engine.value if engine is not None else None)
    for warning in result.warnings:
        stderr.print(f"warning: {warning}", highlight=False, markup=False)
    if result.batches_waiting:
        verb = "waiting for" if loaded.config.judge.batch == "files" else "submitted"
        print(f"{verb} {result.waiting:,} requests in {result.batches_waiting:,} batches; "
              "run the same command to collect")
        return
    stderr.print(_summary(result), highlight=False)
    if result.interrupted:
        stderr.print(
            f"interrupted: every finished call is stored in {shown_path(result.store_path)}. Resume with: {rerun}",
            highlight=False,
        )
        end(Conclusion.interrupted)
    if output is OutputFormat.json:
        dump_json(result.to_dict())
    elif output is OutputFormat.markdown:
        from swapjudge.report import markdown

        print(markdown.render_analyses(result.analyses.judges), end="")
    else:
        from swapjudge.report import text

        if result.orders == "random":
            stdout.print(
                "[bold]random order mode[/]: one call per pair, so swap-consistency is not measured "
                "and any preference for a slot goes straight into the figures."
            )
        text.print_analyses(wide_console(), result.analyses.judges)
    if output is not OutputFormat.json and result.attack_gate is not None:
        _print_attacks(result, output)
    stderr.print(f"analysis written to {shown_path(run.analysis_path(result.store_path, result.run_id))}",
                 highlight=False)
    if result.stats["failed"]:
        stderr.print(
            f"{result.stats['failed']} call(s) failed after retries (pairs incomplete). Run the same "
            f"command again to retry only those: {rerun}",
            highlight=False,
        )
        end(Conclusion.bad_input)
    if result.stats["unparsed_stored"]:
        again = _rerun_command(config, store=store, progress=progress, output=output, wait=wait, retry_unparsed=True,
                               engine=engine)
        stderr.print(
            f"{result.stats['unparsed_stored']} stored call(s) have no parsable verdict. To ask the judge again "
            f"for exactly those: {again}",
            highlight=False,
        )
    conclude(result)


def _print_attacks(result: RunResult, output: OutputFormat) -> None:
    """The attack table of the configured attacks and the gate's line."""
    from swapjudge.report import probe_tables
    from swapjudge.report.attack_tables import attack_table
    from swapjudge.report.decision import attack_gate_summary

    gate = result.attack_gate
    tables = [] if result.attacks is None else [attack_table(result.attacks.to_dict())]
    line = f"attack gate: {attack_gate_summary(gate)}" if gate.passed else str(gate.reason)
    if output is OutputFormat.markdown:
        print(probe_tables.to_markdown(tables) + f"\n> {line}\n", end="")
        return
    probe_tables.print_tables(stdout, tables)
    stdout.print(line, highlight=False, markup=False)


def _listwise_batch_lines(est: ListwiseEstimate) -> list[str]:
    """A listwise dry run's batch price: through the configured offline engine, or a provider's batch API."""
    if est.batch == "files":
        return [f"  batch cost (judge.batch: files, at the configured price): {_money(est.batch_cost_usd)}"]
    if est.batch_cost_usd is None:
        return []
    when = "judge.batch true" if est.batch else "with judge.batch true"
    return [f"  batch cost ({when}, within 24 h): {_money(est.batch_cost_usd)}"]


def _run_listwise(config: Path, output: OutputFormat, *, dry_run: bool, check: bool, store: Path | None,
                  progress: bool, wait: bool, retry_unparsed: bool, no_wait: bool, engine: Engine | None) -> None:
    """`protocol: listwise`: judge into the run store, then analyse the run's calls as `analyze` analyses
    listwise records, ending a failed gate."""
    from swapjudge.report import listwise
    from swapjudge.runner.listwise_run import check_listwise, estimate_listwise, listwise_run_records, run_listwise
    from swapjudge.workflows.listwise import analyze_listwise

    if engine is not None:
        raise InputError("--engine does not apply to a listwise run (its calls are made by this process, or "
                         "through judge.batch)")
    if dry_run:
        est = estimate_listwise(config, store=store)
        sizes = "/".join(map(str, est.answers_per_item))
        stdout.print("\n".join([
            f"dry run: {est.items:,} items of {sizes} answers, rotations {est.rotations}, "
            f"{est.planned_calls:,} planned calls",
            f"  already stored by an unfinished run:           {est.already_stored:,}",
            f"  served from the store's cache:                 {est.cached:,}",
            f"  calls to make:                                 {est.calls_to_make:,}",
            f"  estimated tokens (~4 characters per token):    {est.input_tokens:,} in, {est.output_tokens:,} out",
            f"  estimated cost ({est.model}): {_money(est.cost_usd)}",
        ] + _listwise_batch_lines(est)
          + ([f"  the store's cache saves: {_money(est.store_cache_saving_usd)}"] if est.cached else [])),
            highlight=False, markup=False)
        return
    if check:
        found = check_listwise(config)
        stdout.print(f"check: {found.url} answered model {found.model} in {found.latency_s:.2f} s "
                     f"(pick {found.pick if found.pick is not None else 'unusable'} of {found.answers}); "
                     "nothing stored", highlight=False, markup=False)
        return
    rerun = _rerun_command(config, store=store, progress=progress, output=output, wait=wait)
    done = run_listwise(config, store=store, wait=wait, console=stderr, progress=progress,
                        retry_unparsed=retry_unparsed, batch_wait=not no_wait)
    for warning in done.warnings:
        stderr.print(f"warning: {warning}", highlight=False, markup=False)
    if done.batches_waiting:
        verb = "waiting for" if done.batch == "files" else "submitted"
        print(f"{verb} {done.requests_waiting:,} requests in {done.batches_waiting:,} batches; "
              "run the same command to collect")
        return
    spend = "unknown (no price for this model)" if done.spend_usd is None else f"${done.spend_usd:,.4f}"
    stderr.print(f"run {done.run_id}{' (resumed)' if done.resumed_run else ''}: {done.planned:,} listwise calls "
                 f"planned; {done.resumed:,} already stored, {done.cached:,} from cache, {done.made:,} made, "
                 f"{done.failed:,} failed, {done.unparsed:,} without a usable pick; spend {spend}",
                 highlight=False, markup=False)
    if done.output is not None:
        stderr.print(f"records written to {shown_path(done.output)}", highlight=False, markup=False)
    rows = listwise_run_records(done.store_path, done.run_id)
    result = analyze_listwise(rows, min_consistency=done.min_consistency)
    if output is OutputFormat.json:
        dump_json({**result.to_dict(), "run": done.to_dict()})
    else:
        render = listwise.render_markdown if output is OutputFormat.markdown else listwise.render_text
        for one in result:
            wide_console().print(render(listwise.analysis_lines(one)), end="", highlight=False, markup=False)
    if done.failed:
        stderr.print(f"{done.failed} call(s) failed after retries. Run the same command again to retry only "
                     f"those: {rerun}", highlight=False, markup=False)
        end(Conclusion.bad_input)
    if done.unparsed:
        again = _rerun_command(config, store=store, progress=progress, output=output, wait=wait,
                               retry_unparsed=True)
        stderr.print(f"{done.unparsed} stored call(s) have no usable pick. To ask the judge again for exactly "
                     f"those: {again}", highlight=False, markup=False)
    conclude(result)


@app.command("runs")
@user_errors
def runs_command(
    store: StoreOpt = None,
    output: Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")] = OutputFormat.text,
    check: Annotated[bool, typer.Option(
        "--check", help="Check the whole store file first (SQLite's integrity_check: every page, and every index "
                        "against its table); a damaged store is an error (exit 2).")] = False,
) -> None:
    """List the runs in the store, with their provider batches. The store is only read (a store on a read-only
    file system too)."""
    from swapjudge.workflows.run import check_store, list_runs

    if check:
        checked = check_store(store)
        checked.raise_if_damaged()
        stderr.print(f"{shown_path(checked.path)}: integrity_check found no problem", highlight=False)
    listing = list_runs(store)
    infos, by_run = listing.runs, listing.batches
    if output is OutputFormat.json:
        print(json.dumps([{**{k: v for k, v in i.to_dict().items() if k != "config"},
                           "batches": [b.to_dict() for b in by_run.get(i.id, [])]} for i in infos], indent=2))
        return
    header = ("run", "started (UTC)", "status", "judge", "calls", "failed", "spend", "config")
    rows = [(
        str(i.id),
        i.started_at.replace("T", " ").removesuffix("+00:00"),
        i.status,
        i.judge,
        f"{i.stored_calls:,}/{i.total_calls:,}" + _adaptive_mark(i.config),
        str(i.failed_calls),
        f"${i.cost_usd:,.4f}",
        i.config_hash[:10],
    ) for i in infos]
    if output is OutputFormat.markdown:
        print(markdown_table(header, rows), end="")
        return
    table = Table(box=None, header_style="bold")
    for col in header:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*row)
    wide_console().print(table)
    for run_id, subs in sorted(by_run.items()):
        stdout.print(f"run {run_id} batches:", highlight=False)
        for b in subs:
            counts = ", ".join(f"{k} {v:,}" for k, v in sorted(b.counts.items())) or "no counts yet"
            stdout.print(f"  {b.provider} {b.batch_id or '(not yet known at the provider)'}: wave {b.wave + 1}, "
                         f"{b.requests:,} requests, {b.status} ({b.provider_status or '-'}; {counts})",
                         highlight=False)


class ExportFormat(enum.StrEnum):
    jsonl = "jsonl"
    csv = "csv"
    parquet = "parquet"


@app.command("export")
@user_errors
def run_export_command(
    run_id: Annotated[int | None, typer.Argument(help="Run id (see `swapjudge runs`).", show_default=False)] = None,
    latest: Annotated[bool, typer.Option("--latest", help="Export the latest run.")] = False,
    out: Annotated[
        Path, typer.Option("-o", "--output", help="Output file: .jsonl, .csv or .parquet (default, or `-`: JSON "
                                                  "Lines on stdout).", show_default=False)
    ] = Path("-"),
    output_format: Annotated[ExportFormat | None, typer.Option(
        "--format", "-f", help="jsonl, csv or parquet (default: from the -o name's ending, JSON Lines on stdout).",
        show_default=False)] = None,
    store: StoreOpt = None,
) -> None:
    """Write a run's presentation records (docs/records.md; labels included when the pairs carry them) to -o
    FILE, or to stdout."""
    from swapjudge.reading.parquet_out import is_parquet_path, write_records_parquet
    from swapjudge.review.queue import write_table
    from swapjudge.workflows.run import export_records

    by_name = (ExportFormat.parquet if is_parquet_path(out) else
               ExportFormat.csv if out.suffix.lower() == ".csv" else ExportFormat.jsonl)
    chosen = output_format or by_name
    if chosen is not by_name and str(out) != "-":
        raise InputError(f"--format {chosen.value} writes a .{chosen.value} file; -o {display_path(out)} ends "
                         f"otherwise (name the file .{chosen.value}, or leave --format out)")
    if chosen is ExportFormat.csv and str(out) == "-":
        raise InputError("--format csv needs -o FILE.csv (stdout gets JSON Lines or, with --format parquet, "
                         "Parquet)")
    rid, rows = export_records(store, run_id, latest=latest)
    if chosen is not ExportFormat.jsonl and rows and "slots" in rows[0]:
        raise InputError(f"run {rid} is a best-of-N (listwise) run: its records are written as JSON Lines (a "
                         f"{chosen.value} column cannot hold the list `slots`); name the output .jsonl")
    if chosen is ExportFormat.parquet:
        write_records_parquet(rows, out)
    else:
        write_table(rows, out)
    stderr.print(f"run {rid}: {len(rows):,} records written to {display_path(out)}", highlight=False)
