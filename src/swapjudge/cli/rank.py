"""`swapjudge rank`: many systems, one tie-aware Bradley-Terry fit with item-bootstrap intervals."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from swapjudge.cli.app import (
    OutputFormat,
    RecordsArg,
    app,
    conclude,
    dump_json,
    user_errors,
    wide_console,
)
from swapjudge.core.choices import (
    DEFAULT_MIN_CONSISTENCY,
    DEFAULT_ROUNDS,
    IntervalMethod,
    Model,
    OutcomeSource,
    ReadEngine,
)


@app.command("rank")
@user_errors
def rank_command(
    records: RecordsArg,
    judge: Annotated[str | None, typer.Option("--judge", help="Rank by this judge's verdicts.")] = None,
    model: Annotated[Model, typer.Option("--model", help="Tie model fitted.")] = Model.rao_kupper,
    outcome: Annotated[OutcomeSource, typer.Option(
        "--outcome", help="swap: one order-cancelled outcome per pair (a split is a tie); calls: every call "
                          "as its own battle (arena-hard-auto style, for comparison); graded (records with "
                          "strength): each pair's graded score s, both orders averaged, as s of a win and 1 - s "
                          "of a loss, fitted by plain Bradley-Terry (--model is not used).")] = OutcomeSource.swap,
    bootstrap: Annotated[int, typer.Option("--bootstrap", min=0,
                                           help="Bootstrap rounds over items (0: no intervals).")]
    = DEFAULT_ROUNDS,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap.")] = 0,
    interval: Annotated[IntervalMethod, typer.Option(
        "--interval", help="Score intervals: bootstrap percentiles, or BCa (bias-corrected, accelerated).")]
    = IntervalMethod.percentile,
    confidence: Annotated[float, typer.Option("--confidence", help="Confidence level of every interval.")]
    = 0.95,
    min_consistency: Annotated[float, typer.Option(
        "--min-consistency", help="Gate, as in analyze: below this swap-consistency of the judge (over all its "
                                  "complete pairs) no ranking is reported (exit 1); 0 ranks anyway.")]
    = DEFAULT_MIN_CONSISTENCY,
    output: Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")]
    = OutputFormat.text,
    order_effect: Annotated[bool, typer.Option(
        "--order-effect", help="Fit a first-slot (home-field) term with the strengths, on single calls: the "
                               "position preference in log-odds with its interval, and strengths adjusted for "
                               "it (the honest choice for single-order or randomly ordered calls).")] = False,
    control: Annotated[str | None, typer.Option(
        "--control", help="Style covariates to control for, comma-separated (e.g. length,markdown): normalised "
                          "differences of the two answers' features, from the records' first_NAME/second_NAME "
                          "fields or, for length and markdown, the answer texts in --pairs.")] = None,
    pairs: Annotated[Path | None, typer.Option(
        "--pairs", help="Pairs file with the answer texts, for --control length/markdown.")] = None,
    engine: Annotated[ReadEngine, typer.Option(
        "--engine", help="How a records file is read: auto (Parquet, and JSON Lines of 32 MiB or more, reduced to "
                         "counts per item, system pair and verdicts by the streaming engine when DuckDB is "
                         "installed: pip install 'swapjudge[scale]'), streaming (always: files larger than memory; "
                         "not for --outcome graded, --order-effect or --control, which need the records and which "
                         "auto reads whole), memory (read whole). The figures are the same.")] = ReadEngine.auto,
    fragility: Annotated[bool, typer.Option(
        "--fragility", help="Also report how few items stand between the top system and another: the fewest "
                            "items found whose removal (drop), or whose comparisons of the top system turned into "
                            "its losses (flip), put another system first; approximate (one-item refits added), "
                            "each set confirmed by refitting.")] = False,
    top_k: Annotated[int, typer.Option(
        "--top-k", min=1, help="With --fragility: the fewest items found that change the order of the top K "
                               "systems (another system among them, or two of them the other way round) instead "
                               "of the top one; flip turns the comparisons of the upper system of the gap that "
                               "closes into its losses.")] = 1,
) -> None:
    """Rank systems by a tie-aware Bradley-Terry fit, with bootstrap intervals over items and rank ranges.
    Listwise (best-of-N) records are ranked by a Plackett-Luce fit with slot effects instead."""
    from swapjudge.report import rank
    from swapjudge.workflows.rank import JudgeRanking, rank_judge

    controls = [c.strip() for c in (control or "").split(",") if c.strip()]
    result = rank_judge(records, judge=judge, model=model, outcome=outcome, bootstrap=bootstrap, seed=seed,
                        confidence=confidence, interval=interval, min_consistency=min_consistency,
                        order_effect=order_effect, control=controls, pairs=pairs, engine=engine.value,
                        fragility=fragility, top_k=top_k)
    conclude(result)  # a withheld ranking has nothing to show but why
    if output is OutputFormat.json:
        dump_json(result.to_dict())
        return
    if not isinstance(result, JudgeRanking):  # listwise (best-of-N) records
        from swapjudge.report import listwise

        lines = listwise.ranking_lines(result)
        text = listwise.render_markdown(lines) if output is OutputFormat.markdown else listwise.render_text(lines)
        wide_console(160).print(text, end="", highlight=False, markup=False)
        return
    assert result.ranking is not None
    name = result.judge or None
    # Piped output has no terminal to fit: print the table whole rather than at rich's default 80 columns.
    console = wide_console(160)
    if result.adjusted is None:
        if output is OutputFormat.markdown:
            print(rank.render_markdown(result.ranking, judge=name, outcome=result.outcome, gate=result.gate),
                  end="")
        else:
            console.print(rank.render_text(result.ranking, judge=name, outcome=result.outcome, gate=result.gate))
        if result.fragility is not None:
            from swapjudge.report.fragility import fragility_rows

            for label, text in fragility_rows(result.fragility):
                print(f"{label}: {text}" if output is OutputFormat.text else f"> **{label}**: {text}")
        return
    lines = [result.gate.sentence(), *rank.adjusted_lines(result.adjusted)]
    if output is OutputFormat.markdown:
        text = rank.render_markdown(result.ranking, judge=name, outcome="calls")
        print(text + "\n" + "\n".join(f"> {line}" for line in lines))
        return
    console.print(rank.render_text(result.ranking, judge=name, outcome="calls"))
    for line in lines:
        console.print(line, highlight=False)
