"""`swapjudge rank`: many systems, one tie-aware Bradley-Terry fit with item-bootstrap intervals."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from swapjudge.cli.app import OutputFormat, app, dump_json, stdout, user_errors
from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY
from swapjudge.errors import GateError, InputError
from swapjudge.ranking.choices import DEFAULT_ROUNDS, IntervalMethod, Model, OutcomeSource


@app.command()
@user_errors
def rank(
    records: Annotated[Path, typer.Argument(help="Presentation records, JSONL or CSV (docs/records.md); - for stdin.",
                                            show_default=False)],
    judge: Annotated[str | None, typer.Option("--judge", help="Rank by this judge's verdicts.")] = None,
    model: Annotated[Model, typer.Option("--model", help="Tie model fitted.")] = Model.rao_kupper,
    outcome: Annotated[OutcomeSource, typer.Option(
        "--outcome", help="swap: one order-cancelled outcome per pair (a split is a tie); calls: every call "
                          "as its own battle (arena-hard-auto style, for comparison).")] = OutcomeSource.swap,
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
) -> None:
    """Rank systems by a tie-aware Bradley-Terry fit, with bootstrap intervals over items and rank ranges."""
    from swapjudge.core.records import load_records
    from swapjudge.ranking.battles import choose_judge, comparisons_from_records
    from swapjudge.ranking.bradley_terry import rank as fit_ranking
    from swapjudge.ranking.gate import rank_gate
    from swapjudge.report import rank as render

    if not 0.0 < confidence < 1.0:
        raise InputError("--confidence must be between 0 and 1")
    if not 0.0 <= min_consistency <= 1.0:
        raise InputError("--min-consistency must be between 0 and 1")
    loaded = load_records(records, allow_unpaired=outcome is OutcomeSource.calls)
    name = judge if judge is not None else (loaded.judges[0] if loaded.judges else "")
    checked = rank_gate(choose_judge(loaded.frame, judge, loaded.source), min_consistency, confidence)
    if checked.blocks:
        reason = (checked.gate.reason or "").removesuffix("; no win rate reported")
        raise GateError(f"gate: judge {name or '(unnamed)'}: {reason}; no ranking reported "
                        "(--min-consistency 0 ranks anyway)")
    data = comparisons_from_records(loaded, judge=judge, outcome=outcome)
    if len(data.systems) < 2:
        raise InputError("fewer than two systems to rank", path=loaded.source)
    result = fit_ranking(data, model, rounds=bootstrap, seed=seed, confidence=confidence, interval=interval)
    if output is OutputFormat.json:
        payload = {"judge": name, "outcome": outcome.value, **checked.to_dict(), **result.to_dict()}
        dump_json(payload)
    elif output is OutputFormat.markdown:
        print(render.render_markdown(result, judge=name or None, outcome=outcome.value, gate=checked), end="")
    else:
        # Piped output has no terminal to fit: print the table whole rather than at rich's default 80 columns.
        console = stdout if stdout.is_terminal else Console(width=160, soft_wrap=False)
        console.print(render.render_text(result, judge=name or None, outcome=outcome.value, gate=checked))
