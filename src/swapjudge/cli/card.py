"""`swapjudge card`: a judge card from public labelled pairs, set beside published judges."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from swapjudge.cli.app import (
    FormatOpt,
    OutputFormat,
    app,
    conclude,
    display_path,
    dump_json,
    stderr,
    stdout,
    user_errors,
)
from swapjudge.errors import SwapjudgeError

if TYPE_CHECKING:
    from swapjudge.workflows.card import CardEstimate


def _money(value: float | None) -> str:
    return "unknown (no price for this model: add it under `prices:`)" if value is None else f"${value:,.4f}"


def _print_estimate(est: CardEstimate) -> None:
    run = est.run
    if not run.price_known:
        batch = _money(None)
    elif run.batch_cost_usd is None:
        batch = "no batch API for this backend"
    else:
        batch = f"{_money(est.batch_cost_usd)} (the run through the batch API, the probes synchronous)"
    stdout.print("\n".join([
        f"card dry run: suite {est.suite}, {est.pairs:,} pairs, both orders",
        f"  the run: {run.planned_calls:,} planned calls, {run.calls_to_make:,} to make "
        f"({run.already_stored:,} already stored, {run.cached:,} from the store's cache)",
        f"    estimated tokens (~4 characters per token): {run.input_tokens:,} in, {run.output_tokens:,} out",
        f"  the probes (identical answers, repeated calls; synchronous): {est.probe_calls:,} calls, "
        f"{est.probe_input_tokens:,} tokens in, {est.probe_output_tokens:,} out",
        f"  calls in all: {est.calls:,}",
        f"  estimated cost ({run.model}) at synchronous prices: {_money(est.sync_cost_usd)}",
        f"  at batch prices: {batch}",
    ]), highlight=False)


def _write(out: Path, kind: str, payload: dict[str, Any], output: OutputFormat) -> None:
    """-o FILE: .html, .md or .json by its suffix (else by --format)."""
    import json

    from swapjudge.reading.textfiles import write_atomic
    from swapjudge.report import card

    suffix = out.suffix.lower()
    if suffix in (".html", ".htm"):
        text = card.render_html(payload) if kind == "card" else card.render_comparison_html(payload)
    elif suffix == ".md" or (suffix != ".json" and output is OutputFormat.markdown):
        text = card.render_markdown(payload) if kind == "card" else card.render_comparison_markdown(payload)
    else:
        text = json.dumps(payload, indent=2, allow_nan=False) + "\n"
    write_atomic(out, text)
    stderr.print(f"wrote {display_path(out)}", highlight=False, markup=False)


def _show(kind: str, payload: dict[str, Any], output: OutputFormat) -> None:
    from swapjudge.cli.app import wide_console
    from swapjudge.report import card

    if output is OutputFormat.json:
        dump_json(payload)
    elif output is OutputFormat.markdown:
        print(card.render_markdown(payload) if kind == "card" else card.render_comparison_markdown(payload),
              end="")
    else:
        console = wide_console()
        width = console.width if console.is_terminal else None
        console.print(card.render_text(payload, width) if kind == "card"
                      else card.render_comparison_text(payload, width))


@app.command("card")
@user_errors
def card_command(
    inputs: Annotated[list[Path], typer.Argument(
        help="A run configuration (YAML: the judge, rubric, schema, tie policy and gate; its `pairs` is replaced "
             "by the suite), or with --compare two or more saved cards (JSON).", show_default=False)],
    suite: Annotated[str, typer.Option(
        "--suite", help="`default` (about 600 LLMBar pairs), `quick` (32 of them, 4 per set), or a pairs file of "
                        "your own (items named SUBSET#ID are grouped by SUBSET).")] = "default",
    out: Annotated[list[Path] | None, typer.Option(
        "-o", "--output", help="Also write the card to this file: .html, .md or .json by the suffix (else as "
                               "--format); give it several times for several files.", show_default=False)] = None,
    output: FormatOpt = OutputFormat.text,
    compare: Annotated[bool, typer.Option(
        "--compare", help="Set saved cards side by side: the same table per subset, differences with intervals "
                          "(Holm-corrected) and tiers.")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Count calls, tokens and cost (synchronous and batch prices) for the whole suite; call "
                          "nothing.")] = False,
    store: Annotated[Path | None, typer.Option(
        "--store", help="The run store (default: the configuration's `store`, else ./swapjudge.db).")] = None,
    references: Annotated[bool, typer.Option(
        "--references/--no-references", help="Set the card beside the shipped reference cards.")] = True,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show the progress bar.")] = True,
    no_wait: Annotated[bool, typer.Option(
        "--no-wait", help="With judge.batch: submit the batches and exit; the same command collects them.")] = False,
    retry_unparsed: Annotated[bool, typer.Option(
        "--retry-unparsed",
        help="Ask the judge again for the stored calls whose reply had no parsable verdict.")] = False,
    attacks: Annotated[str | None, typer.Option(
        "--attacks", help="Also run the attack probe on 32 pairs of the suite with these attacks, comma-separated "
                          "(null, structured-null, master-key, planted-verdict, reflection, authority, bandwagon; "
                          "`all` for every one); the card carries the attack table.")] = None,
) -> None:
    """Run the configured judge in both orders on a suite of public labelled pairs and print its judge card: per
    subset swap-consistency and the gate, flip direction, order-controlled accuracy and accuracy with the better
    answer in each slot, agreement with the labels, the identical-answer and length probes, repeat stability, the
    protocol, and the reference cards of published judges beside it. Running it again resumes the run. Exits 1
    (after writing) when the judge fails the self-consistency gate on the whole suite."""
    from swapjudge.workflows import card

    if compare:
        if dry_run:
            raise SwapjudgeError("--compare reads saved cards: it makes no calls, so there is nothing to --dry-run")
        doc = card.compare_saved(inputs).to_dict()
        for path in out or []:
            _write(path, "comparison", doc, output)
        _show("comparison", doc, output)
        return
    if len(inputs) != 1:
        raise SwapjudgeError("give one run configuration (or --compare with saved cards)")
    config = inputs[0]
    from swapjudge.runner.listwise_run import is_listwise_config

    if is_listwise_config(config):  # best of N: the N-way figures of a listwise run on the suite's answer sets
        _listwise_card(config, suite=suite, store=store, out=out or [], output=output, dry_run=dry_run,
                       progress=progress, no_wait=no_wait, unsupported={"--retry-unparsed": retry_unparsed,
                                                                         "--attacks": attacks is not None})
        return
    if dry_run:
        est = card.card_dry_run(config, suite=suite, store=store)
        if output is OutputFormat.json:
            dump_json(est.to_dict())
        else:
            _print_estimate(est)
        return
    from swapjudge.probes.attacks import ATTACKS

    names = None if attacks is None else [a.strip() for a in attacks.split(",") if a.strip()]
    made = card.card(config, suite=suite, store=store, references=references, progress=progress,
                        console=stderr, handle_sigint=True, batch_wait=not no_wait, retry_unparsed=retry_unparsed,
                        attacks=list(ATTACKS) if names == ["all"] else names)
    if made.card is None:
        run = made.run
        conclude(made)  # interrupted
        print(f"waiting for {run.waiting:,} requests in {run.batches_waiting:,} batches; run the same command to "
              "collect them and make the card")
        return
    doc = made.to_dict()
    for path in out or []:
        _write(path, "card", doc, output)
    _show("card", doc, output)
    conclude(made)


def _listwise_card(config: Path, *, suite: str, store: Path | None, out: list[Path], output: OutputFormat,
                   dry_run: bool, progress: bool, no_wait: bool, unsupported: dict[str, bool]) -> None:
    """`swapjudge card` of a `protocol: listwise` configuration: run it on the suite's answer sets (through the run
    store), then the card's N-way figures per subset."""
    import swapjudge.workflows.card as carding

    given = [flag for flag, on in unsupported.items() if on]
    if given:
        raise SwapjudgeError(f"{', '.join(given)} do(es) not apply to a best-of-N card")
    if dry_run:
        from swapjudge.runner.listwise_run import estimate_listwise

        if suite in carding.BUILTIN_SUITES:
            raise SwapjudgeError(f"the built-in suite {suite!r} holds pairs: a best-of-N card needs --suite FILE "
                                 "with three or more answers an item")
        est = estimate_listwise(config, store=store, answers=suite)
        stdout.print(f"card dry run: suite {Path(suite).name}, {est.items:,} items, rotations {est.rotations}: "
                     f"{est.planned_calls:,} planned calls, {est.calls_to_make:,} to make "
                     f"({est.already_stored:,} already stored, {est.cached:,} from the store's cache); estimated "
                     f"tokens {est.input_tokens:,} in, {est.output_tokens:,} out; cost ({est.model}): "
                     f"{_money(est.cost_usd)}"
                     + ("" if est.batch_cost_usd is None else f"; through a batch: {_money(est.batch_cost_usd)}"),
                     highlight=False, markup=False)
        return
    made = carding.listwise_card(config, suite=suite, store=store, console=stderr, progress=progress,
                                 batch_wait=not no_wait)
    if isinstance(made, carding.ListwiseWaiting):
        print(f"waiting for {made.requests:,} requests in {made.batches:,} batches; run the same command to "
              "collect them and make the card")
        return
    doc = made.to_dict()
    for path in out:
        _write(path, "card", doc, output)
    _show("card", doc, output)
    conclude(made)
