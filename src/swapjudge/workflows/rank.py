"""`swapjudge rank` and `swapjudge.rank`: choose the judge, gate it as `analyze` does (a ranking is many win
rates at once), build the comparisons, and fit the tie-aware Bradley-Terry model with item-bootstrap intervals;
or, with an order effect or style covariates, fit single calls with a first-slot term.

A Parquet file, or a JSON Lines file too large to read at ease, is reduced by the streaming engine
(`reading.streaming`, DuckDB) to the judge's pairs counted by item, system pair and verdicts, and ranked from those
counts (`ranking.counted_battles`): the same figures as records read whole. Graded verdicts and the single-call
fits (an order effect, style covariates) need the rows: `auto` reads those in memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swapjudge.core import arguments
from swapjudge.core.choices import (
    DEFAULT_MIN_CONSISTENCY,
    DEFAULT_ROUNDS,
    IntervalMethod,
    Model,
    OutcomeSource,
    ReadEngine,
)
from swapjudge.core.display import Displayable
from swapjudge.errors import ArgumentError, InputError
from swapjudge.outcome import Concluded, Ending
from swapjudge.reading.listwise import is_listwise
from swapjudge.reading.records import read_records

if TYPE_CHECKING:
    from swapjudge.ranking.bradley_terry import Ranking
    from swapjudge.ranking.fragility import RankFragility
    from swapjudge.ranking.gate import RankGate
    from swapjudge.ranking.order_effect import AdjustedRanking


@dataclass(frozen=True)
class JudgeRanking(Displayable, Concluded):
    """One judge's ranking, the gate it passed and what a battle was. `adjusted` is the single-call fit with a
    first-slot term and style covariates, when asked for (its `ranking` is then the adjusted one).

    A judge the gate blocks gets no ranking: `ranking` is None (nothing is fitted), `ending()` fails with the
    reason, and `raise_for_gate()` raises it as `GateError`, as every result with a gate does."""

    judge: str
    outcome: str
    gate: RankGate
    ranking: Ranking | None
    adjusted: AdjustedRanking | None = None
    fragility: RankFragility | None = None  # how few items stand between the top system and another

    @property
    def withheld(self) -> bool:
        """True when the gate withheld the ranking."""
        return self.ranking is None

    @property
    def rows(self) -> tuple[Any, ...]:
        """The ranked systems, best first (none when withheld)."""
        return () if self.ranking is None else self.ranking.rows

    def to_frame(self, backend: str = "polars") -> Any:
        """One row per system (`Ranking.to_frame`); an empty frame when the ranking was withheld."""
        from swapjudge.core.documents import frame

        return frame([], backend) if self.ranking is None else self.ranking.to_frame(backend)

    def ending(self) -> Ending:
        """Failed (exit 1 at the CLI) when the ranking was withheld by the gate; ok otherwise."""
        return self.gate.ending(self.judge) if self.ranking is None else Ending()

    def to_dict(self) -> dict[str, Any]:
        """`swapjudge rank --format json` (a withheld ranking: the gate and `withheld`, no `systems`)."""
        if self.ranking is None:
            return {"judge": self.judge, "outcome": self.outcome, **self.gate.to_dict(),
                    "withheld": self.ending().error().template}
        fitted = self.adjusted.to_dict() if self.adjusted is not None else self.ranking.to_dict()
        extra = {} if self.fragility is None else {"fragility": self.fragility.to_dict()}
        return {"judge": self.judge, "outcome": self.outcome, **self.gate.to_dict(), **fitted, **extra}


def rank_judge(source: str | Path | Any, *, judge: str | None = None, model: Model | str = Model.rao_kupper,
               outcome: OutcomeSource | str = OutcomeSource.swap, bootstrap: int = DEFAULT_ROUNDS, seed: int = 0,
               confidence: float = 0.95, interval: IntervalMethod | str = IntervalMethod.percentile,
               min_consistency: float = DEFAULT_MIN_CONSISTENCY, order_effect: bool = False,
               control: Sequence[str] = (), pairs: str | Path | None = None,
               engine: ReadEngine | str = ReadEngine.auto, fragility: bool = False,
               top_k: int = 1) -> JudgeRanking:
    """Rank systems by a tie-aware Bradley-Terry fit with bootstrap intervals over items (`swapjudge rank`).

    A judge below `min_consistency` (over all its complete pairs) gets no ranking: the result comes back withheld
    (`ranking` None, nothing fitted) and its `raise_for_gate()` raises `GateError`, as `analyze`'s does. With
    `order_effect` (a first-slot term fitted with the strengths, the honest choice for single-order data) or
    `control` (style covariates such as `length`, `markdown`) the fit is on single calls. `outcome="graded"`
    (graded verdicts) counts each graded pair's order-averaged graded score s as s of a win and 1 - s of a
    loss and fits plain Bradley-Terry on those weighted outcomes (`model` is not used). `engine`: "auto" reduces
    Parquet and large JSON Lines files to counts when DuckDB is installed (the `scale` extra) and ranks from them,
    "streaming" always does (it refuses graded verdicts and the single-call fits, which need the rows), "memory"
    reads the records whole. `fragility`: also find the fewest items whose removal (or whose comparisons of the
    top system, turned into its losses) put another system on top (`JudgeRanking.fragility`; the records are
    then read whole); with `top_k` K > 1, the fewest that change the order of the top K systems. Listwise
    (best-of-N) records are ranked by the Plackett-Luce fit with slot effects (`workflows.listwise.rank_listwise`, a
    `ListwiseRanking`)."""
    from swapjudge.ranking.battles import choose_judge, comparisons_from_records
    from swapjudge.ranking.bradley_terry import fit_ranking
    from swapjudge.ranking.gate import rank_gate

    source = arguments.records_source(source, "source")
    judge = arguments.text(judge, "judge", what="a judge's name (a string)")
    model = arguments.choice(model, "model", Model)
    source_kind = arguments.choice(outcome, "outcome", OutcomeSource)
    bootstrap = arguments.integer(bootstrap, "bootstrap", minimum=0)
    seed = arguments.integer(seed, "seed", minimum=0)
    confidence = arguments.confidence(confidence)
    interval = arguments.choice(interval, "interval", IntervalMethod)
    min_consistency = arguments.share(min_consistency, "min_consistency")
    order_effect = arguments.flag(order_effect, "order_effect")
    controls = list(arguments.names(control, "control"))
    pairs = arguments.path(pairs, "pairs", what="a pairs file's path")
    if len(set(controls)) != len(controls):
        raise ArgumentError("{control} names a covariate twice", "control")
    read = arguments.choice(engine, "engine", ReadEngine)
    fragility = arguments.flag(fragility, "fragility")
    top_k = arguments.integer(top_k, "top_k", minimum=1)
    if top_k > 1 and not fragility:
        raise ArgumentError("{top_k} is the order {fragility} searches: give it with {fragility}", "top_k",
                            "fragility")
    from swapjudge.workflows.listwise import stored_listwise

    stored = stored_listwise(source)  # a run store whose latest run is a listwise run: its records
    if stored is not None:
        source = stored
    if is_listwise(source):  # best-of-N records: the Plackett-Luce fit with slot effects
        from swapjudge.workflows.listwise import rank_listwise

        if order_effect or controls or source_kind is not OutcomeSource.swap or fragility:
            raise ArgumentError("listwise records are ranked by the Plackett-Luce fit with slot effects: "
                                "{order_effect}, {control}, {outcome} and {fragility} do not apply",
                                "order_effect", "control", "outcome", "fragility")
        return rank_listwise(source, judge=judge, bootstrap=bootstrap, seed=seed,  # type: ignore[return-value]
                             confidence=confidence, min_consistency=min_consistency)
    adjusted = order_effect or bool(controls)
    if fragility and (adjusted or source_kind is OutcomeSource.graded or read is ReadEngine.streaming):
        raise ArgumentError("{fragility} refits the plain ranking from records read whole: not with "
                            "{order_effect}, {control}, {outcome} graded or {engine} streaming",
                            "fragility", "order_effect", "control", "outcome", "engine")
    if fragility:
        read = ReadEngine.memory
    if adjusted and source_kind is OutcomeSource.graded:
        raise ArgumentError("{outcome} graded ranks graded pairs; {order_effect} and {control} fit single calls",
                            "outcome", "order_effect", "control")
    if _streams(source, read, adjusted, source_kind):
        return _rank_counted(source, judge, Model(model), source_kind, bootstrap, seed, confidence,
                             IntervalMethod(interval), min_consistency)
    loaded = read_records(source, allow_unpaired=adjusted or source_kind is OutcomeSource.calls)
    name = judge if judge is not None else (loaded.judges[0] if loaded.judges else "")
    checked = rank_gate(choose_judge(loaded.frame, judge, loaded.source), min_consistency, confidence)
    if adjusted:
        return _rank_calls(loaded, name, judge, order_effect, controls, pairs, bootstrap, seed, confidence,
                           checked)
    if checked.blocks:
        return JudgeRanking(name, source_kind.value, checked, None)
    data = comparisons_from_records(loaded, judge=judge, outcome=source_kind)
    if len(data.systems) < 2:
        raise InputError("fewer than two systems to rank", path=loaded.source)
    # a graded pair is a weighted win, never a tie: the plain Bradley-Terry (the tie models would reduce to it)
    fitted_model = Model.bt_half if source_kind is OutcomeSource.graded else model
    result = fit_ranking(data, fitted_model, rounds=bootstrap, seed=seed, confidence=confidence, interval=interval)
    if fragility:
        from swapjudge.ranking.fragility import top_fragility

        if top_k > len(data.systems):
            raise ArgumentError(f"{{top_k}} is {top_k}, more than the {len(data.systems)} systems ranked", "top_k")
        names = _item_names(loaded, judge, source_kind)
        return JudgeRanking(name, source_kind.value, checked, result,
                            fragility=top_fragility(data, fitted_model, item_names=names, top_k=top_k))
    return JudgeRanking(name, source_kind.value, checked, result)


def _item_names(loaded: Any, judge: str | None, outcome: OutcomeSource) -> list[str]:
    """The item ids in the order `Comparisons.from_labels` numbers them (sorted as text)."""
    import numpy as np
    import polars as pl

    from swapjudge.ranking.battles import choose_judge
    from swapjudge.reading.codes import Outcome
    from swapjudge.reading.pairs import build_pairs

    frame = choose_judge(loaded.frame, judge, loaded.source)
    if outcome is OutcomeSource.swap:
        items = build_pairs(frame).frame.filter(pl.col("outcome") != Outcome.INCOMPLETE).get_column("item")
    else:
        items = frame.filter((pl.col("first") != pl.col("second")) & pl.col("verdict").is_not_null()).get_column(
            "item")
    return [str(i) for i in np.unique(np.asarray(items.to_list(), dtype=object).astype(str))]


def _streams(source: Any, engine: ReadEngine, adjusted: bool, outcome: OutcomeSource) -> bool:
    """Whether the records are ranked from counts: what `workflows.engine.streams` says for the file, unless
    the ranking needs the rows (refused in one line under "streaming"; read in memory under "auto")."""
    from swapjudge.workflows.engine import RowsNeeded, streams

    needs_rows = (("{order_effect} and {control} fit single calls", ("order_effect", "control")) if adjusted else
                  ("{outcome} graded ranks graded verdicts", ("outcome",)) if outcome is OutcomeSource.graded
                  else None)
    if needs_rows is None:
        return streams(source, engine)
    what, names = needs_rows
    return streams(source, engine, needs_rows=RowsNeeded(
        what + " from the records in memory, not from the streaming engine's counts: {engine} memory (or auto)",
        (*names, "engine")))


def _rank_counted(source: Any, judge: str | None, model: Model, outcome: OutcomeSource, rounds: int, seed: int,
                  confidence: float, interval: IntervalMethod, min_consistency: float) -> JudgeRanking:
    """The ranking from the streaming reduction's counts: the same judge, gate, errors and figures."""
    from swapjudge.ranking.battles import judge_of
    from swapjudge.ranking.bradley_terry import fit_ranking
    from swapjudge.ranking.counted_battles import comparisons_of_counts
    from swapjudge.ranking.gate import rank_gate_of_counts
    from swapjudge.reading.streaming import open_source

    with open_source(source, allow_unpaired=outcome is OutcomeSource.calls, split=False) as reduced:
        judges = reduced.judges()
        chosen = judge_of(judges, judge, reduced.source)
        name = judge if judge is not None else (judges[0] if judges else "")
        checked = rank_gate_of_counts(reduced.counts(chosen), min_consistency, confidence)
        if checked.blocks:
            return JudgeRanking(name, outcome.value, checked, None)
        systems = reduced.systems(chosen)
        verdicts = reduced.pair_verdicts(chosen, systems)
    # DuckDB is closed (its memory given back) before the counts become comparisons and are fitted
    data = comparisons_of_counts(verdicts, systems, outcome=outcome, source=reduced.source)
    del verdicts
    if len(data.systems) < 2:
        raise InputError("fewer than two systems to rank", path=reduced.source)
    result = fit_ranking(data, model, rounds=rounds, seed=seed, confidence=confidence, interval=interval)
    return JudgeRanking(name, outcome.value, checked, result)


def _rank_calls(loaded: Any, name: str, judge: str | None, order_effect: bool, controls: list[str],
                pairs: str | Path | None, rounds: int, seed: int, confidence: float,
                checked: RankGate) -> JudgeRanking:
    """Bradley-Terry on single calls with a first-slot term and covariates."""
    from swapjudge.ranking.battles import calls_from_records
    from swapjudge.ranking.order_effect import fit_adjusted
    from swapjudge.reading.sidefiles import load_answer_texts

    texts = load_answer_texts(pairs) if pairs is not None else None
    data = calls_from_records(loaded, judge=judge, controls=controls, texts=texts)
    if len(data.systems) < 2:
        raise InputError("fewer than two systems to rank", path=loaded.source)
    # With an order effect on single-order data the fitted first-slot term stands in for the swap the data lack:
    # there is no consistency to gate on, and the ranking says so. Checked after the inputs, so a malformed
    # request is said as such whatever the judge.
    if checked.blocks and not (order_effect and checked.consistency is None):
        return JudgeRanking(name, OutcomeSource.calls.value, checked, None)
    result = fit_adjusted(data, order_effect=order_effect, rounds=rounds, seed=seed, confidence=confidence)
    return JudgeRanking(name, OutcomeSource.calls.value, checked, result.ranking, result)
