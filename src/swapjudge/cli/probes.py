"""`swapjudge segments`, `probe length|repeat`, `agreement`, `panel`, `variants`: analyses of records that look
past the swap. Thin: load, call the library, render."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from swapjudge.cli.app import ConfidenceOpt, FormatOpt, OutputFormat, app, dump_json, stderr, stdout, user_errors
from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, LengthUnit, SplitHandling, TiePolicy
from swapjudge.errors import InputError, SwapjudgeError

if TYPE_CHECKING:

    from swapjudge.report.probe_tables import Table

probe_app = typer.Typer(help="Probes for what swapping cannot see: answer length, repeat stability.",
                        no_args_is_help=True)
app.add_typer(probe_app, name="probe")

RecordsArg = Annotated[Path, typer.Argument(help="Presentation records, JSONL or CSV (docs/records.md); - for stdin.",
                                            show_default=False)]
AllowUnpairedOpt = Annotated[bool, typer.Option(
    "--allow-unpaired", help="Count a pair judged in one order only as incomplete instead of an error.")]


JudgeOpt = Annotated[str | None, typer.Option("--judge", help="This judge only.")]


def _emit(output: OutputFormat, payload: object, tables: list[Table]) -> None:
    from swapjudge.report import probe_tables

    if output is OutputFormat.json:
        dump_json(payload)
    elif output is OutputFormat.markdown:
        print(probe_tables.to_markdown(tables), end="")
    else:
        probe_tables.print_tables(stdout, tables)


@app.command()
@user_errors
def segments(
    records: RecordsArg,
    by: Annotated[str, typer.Option("--by", help="Record field to break the analysis down by (e.g. task); it "
                                                 "must be the same on both calls of a pair.")],
    judge: Annotated[str | None, typer.Option("--judge", help="Analyse this judge only.")] = None,
    a: Annotated[str | None, typer.Option("--a", help="System whose win rate is reported.")] = None,
    b: Annotated[str | None, typer.Option("--b", help="The system it is compared against.")] = None,
    tie_policy: Annotated[TiePolicy, typer.Option("--tie-policy", help="What a split pair is worth.")]
    = TiePolicy.half_credit,
    min_consistency: Annotated[float, typer.Option(
        "--min-consistency", help="Gate, applied to the whole file (exit 1) and shown per segment.")]
    = DEFAULT_MIN_CONSISTENCY,
    allow_unpaired: AllowUnpairedOpt = False,
    confidence: ConfidenceOpt = 0.95,
    output: FormatOpt = OutputFormat.text,
) -> None:
    """The analysis broken down by a record field: swap-consistency, flip direction and win rate per segment,
    with intervals. Position preference concentrates on close, hard items; one overall figure can hide it."""
    from swapjudge.core.records import load_records
    from swapjudge.probes.segments import segment_analyses
    from swapjudge.report import probe_tables

    loaded = load_records(records, allow_unpaired=allow_unpaired)
    result = segment_analyses(loaded, by, judge=judge, a=a, b=b, tie_policy=tie_policy,
                              min_consistency=min_consistency, confidence=confidence)
    _emit(output, result.to_dict(), probe_tables.segments_tables(result))
    failed = [x for x in result.overall if not x.gate.passed]
    if failed:
        for x in failed:
            stderr.print(f"gate: {x.judge or '(unnamed judge)'}: {x.gate.reason}", highlight=False)
        raise typer.Exit(1)


@probe_app.command("length")
@user_errors
def probe_length(
    records: RecordsArg,
    pairs: Annotated[Path | None, typer.Option(
        "--pairs", help="Pairs file with the answer texts: JSONL {item, prompt, answers: {system: text}} or CSV "
                        "with `answer.<system>` columns. Without it the records' first_text/second_text fields are "
                        "used.")] = None,
    judge: JudgeOpt = None,
    unit: Annotated[LengthUnit, typer.Option("--unit", help="Length in characters or whitespace tokens.")]
    = LengthUnit.chars,
    threshold: Annotated[int, typer.Option(
        "--threshold", help="P(prefer longer) over pairs whose lengths differ by more than this.")] = 100,
    tolerance: Annotated[int, typer.Option(
        "--tolerance", help="Length-matched slice: pairs whose lengths differ by at most this.")] = 20,
    per: Annotated[int, typer.Option("--per", help="Report the slope per this many units.")] = 100,
    splits: Annotated[SplitHandling, typer.Option(
        "--splits", help="Splits (ties, flips, half-ties) in the slope: worth 1/2, or left out.")]
    = SplitHandling.half,
    a: Annotated[str | None, typer.Option("--a", help="System whose matched and length-controlled win rate "
                                                      "is reported.")] = None,
    b: Annotated[str | None, typer.Option("--b", help="The system it is compared against.")] = None,
    length_controlled: Annotated[bool, typer.Option(
        "--length-controlled", help="Also an AlpacaEval-style length-controlled win rate of --a against --b.")]
    = False,
    difficulty: Annotated[Path | None, typer.Option(
        "--difficulty", help="With --length-controlled: AlpacaEval's per-instruction difficulty term, from its "
                             "instruction_difficulty.csv (first column the instruction index, then "
                             "instruction_difficulty). Rows are matched by the records' instruction_index field "
                             "(written by `import alpaca-eval`), else by item. Single-order records are fitted "
                             "call by call, with AlpacaEval's own preference where the records carry it.")] = None,
    gamed_baseline: Annotated[Path | None, typer.Option(
        "--gamed-baseline", help="With --length-controlled: AlpacaEval's df_gamed.csv, the annotations of "
                                 "length-gamed versions of the baseline --b against it, added to the fit to "
                                 "regularise the length and difficulty terms toward the baseline's.")] = None,
    regularize: Annotated[float | None, typer.Option(
        "--regularize", help="Total weight of the gamed baseline rows per instruction (AlpacaEval's lambda; "
                             "default 0.2), shared equally by the gamed versions.")] = None,
    alpaca_cv: Annotated[bool, typer.Option(
        "--alpaca-cv", help="With --difficulty or --gamed-baseline: also AlpacaEval's own estimate (an L1 "
                            "penalty chosen by 5-fold cross-validation; needs scikit-learn), beside the "
                            "maximum-likelihood fit that carries the interval.")] = False,
    tie_policy: Annotated[TiePolicy, typer.Option("--tie-policy", help="Tie policy of the matched win rate.")]
    = TiePolicy.half_credit,
    allow_unpaired: AllowUnpairedOpt = False,
    confidence: ConfidenceOpt = 0.95,
    min_consistency: Annotated[float, typer.Option(
        "--min-consistency", help="Gate: below this swap-consistency of the --a/--b pairs, the matched and "
                                  "length-controlled win rates are withheld (exit 1); 0 reports them even when "
                                  "consistency cannot be measured (single-order data).")] = DEFAULT_MIN_CONSISTENCY,
    output: FormatOpt = OutputFormat.text,
) -> None:
    """Does the judge prefer longer answers? Logistic slope of the order-cancelled outcome on the length
    difference, P(prefer longer), a length-matched slice. Swapping cannot remove this effect."""
    import polars as pl

    from swapjudge.core.pairs import build_pairs
    from swapjudge.core.records import load_records, select_judges
    from swapjudge.core.sidefiles import load_answer_texts, texts_from_records
    from swapjudge.probes.alpaca_files import load_gamed_baseline, load_instruction_difficulty
    from swapjudge.probes.alpaca_lc import DEFAULT_REGULARIZE, INSTRUCTION_INDEX, PREFERENCE, rows_for_pair
    from swapjudge.probes.length import length_probe, lengths_for_pairs
    from swapjudge.probes.length import with_holm as length_with_holm
    from swapjudge.report import probe_tables

    alpaca = difficulty is not None or gamed_baseline is not None
    if (alpaca or regularize is not None) and not length_controlled:
        raise SwapjudgeError("--difficulty, --gamed-baseline and --regularize need --length-controlled")
    if regularize is not None and (gamed_baseline is None or regularize <= 0):
        raise SwapjudgeError("--regularize needs --gamed-baseline and a value above 0")
    if alpaca_cv and not alpaca:
        raise SwapjudgeError("--alpaca-cv needs --difficulty or --gamed-baseline")
    # the records' own text fields (and AlpacaEval's preference and instruction_index) are extras
    loaded = load_records(records, allow_unpaired=allow_unpaired, extras=pairs is None or alpaca)
    texts = load_answer_texts(pairs) if pairs is not None else texts_from_records(loaded.frame)
    if not texts:
        raise SwapjudgeError("no answer texts: pass --pairs FILE, or give the records first_text/second_text")
    if min(threshold, tolerance) < 0 or per <= 0:
        raise SwapjudgeError("--threshold and --tolerance must be >= 0 and --per > 0")
    if length_controlled and (a is None or b is None):
        raise SwapjudgeError("--length-controlled needs --a and --b")
    difficulties = load_instruction_difficulty(difficulty) if difficulty is not None else None
    gamed = load_gamed_baseline(gamed_baseline, difficulties) if gamed_baseline is not None else None
    results = []
    all_pairs = (build_pairs(loaded.frame, keep=(PREFERENCE, INSTRUCTION_INDEX)) if alpaca
                 else loaded.pairs or build_pairs(loaded.frame))
    for name in select_judges(loaded.frame, judge):
        f = all_pairs.frame.filter(pl.col("judge") == name)
        items, x, y = (f.get_column(c).to_numpy() for c in ("item", "x", "y"))
        lx, ly, found = lengths_for_pairs(items, x, y, texts, unit)
        if not found.any():
            raise InputError(f"no pair of judge {name or '-'!r} has both answer texts (items and system names "
                             "must match the records)", path=str(pairs) if pairs else None)
        pair = (a, b) if a is not None and b is not None else None
        rows = (rows_for_pair(f.filter(pl.Series(found)), a, b, lx[found], ly[found], difficulties,
                              str(difficulty or ""), loaded.source) if alpaca and a is not None and b is not None
                else None)
        results.append(length_probe(
            f.get_column("outcome").to_numpy()[found], lx[found], ly[found], judge=name or None, x=x[found],
            y=y[found], pair=pair, unit=unit, splits=splits, threshold=threshold, tolerance=tolerance, per=per,
            length_controlled=length_controlled, tie_policy=tie_policy, missing_texts=int((~found).sum()),
            confidence=confidence, min_consistency=min_consistency, items=items[found], alpaca=rows, gamed=gamed,
            regularize=DEFAULT_REGULARIZE if regularize is None else regularize, alpaca_cv=alpaca_cv))
    results = length_with_holm(results)
    payload = [r.to_dict() for r in results]
    _emit(output, payload[0] if len(payload) == 1 else {"judges": payload}, probe_tables.length_tables(results))
    failed = [r for r in results if a is not None and b is not None and r.gate is not None and not r.gate.passed]
    if failed:  # the win rates asked for were withheld, as `analyze` withholds them
        reason = failed[0].gate.reason if failed[0].gate else None
        typer.echo(f"gate failed for judge {failed[0].judge or '-'}: {reason}", err=True)
        raise typer.Exit(1)


@probe_app.command("repeat")
@user_errors
def probe_repeat(
    records: RecordsArg,
    judge: JudgeOpt = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap over pairs.")] = 0,
    allow_unpaired: AllowUnpairedOpt = False,
    confidence: ConfidenceOpt = 0.95,
    output: FormatOpt = OutputFormat.text,
) -> None:
    """Repeat stability: agreement of the judge with itself when the same call (same pair, same order) is
    repeated across rounds, beside swap-consistency per round. Needs records with a `round` field."""
    import polars as pl

    from swapjudge.core.records import load_records, select_judges
    from swapjudge.probes.repeat import repeat_stability
    from swapjudge.report import probe_tables

    loaded = load_records(records, allow_unpaired=allow_unpaired, extras=False)
    results = []
    for name in select_judges(loaded.frame, judge):
        r = repeat_stability(loaded.frame.filter(pl.col("judge") == name), judge=name or None,
                             confidence=confidence, seed=seed)
        if r is None:
            raise SwapjudgeError(f"judge {name or '-'!r} has one round only: repeat stability needs records "
                                 "repeated with different `round` values")
        results.append(r)
    payload = [r.to_dict() for r in results]
    _emit(output, payload[0] if len(payload) == 1 else {"judges": payload}, probe_tables.repeat_tables(results))


@app.command("agreement")
@user_errors
def agreement_command(
    records: RecordsArg,
    labels: Annotated[Path | None, typer.Option(
        "--labels", help="CSV or JSONL with item and label (the better answer's identity, or tie); a pairs file "
                         "with labels works too. Without it the records' label field is used.")] = None,
    judge: JudgeOpt = None,
    allow_unpaired: AllowUnpairedOpt = False,
    confidence: ConfidenceOpt = 0.95,
    output: FormatOpt = OutputFormat.text,
) -> None:
    """Agreement with human or gold labels next to swap-consistency: accuracy in each order, in both orders and
    among consistent pairs; Cohen's kappa against the labels and between the two orders."""
    from swapjudge.core.records import load_records
    from swapjudge.core.sidefiles import load_labels, with_labels
    from swapjudge.probes.agreement import agreement as run_agreement
    from swapjudge.report import probe_tables

    loaded = load_records(records, allow_unpaired=allow_unpaired, extras=False)
    frame = with_labels(loaded.frame, load_labels(labels)) if labels is not None else loaded.frame
    results = run_agreement(frame, judge=judge, confidence=confidence)
    payload = [r.to_dict() for r in results]
    _emit(output, payload[0] if len(payload) == 1 else {"judges": payload}, probe_tables.agreement_tables(results))


def _write_jsonl_atomic(path: Path, rows: list[dict[str, object]]) -> None:
    """The whole file or nothing (the review module's atomic writer)."""
    from swapjudge.core.textfiles import write_atomic

    write_atomic(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


@app.command("panel")
@user_errors
def panel_command(
    records: RecordsArg,
    judge: Annotated[list[str] | None, typer.Option(
        "--judge", help="A judge of the panel (repeat; default: every judge in the file).")] = None,
    family: Annotated[list[str] | None, typer.Option(
        "--family", help="Model family by name prefix, e.g. gpt=gpt-4,gpt-3.5 (repeat). Default: a name's first "
                         "word without version digits.")] = None,
    labels: Annotated[Path | None, typer.Option("--labels", help="CSV or JSONL with item and label.")] = None,
    disagreements: Annotated[Path | None, typer.Option(
        "--disagreements", help="Write the pairs the judges disagree on to this JSONL file for review.")] = None,
    allow_unpaired: AllowUnpairedOpt = False,
    confidence: ConfidenceOpt = 0.95,
    min_consistency: Annotated[float, typer.Option(
        "--min-consistency", help="Gate: a judge below this swap-consistency gets no self-preference score.")]
    = DEFAULT_MIN_CONSISTENCY,
    output: FormatOpt = OutputFormat.text,
) -> None:
    """Several judges over the same pairs: each judge's consistency, flip direction and accuracy side by side;
    the panel's disagreement rate and majority verdict; self-preference warnings."""
    from swapjudge.core.records import load_records
    from swapjudge.core.sidefiles import load_labels, with_labels
    from swapjudge.probes.panel import panel as run_panel
    from swapjudge.probes.panel import parse_families
    from swapjudge.report import probe_tables

    loaded = load_records(records, allow_unpaired=allow_unpaired, extras=False)
    frame = with_labels(loaded.frame, load_labels(labels)) if labels is not None else loaded.frame
    result = run_panel(frame, judges=judge or None, families=parse_families(family or []), confidence=confidence,
                       min_consistency=min_consistency)
    if disagreements is not None:
        _write_jsonl_atomic(disagreements, result.review_rows())
    _emit(output, result.to_dict(), probe_tables.panel_tables(result))
    if disagreements is not None and output is not OutputFormat.json:
        stderr.print(f"wrote {result.disagreements.height:,} disagreeing pairs to {disagreements}", highlight=False)


@app.command("variants")
@user_errors
def variants_command(
    records: Annotated[list[Path], typer.Argument(
        help="One records file holding both variants, or two files (one variant each, named by file name).",
        show_default=False)],
    judge: Annotated[list[str] | None, typer.Option(
        "--judge", help="Twice: the two judge configurations to compare. Once with --round: the judge whose "
                        "rounds are compared.")] = None,
    round_: Annotated[list[int] | None, typer.Option(
        "--round", help="Twice: compare two runs (rounds) of one judge in one file.")] = None,
    allow_unpaired: AllowUnpairedOpt = False,
    confidence: ConfidenceOpt = 0.95,
    output: FormatOpt = OutputFormat.text,
) -> None:
    """The same pairs under two judge prompts: consistency, flip direction and accuracy side by side, and
    McNemar's exact test on per-pair consistency."""
    import polars as pl

    from swapjudge.core.records import load_records
    from swapjudge.probes.variants import compare_variants
    from swapjudge.report import probe_tables

    judges, rounds = judge or [], round_ or []
    if len(records) == 2:
        frames = []
        names = [p.stem if records[0].stem != records[1].stem else f"{i + 1}:{p.stem}" for i, p in enumerate(records)]
        for path, name in zip(records, names, strict=True):
            frame = load_records(path, allow_unpaired=allow_unpaired, extras=False).frame
            if judges:
                frame = frame.filter(pl.col("judge").is_in(judges))
            if frame.get_column("judge").n_unique() != 1:
                raise InputError("holds several judges (or none of those named): pass --judge to pick one per file",
                                 path=str(path))
            frames.append(frame.with_columns(pl.lit(name).alias("judge")))
        result = compare_variants(pl.concat(frames), names[0], names[1], field="judge", confidence=confidence)
    elif len(records) == 1:
        frame = load_records(records[0], allow_unpaired=allow_unpaired, extras=False).frame
        if len(rounds) == 2:
            if len(judges) > 1:
                raise SwapjudgeError("with --round twice, give at most one --judge")
            if judges:
                frame = frame.filter(pl.col("judge") == judges[0])
            result = compare_variants(frame, str(rounds[0]), str(rounds[1]), field="round", confidence=confidence)
        elif len(judges) == 2 and not rounds:
            result = compare_variants(frame, judges[0], judges[1], field="judge", confidence=confidence)
        else:
            raise SwapjudgeError("name the two variants: --judge A --judge B, or --round R1 --round R2")
    else:
        raise SwapjudgeError("give one records file with both variants, or two files")
    _emit(output, result.to_dict(), probe_tables.variants_tables(result))


@probe_app.command("identical")
@user_errors
def probe_identical(
    config: Annotated[Path, typer.Argument(help="Run configuration (YAML) naming the judge and the pairs.",
                                           show_default=False)],
    sample: Annotated[int | None, typer.Option(
        "--sample", help="Judge a seeded sample of this many answers (default: every answer of every configured "
                         "system).", min=1)] = None,
    seed: Annotated[str, typer.Option("--seed", help="Seed of the sample.")] = "",
    out: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write the probe calls as presentation records (first == second) to this JSONL "
                               "file; `swapjudge analyze` reports them under identical.")] = None,
    output: FormatOpt = OutputFormat.text,
) -> None:
    """Identical-answer probe, live: each sampled answer against itself (same text in both slots) through the
    configured judge. The decided rate is the share of calls that named a winner between byte-identical texts;
    the first-slot share of those shows which way the judge leans."""
    from swapjudge.config import load_config
    from swapjudge.probes.identical_live import run_identical
    from swapjudge.report import probe_tables

    result = run_identical(load_config(config), sample=sample, seed=seed)
    if out is not None:
        _write_jsonl_atomic(out, list(result.records))
    _emit(output, result.to_dict(), probe_tables.identical_tables(result))
