"""`swapjudge rank`: many systems, one tie-aware Bradley-Terry fit with item-bootstrap intervals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from swapjudge.cli.app import OutputFormat, app, stdout, user_errors
from swapjudge.core.records import load_records
from swapjudge.core.sidefiles import load_answer_texts
from swapjudge.errors import InputError
from swapjudge.ranking.battles import OutcomeSource, calls_from_records, comparisons_from_records
from swapjudge.ranking.bradley_terry import DEFAULT_ROUNDS, IntervalMethod, Model
from swapjudge.ranking.bradley_terry import rank as fit_ranking
from swapjudge.ranking.order_effect import fit_adjusted
from swapjudge.report import rank as render


@app.command()
@user_errors
def rank(
    records: Annotated[Path, typer.Argument(help="Presentation records: JSON Lines or CSV (DESIGN 3.1).",
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
) -> None:
    """Rank systems by a tie-aware Bradley-Terry fit, with bootstrap intervals over items and rank ranges."""
    if not 0.0 < confidence < 1.0:
        raise InputError("--confidence must be between 0 and 1")
    if order_effect or control:
        _rank_adjusted(records, judge, order_effect, control, pairs, bootstrap, seed, confidence, output)
        return
    loaded = load_records(records, allow_unpaired=outcome is OutcomeSource.calls)
    data = comparisons_from_records(loaded, judge=judge, outcome=outcome)
    if len(data.systems) < 2:
        raise InputError("fewer than two systems to rank", path=loaded.source)
    result = fit_ranking(data, model, rounds=bootstrap, seed=seed, confidence=confidence, interval=interval)
    name = judge if judge is not None else (loaded.judges[0] if loaded.judges else "")
    if output is OutputFormat.json:
        payload = {"judge": name, "outcome": outcome.value, **result.to_dict()}
        print(json.dumps(payload, indent=2, allow_nan=False))
    elif output is OutputFormat.markdown:
        print(render.render_markdown(result, judge=name or None, outcome=outcome.value), end="")
    else:
        # Piped output has no terminal to fit: print the table whole rather than at rich's default 80 columns.
        console = stdout if stdout.is_terminal else Console(width=160, soft_wrap=False)
        console.print(render.render_text(result, judge=name or None, outcome=outcome.value))


def _rank_adjusted(records: Path, judge: str | None, order_effect: bool, control: str | None, pairs: Path | None,
                   rounds: int, seed: int, confidence: float, output: OutputFormat) -> None:
    """`rank --order-effect/--control`: Bradley-Terry on single calls with a first-slot term and covariates."""
    controls = [c.strip() for c in (control or "").split(",") if c.strip()]
    if len(set(controls)) != len(controls):
        raise InputError("--control names a covariate twice")
    loaded = load_records(records, allow_unpaired=True)
    texts = load_answer_texts(pairs) if pairs is not None else None
    data = calls_from_records(loaded, judge=judge, controls=controls, texts=texts)
    if len(data.systems) < 2:
        raise InputError("fewer than two systems to rank", path=loaded.source)
    result = fit_adjusted(data, order_effect=order_effect, rounds=rounds, seed=seed, confidence=confidence)
    name = judge if judge is not None else (loaded.judges[0] if loaded.judges else "")
    if output is OutputFormat.json:
        print(json.dumps({"judge": name, "outcome": "calls", **result.to_dict()}, indent=2, allow_nan=False))
        return
    lines = render.adjusted_lines(result)
    if output is OutputFormat.markdown:
        text = render.render_markdown(result.ranking, judge=name or None, outcome="calls")
        print(text + "\n" + "\n".join(f"> {line}" for line in lines))
        return
    console = stdout if stdout.is_terminal else Console(width=160, soft_wrap=False)
    console.print(render.render_text(result.ranking, judge=name or None, outcome="calls"))
    for line in lines:
        console.print(line, highlight=False)
