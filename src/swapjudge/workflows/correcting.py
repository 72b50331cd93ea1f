"""`swapjudge calibrate`: a judge's win rate corrected with people's labels on some of its items (PPI++), under
the judge's own gate (the judge-only rate is withheld below it; the corrected one is reported whatever it is)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, TiePolicy
from swapjudge.core.records import load_records
from swapjudge.errors import InputError, SwapjudgeError

if TYPE_CHECKING:
    from swapjudge.probes.calibrate import Calibration


def calibrate(judge_records: str | Path | Any, human: str | Path | Any, a: str, b: str, *,
              judge: str | None = None, tie_policy: TiePolicy | str = TiePolicy.half_credit,
              min_consistency: float = DEFAULT_MIN_CONSISTENCY, confidence: float = 0.95) -> Calibration:
    """The human-corrected win rate of `a` against `b`: the judge's order-cancelled pair scores on every item,
    corrected by people's scores on the items they labelled (`human`: any records, one order or both)."""
    from swapjudge.core.analysis import analyze
    from swapjudge.core.records import select_judges
    from swapjudge.probes.calibrate import calibrate as corrected

    judged = load_records(judge_records, allow_unpaired=True)
    people = load_records(human, allow_unpaired=True)
    judges = select_judges(judged.frame, judge)
    if judge is None and len(judges) > 1:
        raise InputError(f"records hold {len(judges)} judges ({', '.join(judges)}); choose one with {{judge}}",
                         path=judged.source, arguments=("judge",))
    name = judges[0]
    frame = judged.frame.filter(judged.frame.get_column("judge") == name)
    try:
        analysis = analyze(judged, judge=name, a=a, b=b, tie_policy=tie_policy, min_consistency=min_consistency,
                           confidence=confidence)[0]
    except SwapjudgeError as err:
        raise InputError(err.template, path=judged.source, arguments=err.arguments) from None
    return corrected(frame, people.frame, a, b, gate=analysis.gate, judge=name or None, tie_policy=tie_policy,
                     confidence=confidence, judge_source=judged.source, human_source=people.source)
