"""`swapjudge analyze` and `swapjudge.analyze`: load the records, pair them, analyse each judge, and hand back the
results with their gates (the caller renders them, then `raise_for_gate()` ends a failed gate with exit 1).

A Parquet file, or a JSON Lines file too large to read at ease, is reduced to counts by the streaming engine
(`reading.streaming`, DuckDB, within a memory limit) and analysed from them (`core.counted`): the same figures as
records read into memory, for files larger than memory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swapjudge.core import arguments
from swapjudge.core.analysis import Analyses
from swapjudge.core.analysis import analyze as analyse_records
from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, ReadEngine, TiePolicy
from swapjudge.reading.records import load_records


def analyze(source: str | Path | Any, *, a: str | None = None, b: str | None = None, judge: str | None = None,
            tie_policy: TiePolicy | str | None = None, min_consistency: float = DEFAULT_MIN_CONSISTENCY,
            confidence: float = 0.95, allow_unpaired: bool = False,
            engine: ReadEngine | str = ReadEngine.auto) -> Analyses:
    """Analyse judge calls made in both orders, one result per judge: what `swapjudge analyze` prints.

    `source` is anything `load_records` takes, or a Parquet file. The result is a sequence of `JudgeAnalysis`
    (index it by position or judge name); a judge below `min_consistency` has its win rate withheld, as at the
    terminal. `engine`: "auto" streams Parquet and large JSON Lines files when DuckDB is installed (the `scale`
    extra), "streaming" always streams a file, "memory" reads it into memory.
    """
    from swapjudge.reading.streaming import open_source
    from swapjudge.workflows.engine import streams

    source = arguments.records_source(source, "source")
    a, b, judge = (arguments.text(v, n, what="a name (a string)") for v, n in ((a, "a"), (b, "b"), (judge, "judge")))
    tie_policy = arguments.choice(tie_policy, "tie_policy", TiePolicy, optional=True)
    min_consistency = arguments.share(min_consistency, "min_consistency")
    confidence = arguments.confidence(confidence)
    allow_unpaired = arguments.flag(allow_unpaired, "allow_unpaired")
    engine = arguments.choice(engine, "engine", ReadEngine).value
    if streams(source, engine):
        from swapjudge.core.analysis import analyze_source

        with open_source(source, allow_unpaired=allow_unpaired) as reduced:
            return Analyses(tuple(analyze_source(reduced, judge=judge, a=a, b=b, tie_policy=tie_policy,
                                                 min_consistency=min_consistency, confidence=confidence)))
    loaded = load_records(source, allow_unpaired=allow_unpaired, extras=False)
    return Analyses(tuple(analyse_records(loaded, judge=judge, a=a, b=b, tie_policy=tie_policy,
                                          min_consistency=min_consistency, confidence=confidence)))
