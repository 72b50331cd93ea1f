"""`swapjudge calc` and `swapjudge analyze`: the swap audit, from counts or from records."""

from __future__ import annotations

from typing import Annotated

import typer

from swapjudge.cli.app import (
    AllowUnpairedOpt,
    ConfidenceOpt,
    EngineOpt,
    FormatOpt,
    JudgeOpt,
    OutputFormat,
    RecordsArg,
    SystemAOpt,
    SystemBOpt,
    app,
    conclude,
    dump_json,
    stdout,
    user_errors,
    wide_console,
)
from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, ReadEngine, TiePolicy


@app.command()
@user_errors
def calc(
    pairs: Annotated[int, typer.Option("--pairs", help="Complete pairs judged in both orders.")],
    consistent: Annotated[int, typer.Option("--consistent", help="Pairs with the same verdict in both orders.")],
    to_first: Annotated[int | None, typer.Option("--to-first", help="Flips and half-ties toward slot 1.")] = None,
    to_second: Annotated[int | None, typer.Option("--to-second", help="Flips and half-ties toward slot 2.")] = None,
    margin: Annotated[float | None, typer.Option(
        "--margin", help="Observed lead between the systems as a share of pairs (e.g. 0.12): says whether "
                         "the flip rate could have decided it.")] = None,
    confidence: ConfidenceOpt = 0.95,
    output: FormatOpt = OutputFormat.text,
) -> None:
    """Swap-consistency calculator from counts: consistency with a Wilson interval and its band, flip direction
    with an exact binomial test, and whether order could decide the margin."""
    from swapjudge.core.calculator import calculate
    from swapjudge.report import markdown, text

    result = calculate(pairs, consistent, to_first=to_first, to_second=to_second, margin=margin,
                       confidence=confidence)
    if output is OutputFormat.json:
        dump_json(result.to_dict())
    elif output is OutputFormat.markdown:
        print(markdown.markdown_calculation(result), end="")
    else:
        stdout.print(text.text_calculation(result))


@app.command("analyze")
@user_errors
def analyze_command(
    records: RecordsArg,
    judge: JudgeOpt = None,
    a: SystemAOpt = None,
    b: SystemBOpt = None,
    tie_policy: Annotated[TiePolicy | None, typer.Option(
        "--tie-policy", help="What a split pair is worth. Default: the policy the run was registered with "
                             "(exports of a stored run carry it), else half_credit.", show_default=False)] = None,
    min_consistency: Annotated[float, typer.Option(
        "--min-consistency", help="Gate: below this swap-consistency no win rate is reported (exit 1).")]
    = DEFAULT_MIN_CONSISTENCY,
    allow_unpaired: AllowUnpairedOpt = False,
    confidence: ConfidenceOpt = 0.95,
    output: FormatOpt = OutputFormat.text,
    engine: EngineOpt = ReadEngine.auto,
    fragility: Annotated[bool, typer.Option(
        "--fragility", help="Two systems: also report how few items stand between what the win rate shows "
                            "(a ahead, b ahead, neither) and another reading: the fewest items whose removal "
                            "(drop) or whose verdicts turned (flip) change it, and the swap-inconsistent pairs "
                            "resolved the worst way.")] = False,
) -> None:
    """Analyse judge calls made in both orders: consistency, flip direction, verdict split, win rate under a
    tie policy, the gate; accuracy when records carry labels; the identical-answer probe when present.

    Listwise (best-of-N) records are detected by their `slots` field: each slot's pick share, a test that no
    slot is preferred, winner consistency over an item's rotations and its gate, accuracy by the slot the
    better answer sat in, and Plackett-Luce strengths with slot effects (item bootstrap)."""
    from swapjudge.core.analysis import Analyses
    from swapjudge.workflows.analyze import analyze

    result = analyze(records, judge=judge, a=a, b=b, tie_policy=tie_policy, min_consistency=min_consistency,
                     confidence=confidence, allow_unpaired=allow_unpaired, engine=engine.value,
                     fragility=fragility)
    if output is OutputFormat.json:
        dump_json(result.to_dict())
    elif not isinstance(result, Analyses):  # listwise (best-of-N) records
        from swapjudge.report import listwise

        render = listwise.render_markdown if output is OutputFormat.markdown else listwise.render_text
        for one in result:
            wide_console().print(render(listwise.analysis_lines(one)), end="", highlight=False, markup=False)
    elif output is OutputFormat.markdown:
        from swapjudge.report import markdown  # imported for this format only: text output needs none of it

        print(markdown.render_analyses(list(result)), end="")
    else:
        from swapjudge.report import text  # rich's tables, imported for this format only

        text.print_analyses(wide_console(), list(result))
    if fragility and output is not OutputFormat.json:
        from swapjudge.report.fragility import fragility_rows

        for one in result:
            found = getattr(one, "fragility", None)  # listwise analyses have none
            for label, line in fragility_rows(found) if found is not None else ():
                print(f"{label}: {line}" if output is OutputFormat.text else f"> **{label}**: {line}")
    conclude(result)
