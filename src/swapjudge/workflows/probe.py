"""`segments`, `probe length|repeat|identical`, `agreement`, `panel` and `variants`: what the swap cannot see,
each from its inputs (records, labels, answer texts, AlpacaEval's side files) to its result objects, one
result per judge where the probe is per judge."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, ReadEngine, TiePolicy
from swapjudge.errors import ArgumentError, InputError, SwapjudgeError
from swapjudge.outcome import Ending, gates_ending
from swapjudge.reading.records import read_records

if TYPE_CHECKING:
    import polars as pl

    from swapjudge.core.identical import IdenticalRun
    from swapjudge.probes.agreement import JudgeAgreement
    from swapjudge.probes.length import LengthOptions, LengthProbe
    from swapjudge.probes.panel import PanelResult
    from swapjudge.probes.repeat import RepeatStability
    from swapjudge.probes.segments import SegmentedAnalysis
    from swapjudge.probes.variants import VariantComparison


def segments(source: str | Path | Any, by: str, *, judge: str | None = None, a: str | None = None,
             b: str | None = None, tie_policy: TiePolicy | str = TiePolicy.half_credit,
             min_consistency: float = DEFAULT_MIN_CONSISTENCY, confidence: float = 0.95,
             allow_unpaired: bool = False, engine: ReadEngine | str = ReadEngine.auto) -> SegmentedAnalysis:
    """The analysis broken down by a record field; the whole file's gate decides (`raise_for_gate`). `engine`:
    "auto" reduces Parquet and large JSON Lines files to counts per segment when DuckDB is installed (the `scale`
    extra), "streaming" always does, "memory" reads the records whole; the figures are the same."""
    from swapjudge.core import arguments
    from swapjudge.core.analysis import analyze_source
    from swapjudge.probes.segments import NOT_SEGMENTS, refuse_field, segment_analyses, segment_analyses_of_source
    from swapjudge.reading.streaming import open_source, record_fields
    from swapjudge.workflows.engine import streams

    read = arguments.choice(engine, "engine", ReadEngine)
    if streams(source, read):
        fields = record_fields(source) if Path(source).exists() else []
        usable = by in fields and by not in NOT_SEGMENTS
        with open_source(source, allow_unpaired=allow_unpaired, segment=by if usable else None,
                         split=False) as reduced:
            if not usable:
                # as the rows path: the file's checks, then the whole file's analysis, then the field
                analyze_source(reduced, judge=judge, a=a, b=b, tie_policy=tie_policy,
                               min_consistency=min_consistency, confidence=confidence)
                refuse_field(fields, by)
            return segment_analyses_of_source(reduced, by, judge=judge, a=a, b=b, tie_policy=tie_policy,
                                              min_consistency=min_consistency, confidence=confidence)
    loaded = read_records(source, allow_unpaired=allow_unpaired)
    return segment_analyses(loaded, by, judge=judge, a=a, b=b, tie_policy=tie_policy,
                            min_consistency=min_consistency, confidence=confidence)


@dataclass(frozen=True)
class AlpacaSideFiles:
    """AlpacaEval 2's two side files of its length-controlled fit: per-instruction difficulty and the gamed
    baseline annotations (either may be absent)."""

    difficulty: Path | None = None
    gamed_baseline: Path | None = None

    @property
    def given(self) -> bool:
        return self.difficulty is not None or self.gamed_baseline is not None


def length(source: str | Path | Any, *, pairs: str | Path | None = None, judge: str | None = None,
           a: str | None = None, b: str | None = None, options: LengthOptions | None = None,
           alpaca: AlpacaSideFiles = AlpacaSideFiles(), allow_unpaired: bool = False) -> list[LengthProbe]:
    """Does the judge prefer longer answers? One length probe per judge (Holm-adjusted across judges), over the
    pairs whose two answer texts are known: from `pairs` (a pairs file), else the records' own text fields."""
    import polars as pl

    from swapjudge.probes.alpaca_files import load_gamed_baseline, load_instruction_difficulty
    from swapjudge.probes.alpaca_lc import INSTRUCTION_INDEX, PREFERENCE, rows_for_pair
    from swapjudge.probes.length import LengthOptions, length_probe, length_with_holm, lengths_for_pairs
    from swapjudge.reading.pairs import build_pairs
    from swapjudge.reading.records import select_judges
    from swapjudge.reading.sidefiles import load_answer_texts, texts_from_records

    opts = options or LengthOptions()
    if (alpaca.given or opts.regularize is not None) and not opts.length_controlled:
        raise ArgumentError("{difficulty}, {gamed_baseline} and {regularize} need {length_controlled}",
                            "difficulty", "gamed_baseline", "regularize", "length_controlled")
    if opts.regularize is not None and (alpaca.gamed_baseline is None or opts.regularize <= 0):
        raise ArgumentError("{regularize} needs {gamed_baseline} and a value above 0", "regularize",
                            "gamed_baseline")
    if opts.alpaca_cv and not alpaca.given:
        raise ArgumentError("{alpaca_cv} needs {difficulty} or {gamed_baseline}", "alpaca_cv", "difficulty",
                            "gamed_baseline")
    # the records' own text fields (and AlpacaEval's preference and instruction_index) are extras
    loaded = read_records(source, allow_unpaired=allow_unpaired, extras=pairs is None or alpaca.given)
    texts = load_answer_texts(pairs) if pairs is not None else texts_from_records(loaded.frame)
    if not texts:
        raise ArgumentError("no answer texts: pass {pairs} FILE, or give the records first_text/second_text",
                            "pairs")
    if min(opts.threshold, opts.tolerance) < 0 or opts.per <= 0:
        raise ArgumentError("{threshold} and {tolerance} must be >= 0 and {per} > 0", "threshold", "tolerance",
                            "per")
    if opts.length_controlled and (a is None or b is None):
        raise ArgumentError("{length_controlled} needs {a} and {b}", "length_controlled", "a", "b")
    difficulties = (load_instruction_difficulty(alpaca.difficulty) if alpaca.difficulty is not None else None)
    gamed = (load_gamed_baseline(alpaca.gamed_baseline, difficulties) if alpaca.gamed_baseline is not None
             else None)
    all_pairs = (build_pairs(loaded.frame, keep=(PREFERENCE, INSTRUCTION_INDEX)) if alpaca.given
                 else loaded.pairs or build_pairs(loaded.frame))
    pair = (a, b) if a is not None and b is not None else None
    results = []
    for name in select_judges(loaded.frame, judge):
        f = all_pairs.frame.filter(pl.col("judge") == name)
        items, x, y = (f.get_column(c).to_numpy() for c in ("item", "x", "y"))
        lx, ly, found = lengths_for_pairs(items, x, y, texts, opts.unit)
        if not found.any():
            raise InputError(f"no pair of judge {name or '-'!r} has both answer texts (items and system names "
                             "must match the records)", path=str(pairs) if pairs else None)
        rows = (rows_for_pair(f.filter(pl.Series(found)), pair[0], pair[1], lx[found], ly[found], difficulties,
                              str(alpaca.difficulty or ""), loaded.source) if alpaca.given and pair else None)
        results.append(length_probe(
            f.get_column("outcome").to_numpy()[found], lx[found], ly[found], opts, judge=name or None,
            x=x[found], y=y[found], pair=pair, missing_texts=int((~found).sum()), items=items[found],
            alpaca=rows, gamed=gamed))
    return length_with_holm(results)


def length_ending(results: Sequence[LengthProbe], pair_given: bool) -> Ending:
    """Failed (exit 1 at the CLI) when the win rates asked for (a pair's `a`, `b`) were withheld by the gate, as
    `analyze` withholds them; ok otherwise."""
    return gates_ending((r.judge, r.gate) for r in results) if pair_given else Ending()


def repeat(source: str | Path | Any, *, judge: str | None = None, seed: int = 0, confidence: float = 0.95,
           allow_unpaired: bool = False) -> list[RepeatStability]:
    """Repeat stability per judge: the judge against itself when the same call is repeated across rounds."""
    import polars as pl

    from swapjudge.probes.repeat import repeat_stability
    from swapjudge.reading.records import select_judges

    loaded = read_records(source, allow_unpaired=allow_unpaired, extras=False)
    results = []
    for name in select_judges(loaded.frame, judge):
        r = repeat_stability(loaded.frame.filter(pl.col("judge") == name), judge=name or None,
                             confidence=confidence, seed=seed)
        if r is None:
            raise SwapjudgeError(f"judge {name or '-'!r} has one round only: repeat stability needs records "
                                 "repeated with different `round` values")
        results.append(r)
    return results


def _labelled(source: str | Path | Any, labels: str | Path | None, allow_unpaired: bool) -> pl.DataFrame:
    """The records' frame, its labels taken from a labels file when one is given."""
    from swapjudge.reading.sidefiles import load_labels, with_labels

    loaded = read_records(source, allow_unpaired=allow_unpaired, extras=False)
    return with_labels(loaded.frame, load_labels(labels)) if labels is not None else loaded.frame


def agreement(source: str | Path | Any, *, labels: str | Path | None = None, judge: str | None = None,
              confidence: float = 0.95, allow_unpaired: bool = False,
              engine: ReadEngine | str = ReadEngine.auto) -> list[JudgeAgreement]:
    """Agreement with human or gold labels next to swap-consistency, one result per judge. `engine`: "auto"
    reduces Parquet and large JSON Lines files whose records carry their labels to counts when DuckDB is
    installed, "streaming" always does (a separate `labels` file is joined in memory only), "memory" reads the
    records whole; the figures are the same."""
    from swapjudge.probes.agreement import agreement_of_counts, agreement_of_records
    from swapjudge.reading.records import choose_judges
    from swapjudge.reading.streaming import open_source
    from swapjudge.workflows.engine import RowsNeeded, streams

    joined = RowsNeeded("{labels} files are joined to the records in memory, not by the streaming engine: "
                        "{engine} memory (or auto), or labels in the records' `label` field", ("labels", "engine"))
    if streams(source, engine, needs_rows=joined if labels is not None else None):
        with open_source(source, allow_unpaired=allow_unpaired, split=False) as reduced:
            return [agreement_of_counts(reduced.pair_verdicts(name, reduced.systems(name)), reduced.counts(name),
                                        judge=name or None, confidence=confidence)
                    for name in choose_judges(reduced.judges(), judge)]

    return agreement_of_records(_labelled(source, labels, allow_unpaired), judge=judge, confidence=confidence)


def panel(source: str | Path | Any, *, judges: Sequence[str] = (), families: Sequence[str] = (),
          labels: str | Path | None = None, confidence: float = 0.95,
          min_consistency: float = DEFAULT_MIN_CONSISTENCY, allow_unpaired: bool = False) -> PanelResult:
    """Several judges over the same pairs (`families`: `gpt=gpt-4,gpt-3.5` specs of model families)."""
    from swapjudge.probes.panel import panel_of_records, parse_families

    return panel_of_records(_labelled(source, labels, allow_unpaired), judges=list(judges) or None,
                       families=parse_families(list(families)), confidence=confidence,
                       min_consistency=min_consistency)


def variants(sources: Sequence[str | Path], *, judges: Sequence[str] = (), rounds: Sequence[int] = (),
             confidence: float = 0.95, allow_unpaired: bool = False) -> VariantComparison:
    """The same pairs under two judge prompts: one file holding both variants (two judges, or two rounds of one
    judge), or two files of one variant each (named by file name)."""
    import polars as pl

    from swapjudge.probes.variants import compare_variants

    if len(sources) == 2:
        paths = [Path(p) for p in sources]
        frames = []
        names = [p.stem if paths[0].stem != paths[1].stem else f"{i + 1}:{p.stem}" for i, p in enumerate(paths)]
        for path, name in zip(paths, names, strict=True):
            frame = read_records(path, allow_unpaired=allow_unpaired, extras=False).frame
            if judges:
                frame = frame.filter(pl.col("judge").is_in(list(judges)))
            if frame.get_column("judge").n_unique() != 1:
                raise InputError("holds several judges (or none of those named): pass {judge} to pick one per file",
                                 path=str(path), arguments=("judge",))
            frames.append(frame.with_columns(pl.lit(name).alias("judge")))
        return compare_variants(pl.concat(frames), names[0], names[1], field="judge", confidence=confidence)
    if len(sources) != 1:
        raise SwapjudgeError("give one records file with both variants, or two files")
    frame = read_records(sources[0], allow_unpaired=allow_unpaired, extras=False).frame
    if len(rounds) == 2:
        if len(judges) > 1:
            raise ArgumentError("with {round} twice, give at most one {judge}", "round", "judge")
        if judges:
            frame = frame.filter(pl.col("judge") == judges[0])
        return compare_variants(frame, str(rounds[0]), str(rounds[1]), field="round", confidence=confidence)
    if len(judges) == 2 and not rounds:
        return compare_variants(frame, judges[0], judges[1], field="judge", confidence=confidence)
    raise ArgumentError("name the two variants: {judge} A {judge} B, or {round} R1 {round} R2", "judge", "round")


def identical(config: str | Path | Any, *, sample: int | None = None, seed: str = "") -> IdenticalRun:
    """The identical-answer probe, live: each sampled answer against itself through the configured judge."""
    from swapjudge.runner.identical_probe import run_identical
    from swapjudge.workflows.run import load_run_config

    return run_identical(load_run_config(config), sample=sample, seed=seed)

