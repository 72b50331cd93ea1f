"""`swapjudge calibrate`: a judge's win rate corrected with people's labels on some of its items (PPI++)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from swapjudge.cli.app import (
    ConfidenceOpt,
    EngineOpt,
    FormatOpt,
    OutputFormat,
    app,
    dump_json,
    stdout,
    user_errors,
)
from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, ReadEngine, TiePolicy


@app.command("calibrate")
@user_errors
def calibrate_command(
    judge_records: Annotated[Path, typer.Argument(help="The judge's presentation records (JSON Lines, CSV or "
                                                       "Parquet).",
                                                  show_default=False)],
    human: Annotated[Path, typer.Option("--human", help="People's records on some of the same items: "
                                                        "`review tally` output or any records file, one "
                                                        "order or both.", show_default=False)],
    a: Annotated[str, typer.Option("--a", help="System whose win rate is estimated.", show_default=False)],
    b: Annotated[str, typer.Option("--b", help="The system it is compared against.", show_default=False)],
    judge: Annotated[str | None, typer.Option("--judge", help="The judge to use, when the file holds several.")]
    = None,
    tie_policy: Annotated[TiePolicy, typer.Option(
        "--tie-policy", help="What a split pair is worth: half_credit (0.5) or no_credit (0).")]
    = TiePolicy.half_credit,
    min_consistency: Annotated[float, typer.Option(
        "--min-consistency", help="The judge's gate: below this swap-consistency the judge-only win rate is "
                                  "withheld (the corrected one is still reported).")] = DEFAULT_MIN_CONSISTENCY,
    confidence: ConfidenceOpt = 0.95,
    output: FormatOpt = OutputFormat.text,
    engine: EngineOpt = ReadEngine.auto,
) -> None:
    """The human-corrected win rate by prediction-powered inference (PPI++): the judge's order-cancelled pair
    scores on every item, corrected by people's scores on the items they labelled. Valid whatever the judge's
    bias; the judge only narrows the interval, by as much as it agrees with the people (a judge unrelated to them
    gets lambda = 0 and the people-only interval)."""
    from swapjudge.probes.calibrate import calibration_sentences
    from swapjudge.workflows.calibrate import calibrate

    result = calibrate(judge_records, human, a, b, judge=judge, tie_policy=tie_policy,
                       min_consistency=min_consistency, confidence=confidence, engine=engine.value)
    if output is OutputFormat.json:
        dump_json(result.to_dict())
    elif output is OutputFormat.markdown:
        print("### swapjudge calibrate\n\n" + "\n".join(f"- {line}" for line in calibration_sentences(result)))
    else:
        for line in calibration_sentences(result):
            stdout.print(line, highlight=False, soft_wrap=True)
