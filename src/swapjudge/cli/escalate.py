"""`swapjudge escalate`: the escalation cascade with certified agreement. Thin: parse, call the workflow, render."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from swapjudge.cli.app import (
    ConfidenceOpt,
    FormatOpt,
    OutputFormat,
    RecordsArg,
    app,
    dump_json,
    stderr,
    user_errors,
    wide_console,
)


@app.command("escalate")
@user_errors
def escalate_command(
    records: RecordsArg,
    judge: Annotated[list[str], typer.Option(
        "--judge", help="A judge of the cascade, named as in the records' judge field; give it once per judge, "
                        "cheapest first.", show_default=False)],
    alpha: Annotated[float, typer.Option(
        "--alpha", help="Disagreement with the labels each judge may have on the pairs it settles: agreement is "
                        "held at 1 - alpha or more.")] = 0.1,
    delta: Annotated[float, typer.Option(
        "--delta", help="Chance allowed that a judge's calibration misses its level: the guarantee holds with "
                        "probability 1 - delta per judge.")] = 0.1,
    labels: Annotated[Path | None, typer.Option(
        "--labels", help="CSV or JSONL with item and label (the better answer's identity, or tie), as agreement "
                         "--labels reads; without it the records' label field is used.")] = None,
    split: Annotated[float | None, typer.Option(
        "--split", help="Calibrate on this seeded share of the labelled items and measure the realized agreement "
                        "on the rest (the test); without it every labelled pair calibrates.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the --split draw.")] = 0,
    thresholds: Annotated[Path | None, typer.Option(
        "--thresholds", help="Apply thresholds saved with -o to these records (unlabelled ones too) instead of "
                             "fitting, at the alpha and delta they were fitted at; records from another judge "
                             "configuration are refused.")] = None,
    save: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Save the fitted thresholds (with the labels' hash, the fitted items and each "
                               "judge's configuration hash) to this JSON file.")] = None,
    confidence: ConfidenceOpt = 0.95,
    output: FormatOpt = OutputFormat.text,
    html_out: Annotated[Path | None, typer.Option(
        "--html", help="Also write an HTML page with each judge's coverage-risk curve on its calibration pairs.")
    ] = None,
) -> None:
    """Settle each pair at the cheapest judge that can be trusted on it (Trust or Escalate, Jung, Brahman and
    Choi, ICLR 2025). Every pair starts at the first judge; a flip or a half-tie is never settled, a consistent
    pair is settled when its confidence (the order-averaged probability of its verdict where the records carry
    p_first/p_second, else the consistency itself) reaches the judge's threshold; the rest go to the next judge.
    Each threshold is chosen by fixed-sequence testing on labelled calibration pairs so that the judge's agreement
    with the labels on the pairs it settles is at least 1 - alpha with probability at least 1 - delta."""
    from swapjudge.reading.textfiles import write_atomic
    from swapjudge.report.escalate import escalation_markdown, summary_lines
    from swapjudge.workflows.escalate import escalate, thresholds_document

    result = escalate(str(records), judges=judge, alpha=alpha, delta=delta, labels=labels, split=split, seed=seed,
                      thresholds=thresholds, confidence=confidence)
    if save is not None:
        write_atomic(save, json.dumps(thresholds_document(result), indent=2) + "\n")
    if output is OutputFormat.json:
        dump_json(result.to_dict())
    elif output is OutputFormat.markdown:
        print(escalation_markdown(result), end="")
    else:
        console = wide_console()
        for line in summary_lines(result):
            console.print(line, markup=False, highlight=False)
    if save is not None:
        stderr.print(f"thresholds saved to {save}", markup=False, highlight=False)
    if html_out is not None:
        from swapjudge.report.escalate_html import render_escalation_html

        write_atomic(html_out, render_escalation_html(result, title=Path(str(records)).name))
        stderr.print(f"wrote {html_out}", markup=False, highlight=False)
