"""`swapjudge calibrate`: a judge's win rate corrected with people's labels on some of its items (PPI++)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from swapjudge.cli.app import ConfidenceOpt, FormatOpt, OutputFormat, app, dump_json, stdout, user_errors
from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, TiePolicy
from swapjudge.errors import InputError, SwapjudgeError


@app.command()
@user_errors
def calibrate(
    judge_records: Annotated[Path, typer.Argument(help="The judge's presentation records (JSON Lines or CSV).",
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
) -> None:
    """The human-corrected win rate by prediction-powered inference (PPI++): the judge's order-cancelled pair
    scores on every item, corrected by people's scores on the items they labelled. Valid whatever the judge's
    bias; the judge only narrows the interval, by as much as it agrees with the people (a judge unrelated to them
    gets lambda = 0 and the people-only interval)."""
    from swapjudge.core.analysis import analyze
    from swapjudge.core.records import load_records, select_judges
    from swapjudge.probes.calibrate import calibrate as run_calibrate
    from swapjudge.probes.calibrate import sentences

    judged = load_records(judge_records, allow_unpaired=True)
    people = load_records(human, allow_unpaired=True)
    judges = select_judges(judged.frame, judge)
    if judge is None and len(judges) > 1:
        raise InputError(f"records hold {len(judges)} judges ({', '.join(judges)}); choose one with --judge",
                         path=judged.source)
    name = judges[0]
    frame = judged.frame.filter(judged.frame.get_column("judge") == name)
    try:
        analysis = analyze(judged, judge=name, a=a, b=b, tie_policy=tie_policy, min_consistency=min_consistency,
                           confidence=confidence)[0]
    except SwapjudgeError as err:
        raise InputError(str(err), path=judged.source) from None
    result = run_calibrate(frame, people.frame, a, b, gate=analysis.gate, judge=name or None,
                           tie_policy=tie_policy, confidence=confidence, judge_source=judged.source,
                           human_source=people.source)
    if output is OutputFormat.json:
        dump_json(result.to_dict())
    elif output is OutputFormat.markdown:
        print("### swapjudge calibrate\n\n" + "\n".join(f"- {line}" for line in sentences(result)))
    else:
        for line in sentences(result):
            stdout.print(line, highlight=False, soft_wrap=True)
