"""`swapjudge plan` and `swapjudge decide`: the pre-registered ship/keep decision."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from swapjudge.cli.app import (
    FormatOpt,
    OutputFormat,
    app,
    conclude,
    display_path,
    dump_json,
    stderr,
    user_errors,
)
from swapjudge.defaults import DEFAULT_STORE

DecisionArg = Annotated[Path, typer.Argument(
    help="The decision file (YAML, written before any data): candidate, incumbent, hypothesis, margin, tie_policy, "
         "min_consistency, alpha, power, items, monitoring, judge (docs/decide.md).", show_default=False)]


@app.command("plan")
@user_errors
def plan_command(
    decision: DecisionArg,
    pilot: Annotated[Path | None, typer.Option(
        "--pilot", help="Plan from a pilot: presentation records (or a run store) of the two systems; their item "
                        "scores are resampled.")] = None,
    expect: Annotated[float | None, typer.Option(
        "--expect", help="The candidate's expected win rate under the registered tie policy (e.g. 0.58).")] = None,
    splits: Annotated[float | None, typer.Option(
        "--splits", help="The expected share of split pairs (ties, flips, half-ties), with --expect.")] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", help="A run configuration: prices the planned calls (sync and batch) from its dry run.")] = None,
    run: Annotated[int | None, typer.Option("--run", help="With a store as --pilot: its run (default: latest).")]
    = None,
    simulations: Annotated[int, typer.Option("--simulations", help="Simulated studies behind the plan and its "
                                                                   "power check.")] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the simulations (the check uses seed + 1).")] = 0,
    human: Annotated[Path | None, typer.Option(
        "--human", help="Plan people's labels instead: a pilot of people's records on some of the --pilot judge's "
                        "items (with `pi` where a design drew them). Prints the labels a corrected interval of "
                        "--width needs under a uniform and an active design.", show_default=False)] = None,
    width: Annotated[float | None, typer.Option(
        "--width", help="With --human: the total width of the corrected interval to reach (two-sided, at "
                        "1 - 2 alpha of the decision file).", show_default=False)] = None,
    output: FormatOpt = OutputFormat.text,
) -> None:
    """The number of items the registered power needs under the registered bound (fixed interval or confidence
    sequence), the power at those items checked by simulation, and the judge calls and their cost. With
    --human: the people's labels a target interval width needs, uniform against active."""
    from swapjudge.decision.power import PlanError
    from swapjudge.report.decision import render_plan_markdown, render_plan_text
    from swapjudge.workflows.decide import plan

    if human is not None or width is not None:
        from swapjudge.workflows.human_plan import human_plan, plan_sentences

        if human is None or width is None or pilot is None:
            raise PlanError("--human needs --pilot (the judge's records) and --width (the interval's width)")
        planned = human_plan(decision, pilot=pilot, human=human, width=width)
        if output is OutputFormat.json:
            dump_json(planned.to_dict())
        else:
            print("\n".join(plan_sentences(planned)))
        return

    result = plan(decision, pilot=pilot, expect=expect, splits=splits, config=config, run=run,
                  simulations=simulations, seed=seed)
    if output is OutputFormat.json:
        dump_json(result.to_dict())
    elif output is OutputFormat.markdown:
        print(render_plan_markdown(result), end="")
    else:
        print(render_plan_text(result), end="")


@app.command("decide")
@user_errors
def decide_command(
    decision: DecisionArg,
    records: Annotated[Path, typer.Argument(
        help="Presentation records (JSONL/CSV, - for stdin) or a run store (SQLite).", show_default=False)],
    run: Annotated[int | None, typer.Option("--run", help="With a store: the run to decide on (default: latest).")]
    = None,
    allow_missing: Annotated[int, typer.Option(
        "--allow-missing", help="Tolerate up to N judge calls that are missing or have no verdict (default: none: "
                                "a missing call keeps the incumbent).")] = 0,
    store: Annotated[Path | None, typer.Option(
        "--store", help=f"With a records file: the run store whose decisions ledger records this decision "
                        f"(default ./{DEFAULT_STORE}). A store given as RECORDS records in itself.")] = None,
    html_out: Annotated[Path | None, typer.Option("--html", help="Also write the decision as an HTML page.")] = None,
    fragility: Annotated[bool, typer.Option(
        "--fragility", help="Also report how few items stand between the verdict and another: the fewest items "
                            "whose removal (drop) or whose verdicts turned against it (flip) change it, and whether "
                            "the swap-inconsistent pairs resolved the worst way do.")] = False,
    attack_report: Annotated[Path | None, typer.Option(
        "--attack-report", help="The JSON of `swapjudge probe attack --format json`, for a decision file that names "
                                "`attacks` and `max_attack_win`: an attack whose both-order win rate's upper bound "
                                "passes the ceiling keeps (so does a named attack not measured).")] = None,
    output: FormatOpt = OutputFormat.text,
) -> None:
    """Ship, keep or inconclusive for a pre-registered decision. Exit 0 ship, 1 keep (a failed gate and missing
    calls included: the decision fails closed), 3 inconclusive, 2 bad input."""
    from swapjudge.report.decision import render_html, render_markdown, render_text
    from swapjudge.workflows.decide import decide, is_store

    ledger = None if is_store(records) else (store or Path(DEFAULT_STORE))
    verdict = decide(records, decision, run=run, allow_missing=allow_missing, store=ledger, fragility=fragility,
                     attack_report=attack_report)
    if output is OutputFormat.json:
        dump_json(verdict.to_dict())
    elif output is OutputFormat.markdown:
        print(render_markdown(verdict), end="")
    else:
        print(render_text(verdict), end="")
    if html_out is not None:
        from swapjudge.reading.textfiles import write_atomic

        write_atomic(html_out, render_html(verdict))
        stderr.print(f"wrote {display_path(html_out)}", highlight=False)
    conclude(verdict)
