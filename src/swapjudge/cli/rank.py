"""`swapjudge rank`: many systems, one tie-aware Bradley-Terry fit with item-bootstrap intervals."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from swapjudge.cli.app import OutputFormat, app, dump_json, stdout, user_errors
from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, DEFAULT_ROUNDS, IntervalMethod, Model, OutcomeSource
from swapjudge.errors import GateError, InputError

if TYPE_CHECKING:
    from swapjudge.core.records import RecordSet
    from swapjudge.ranking.gate import RankGate


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
    from swapjudge.core.records import load_records
    from swapjudge.ranking.battles import choose_judge, comparisons_from_records
    from swapjudge.ranking.bradley_terry import rank as fit_ranking
    from swapjudge.ranking.gate import rank_gate
    from swapjudge.report import rank as render

    if not 0.0 < confidence < 1.0:
        raise InputError("--confidence must be between 0 and 1")
    if not 0.0 <= min_consistency <= 1.0:
        raise InputError("--min-consistency must be between 0 and 1")
    adjusted = order_effect or bool(control)
    loaded = load_records(records, allow_unpaired=adjusted or outcome is OutcomeSource.calls)
    name = judge if judge is not None else (loaded.judges[0] if loaded.judges else "")
    checked = rank_gate(choose_judge(loaded.frame, judge, loaded.source), min_consistency, confidence)
    # With --order-effect on single-order data the fitted first-slot term stands in for the swap the data lack:
    # there is no consistency to gate on, and the ranking says so.
    blocks = checked.blocks and not (order_effect and checked.consistency is None)
    if adjusted:
        _rank_adjusted(loaded, name, judge, order_effect, control, pairs, bootstrap, seed, confidence, output,
                       checked, blocks)
        return
    if blocks:
        _gate_error(name, checked)
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


def _rank_adjusted(loaded: RecordSet, name: str, judge: str | None, order_effect: bool, control: str | None,
                   pairs: Path | None, rounds: int, seed: int, confidence: float, output: OutputFormat,
                   checked: RankGate, blocks: bool) -> None:
    """`rank --order-effect/--control`: Bradley-Terry on single calls with a first-slot term and covariates."""
    from swapjudge.core.sidefiles import load_answer_texts
    from swapjudge.ranking.battles import calls_from_records
    from swapjudge.ranking.order_effect import fit_adjusted
    from swapjudge.report import rank as render

    controls = [c.strip() for c in (control or "").split(",") if c.strip()]
    if len(set(controls)) != len(controls):
        raise InputError("--control names a covariate twice")
    texts = load_answer_texts(pairs) if pairs is not None else None
    data = calls_from_records(loaded, judge=judge, controls=controls, texts=texts)
    if len(data.systems) < 2:
        raise InputError("fewer than two systems to rank", path=loaded.source)
    if blocks:  # after the input checks: a malformed request is said as such, whatever the judge
        _gate_error(name, checked)
    result = fit_adjusted(data, order_effect=order_effect, rounds=rounds, seed=seed, confidence=confidence)
    if output is OutputFormat.json:
        dump_json({"judge": name, "outcome": "calls", **checked.to_dict(), **result.to_dict()})
        return
    lines = [checked.sentence(), *render.adjusted_lines(result)]
    if output is OutputFormat.markdown:
        text = render.render_markdown(result.ranking, judge=name or None, outcome="calls")
        print(text + "\n" + "\n".join(f"> {line}" for line in lines))
        return
    console = stdout if stdout.is_terminal else Console(width=160, soft_wrap=False)
    console.print(render.render_text(result.ranking, judge=name or None, outcome="calls"))
    for line in lines:
        console.print(line, highlight=False)


def _gate_error(name: str, checked: RankGate) -> None:
    reason = (checked.gate.reason or "").removesuffix("; no win rate reported")
    raise GateError(f"gate: judge {name or '(unnamed)'}: {reason}; no ranking reported "
                    "(--min-consistency 0 ranks anyway)")
