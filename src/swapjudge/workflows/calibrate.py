"""`swapjudge calibrate`: a judge's win rate corrected with people's labels on some of its items (PPI++), under
the judge's own gate (the judge-only rate is withheld below it; the corrected one is reported whatever it is).

A Parquet file, or a JSON Lines file too large to read at ease, is reduced by the streaming engine: the judge's
analysis (its gate) from the counts, and the calls between the two compared systems read back from the file
alone; the people's records are read whole. The figures are those of records read into memory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, ReadEngine, TiePolicy
from swapjudge.errors import InputError, SwapjudgeError
from swapjudge.reading.records import read_records

if TYPE_CHECKING:
    from swapjudge.core.analysis import JudgeAnalysis
    from swapjudge.probes.calibrate import Calibration


def calibrate(judge_records: str | Path | Any, human: str | Path | Any, a: str, b: str, *,
              judge: str | None = None, tie_policy: TiePolicy | str = TiePolicy.half_credit,
              min_consistency: float = DEFAULT_MIN_CONSISTENCY, confidence: float = 0.95,
              engine: ReadEngine | str = ReadEngine.auto) -> Calibration:
    """The human-corrected win rate of `a` against `b`: the judge's order-cancelled pair scores on every item,
    corrected by people's scores on the items they labelled (`human`: any records, one order or both).
    `engine`: "auto" streams Parquet and large JSON Lines judge records when DuckDB is installed, "streaming"
    always does, "memory" reads them whole; the figures are the same."""
    from swapjudge.core import arguments
    from swapjudge.core.analysis import analyze_records
    from swapjudge.probes.calibrate import calibrate_records
    from swapjudge.reading.records import choose_judges, select_judges
    from swapjudge.reading.streaming import open_source
    from swapjudge.workflows.engine import streams

    read = arguments.choice(engine, "engine", ReadEngine)
    options: dict[str, Any] = {"a": a, "b": b, "tie_policy": tie_policy, "min_consistency": min_consistency,
                               "confidence": confidence}
    if streams(judge_records, read):
        from swapjudge.core.analysis import analyze_source

        with open_source(judge_records, allow_unpaired=True) as reduced:
            people = read_records(human, allow_unpaired=True)
            name = _one_judge(choose_judges(reduced.judges(), judge), judge, reduced.path)
            analysis = _analysis(lambda: analyze_source(reduced, judge=name, **options)[0], reduced.path)
            frame, source = reduced.pair_calls(name, (a, b)), reduced.path
    else:
        judged = read_records(judge_records, allow_unpaired=True)
        people = read_records(human, allow_unpaired=True)
        name = _one_judge(select_judges(judged.frame, judge), judge, judged.source)
        analysis = _analysis(lambda: analyze_records(judged, judge=name, **options)[0], judged.source)
        frame, source = judged.frame.filter(judged.frame.get_column("judge") == name), judged.source
    return calibrate_records(frame, people.frame, a, b, gate=analysis.gate, judge=name or None, tie_policy=tie_policy,
                             confidence=confidence, judge_source=source, human_source=people.source)


def _one_judge(chosen: list[str], judge: str | None, source: str) -> str:
    """The judge to correct, of the records' judges `chosen` for `judge`: it, or the records' only one."""
    if judge is None and len(chosen) > 1:
        raise InputError(f"records hold {len(chosen)} judges ({', '.join(chosen)}); choose one with {{judge}}",
                         path=source, arguments=("judge",))
    return chosen[0]


def _analysis(run: Callable[[], JudgeAnalysis], source: str) -> JudgeAnalysis:
    """The judge's analysis (its gate), an error in it named by the judge's file."""
    try:
        return run()
    except SwapjudgeError as err:
        raise InputError(err.template, path=source, arguments=err.arguments) from None
