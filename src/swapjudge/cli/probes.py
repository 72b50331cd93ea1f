"""`swapjudge segments`, `probe length|repeat`, `agreement`, `panel`, `variants`: analyses of records that look
past the swap. Thin: load, call the library, render."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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
    flag_group,
    stderr,
    stdout,
    user_errors,
)
from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, LengthUnit, ReadEngine, SplitHandling, TiePolicy

if TYPE_CHECKING:
    from swapjudge.report.probe_tables import Table

probe_app = typer.Typer(help="Probes for what swapping cannot see: answer length, repeat stability.",
                        no_args_is_help=True)
app.add_typer(probe_app, name="probe")



def _emit(output: OutputFormat, payload: object, tables: list[Table]) -> None:
    from swapjudge.report import probe_tables

    if output is OutputFormat.json:
        dump_json(payload)
    elif output is OutputFormat.markdown:
        print(probe_tables.to_markdown(tables), end="")
    else:
        probe_tables.print_tables(stdout, tables)


@app.command("segments")
@user_errors
def segments_command(
    records: RecordsArg,
    by: Annotated[str, typer.Option("--by", help="Record field to break the analysis down by (e.g. task); it "
                                                 "must be the same on both calls of a pair.")],
    judge: Annotated[str | None, typer.Option("--judge", help="Analyse this judge only.")] = None,
    a: SystemAOpt = None,
    b: SystemBOpt = None,
    tie_policy: Annotated[TiePolicy, typer.Option("--tie-policy", help="What a split pair is worth.")]
    = TiePolicy.half_credit,
    min_consistency: Annotated[float, typer.Option(
        "--min-consistency", help="Gate, applied to the whole file (exit 1) and shown per segment.")]
    = DEFAULT_MIN_CONSISTENCY,
    allow_unpaired: AllowUnpairedOpt = False,
    confidence: ConfidenceOpt = 0.95,
    output: FormatOpt = OutputFormat.text,
    engine: EngineOpt = ReadEngine.auto,
) -> None:
    """The analysis broken down by a record field: swap-consistency, flip direction and win rate per segment,
    with intervals. Position preference concentrates on close, hard items; one overall figure can hide it."""
    from swapjudge.report import probe_tables
    from swapjudge.workflows.probe import segments

    result = segments(records, by, judge=judge, a=a, b=b, tie_policy=tie_policy,
                             min_consistency=min_consistency, confidence=confidence, allow_unpaired=allow_unpaired,
                             engine=engine.value)
    _emit(output, result.to_dict(), probe_tables.segments_tables(result))
    conclude(result)


@dataclass(frozen=True)
class AlpacaFlags:
    """`probe length`'s AlpacaEval options: its two side files, their weight and its own estimator."""

    difficulty: Annotated[Path | None, typer.Option(
        "--difficulty", help="With --length-controlled: AlpacaEval's per-instruction difficulty term, from its "
                             "instruction_difficulty.csv (first column the instruction index, then "
                             "instruction_difficulty). Rows are matched by the records' instruction_index field "
                             "(written by `import alpaca-eval`), else by item. Single-order records are fitted "
                             "call by call, with AlpacaEval's own preference where the records carry it.")] = None
    gamed_baseline: Annotated[Path | None, typer.Option(
        "--gamed-baseline", help="With --length-controlled: AlpacaEval's df_gamed.csv, the annotations of "
                                 "length-gamed versions of the baseline --b against it, added to the fit to "
                                 "regularise the length and difficulty terms toward the baseline's.")] = None
    regularize: Annotated[float | None, typer.Option(
        "--regularize", help="Total weight of the gamed baseline rows per instruction (AlpacaEval's lambda; "
                             "default 0.2), shared equally by the gamed versions.")] = None
    alpaca_cv: Annotated[bool, typer.Option(
        "--alpaca-cv", help="With --difficulty or --gamed-baseline: also AlpacaEval's own estimate (an L1 "
                            "penalty chosen by 5-fold cross-validation, its folds dealt as in AlpacaEval's "
                            "published runs, so it reproduces its leaderboards; needs scikit-learn), beside the "
                            "maximum-likelihood fit that carries the interval.")] = False


@probe_app.command("length")
@user_errors
@flag_group(AlpacaFlags, as_="alpaca")
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
    alpaca: AlpacaFlags = AlpacaFlags(),
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
    from swapjudge.probes.length import LengthOptions
    from swapjudge.report import probe_tables
    from swapjudge.workflows.probe import AlpacaSideFiles, length, length_ending

    options = LengthOptions(unit=unit, splits=splits, threshold=threshold, tolerance=tolerance, per=per,
                            length_controlled=length_controlled, tie_policy=tie_policy, confidence=confidence,
                            min_consistency=min_consistency, regularize=alpaca.regularize,
                            alpaca_cv=alpaca.alpaca_cv)
    results = length(records, pairs=pairs, judge=judge, a=a, b=b, options=options,
                     alpaca=AlpacaSideFiles(alpaca.difficulty, alpaca.gamed_baseline), allow_unpaired=allow_unpaired)
    payload = [r.to_dict() for r in results]
    _emit(output, payload[0] if len(payload) == 1 else {"judges": payload}, probe_tables.length_tables(results))
    conclude(length_ending(results, pair_given=a is not None and b is not None))


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
    from swapjudge.report import probe_tables
    from swapjudge.workflows.probe import repeat

    results = repeat(records, judge=judge, seed=seed, confidence=confidence, allow_unpaired=allow_unpaired)
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
    engine: EngineOpt = ReadEngine.auto,
) -> None:
    """Agreement with human or gold labels next to swap-consistency: accuracy in each order, in both orders and
    among consistent pairs; Cohen's kappa against the labels and between the two orders."""
    from swapjudge.report import probe_tables
    from swapjudge.workflows.probe import agreement

    results = agreement(records, labels=labels, judge=judge, confidence=confidence, allow_unpaired=allow_unpaired,
                        engine=engine.value)
    payload = [r.to_dict() for r in results]
    _emit(output, payload[0] if len(payload) == 1 else {"judges": payload}, probe_tables.agreement_tables(results))


def _write_jsonl_atomic(path: Path, rows: list[dict[str, object]]) -> None:
    """The whole file or nothing (the review module's atomic writer)."""
    from swapjudge.reading.textfiles import write_atomic

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
    from swapjudge.report import probe_tables
    from swapjudge.workflows.probe import panel

    result = panel(records, judges=judge or (), families=family or (), labels=labels, confidence=confidence,
                   min_consistency=min_consistency, allow_unpaired=allow_unpaired)
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
    from swapjudge.report import probe_tables
    from swapjudge.workflows.probe import variants

    result = variants(records, judges=judge or (), rounds=round_ or (), confidence=confidence,
                      allow_unpaired=allow_unpaired)
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
    from swapjudge.report import probe_tables
    from swapjudge.workflows.probe import identical

    result = identical(config, sample=sample, seed=seed)
    if out is not None:
        _write_jsonl_atomic(out, list(result.records))
    _emit(output, result.to_dict(), probe_tables.identical_tables(result))


@probe_app.command("attack")
@user_errors
def probe_attack(
    config: Annotated[Path, typer.Argument(help="Run configuration (YAML) naming the judge and the pairs.",
                                           show_default=False)],
    pairs: Annotated[Path | None, typer.Option(
        "--pairs", help="Pairs file to sample (default: the configuration's pairs).")] = None,
    attacks: Annotated[str | None, typer.Option(
        "--attacks", help="Attacks, comma-separated (default: all): null, structured-null, master-key, "
                          "planted-verdict, reflection, authority, bandwagon.")] = None,
    n: Annotated[int, typer.Option("--n", help="Pairs in the seeded sample.", min=1)] = 50,
    seed: Annotated[str, typer.Option("--seed", help="Seed of the sample.")] = "",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only count the calls and estimate their cost.")]
    = False,
    suite: Annotated[str | None, typer.Option(
        "--suite", help="Sample a judge card's suite instead of the configuration's pairs: default (about 600 "
                        "LLMBar pairs), quick (32), or a pairs file; the configuration may leave `pairs` out, as "
                        "a card's does.")] = None,
    store: Annotated[Path | None, typer.Option(
        "--store", help="Run store whose reply cache serves every prompt it holds (a run's calls included) and "
                        "keeps each reply got: a probe stopped resumes where it stopped, and no prompt is paid "
                        "twice (default: none; with --suite, the configuration's `store`).")] = None,
    progress: Annotated[bool, typer.Option(
        "--progress", help="Print a line to stderr for each call made (and how long it took).")] = False,
    cached_only: Annotated[bool, typer.Option(
        "--cached-only", help="Call nothing: read the --store's cache only; a pair with a call not in it yet is "
                              "left out as incomplete (what a probe still running has got so far).")] = False,
    output: FormatOpt = OutputFormat.text,
) -> None:
    """Attack probe, live: answers built to fool the judge in both orders. On a seeded sample of pairs the first
    configured system's answer is replaced or altered by each attack and judged against the other answer in both
    orders; per attack its win rate in each order, the order-cancelled win rate, and the share of pairs it wins in
    both orders (Wilson interval over pairs), tested against a placebo: the unaltered answer judged again."""
    from swapjudge.report.attack_tables import attack_tables
    from swapjudge.workflows.attack import attack

    names = None if attacks is None else [a.strip() for a in attacks.split(",") if a.strip()]
    say = (lambda line: stderr.print(line, highlight=False, markup=False)) if progress else None
    result = attack(config, pairs=pairs, attacks=names, n=n, seed=seed, dry_run=dry_run, suite=suite, store=store,
                    progress=say, cached_only=cached_only)
    _emit(output, result.to_dict(), attack_tables(result))
