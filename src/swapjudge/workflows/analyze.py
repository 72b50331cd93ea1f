"""`swapjudge analyze` and `swapjudge.analyze`: load the records, pair them, analyse each judge, and hand back the
results with their gates (the caller renders them, then `raise_for_gate()` ends a failed gate with exit 1).

A Parquet file, or a JSON Lines file too large to read at ease, is reduced to counts by the streaming engine
(`reading.streaming`, DuckDB, within a memory limit) and analysed from them (`core.counted`): the same figures as
records read into memory, for files larger than memory. A small, plain JSON Lines file is counted with the
standard library (`reading.small`), so the command starts without polars: again the same figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swapjudge.core import arguments
from swapjudge.core.analysis import Analyses, analyze_records, analyze_source
from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, ReadEngine, TiePolicy
from swapjudge.errors import ArgumentError
from swapjudge.reading.listwise import is_listwise


def analyze(source: str | Path | Any, *, a: str | None = None, b: str | None = None, judge: str | None = None,
            tie_policy: TiePolicy | str | None = None, min_consistency: float = DEFAULT_MIN_CONSISTENCY,
            confidence: float = 0.95, allow_unpaired: bool = False,
            engine: ReadEngine | str = ReadEngine.auto, fragility: bool = False) -> Analyses:
    """Analyse judge calls made in both orders, one result per judge: what `swapjudge analyze` prints.

    `source` is anything `load_records` takes, or a Parquet file. The result is a sequence of `JudgeAnalysis`
    (index it by position or judge name); a judge below `min_consistency` has its win rate withheld, as at the
    terminal. `engine`: "auto" streams Parquet and large JSON Lines files when DuckDB is installed (the `scale`
    extra), "streaming" always streams a file, "memory" reads it into memory. `fragility`: for two systems, also
    the fewest items whose removal (or whose verdicts turned) change what the win rate shows
    (`JudgeAnalysis.fragility`; the records are then read into memory).
    """
    from swapjudge.workflows.engine import streams

    source = arguments.records_source(source, "source")
    a, b, judge = (arguments.text(v, n, what="a name (a string)") for v, n in ((a, "a"), (b, "b"), (judge, "judge")))
    tie_policy = arguments.choice(tie_policy, "tie_policy", TiePolicy, optional=True)
    min_consistency = arguments.share(min_consistency, "min_consistency")
    confidence = arguments.confidence(confidence)
    allow_unpaired = arguments.flag(allow_unpaired, "allow_unpaired")
    engine = arguments.choice(engine, "engine", ReadEngine).value
    fragility = arguments.flag(fragility, "fragility")
    if fragility:
        engine = ReadEngine.memory.value  # the search decides again on the records
    from swapjudge.workflows.listwise import stored_listwise

    stored = stored_listwise(source)  # a run store whose latest run is a listwise run: its records
    if stored is not None or is_listwise(source):  # best-of-N records: the N-way audit and the Plackett-Luce fit
        from swapjudge.workflows.listwise import analyze_listwise

        if a is not None or b is not None or tie_policy is not None or fragility:
            raise ArgumentError("listwise records are not compared two by two: {a}, {b}, {tie_policy} and "
                                "{fragility} do not apply", "a", "b", "tie_policy", "fragility")
        return analyze_listwise(source if stored is None else stored, judge=judge, min_consistency=min_consistency,  # type: ignore[return-value]
                                confidence=confidence)
    options: dict[str, Any] = {"judge": judge, "a": a, "b": b, "tie_policy": tie_policy,
                               "min_consistency": min_consistency, "confidence": confidence}
    if engine != ReadEngine.streaming.value and not fragility:
        from swapjudge.reading.small import small_source

        # a small, plain JSON Lines file: counted without polars or DuckDB, the figures the same (reading.small)
        small = small_source(source, allow_unpaired=allow_unpaired)
        if small is not None:
            return Analyses(tuple(analyze_source(small, **options)))
    if streams(source, engine):
        from swapjudge.reading.streaming import open_source

        with open_source(source, allow_unpaired=allow_unpaired) as reduced:
            return Analyses(tuple(analyze_source(reduced, **options)))
    from swapjudge.reading.records import read_records

    loaded = read_records(source, allow_unpaired=allow_unpaired, extras=False)
    result = Analyses(tuple(analyze_records(loaded, **options)))
    if not fragility:
        return result
    return Analyses(tuple(_with_fragility(loaded, one, min_consistency, confidence) for one in result))


def _with_fragility(loaded: Any, analysis: Any, min_consistency: float, confidence: float) -> Any:
    """The analysis with the fragility of what its two systems' win rate shows, read as a decision: a ahead
    ("ship": its lower bound over items above 50%), b ahead or the gate failed ("keep"), neither shown
    ("inconclusive"), each bound one-sided at (1 - confidence) / 2."""
    import dataclasses

    from swapjudge.workflows.decide import decide

    if analysis.pair is None or analysis.ungated_win_rate is None:
        return analysis
    a, b = analysis.pair
    decision = {"candidate": a, "incumbent": b, "hypothesis": "superior", "margin": 0.0,
                "tie_policy": str(analysis.ungated_win_rate.policy), "min_consistency": min_consistency,
                "alpha": (1 - confidence) / 2, "power": 0.8, "monitoring": "fixed", "judge": analysis.judge or None}
    verdict = decide(loaded, decision, fragility=True)
    reading = {"ship": f"{a} ahead", "keep": f"{b} ahead, or the gate failed", "inconclusive": "neither ahead"}
    note = (f"read as a decision on {a} against {b}: ship = {a}'s win rate over items above 50% by its one-sided "
            f"{1 - (1 - confidence) / 2:.1%} lower bound, keep = below it by the upper bound (or the consistency "
            f"gate failed), inconclusive = neither; here: {verdict.verdict} ({reading[verdict.verdict]})")
    f = verdict.fragility
    return dataclasses.replace(analysis, fragility=dataclasses.replace(f, notes=(note, *f.notes)))
