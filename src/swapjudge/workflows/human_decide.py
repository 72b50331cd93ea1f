"""`decide` anchored in people: a decision file's `human` block makes the verdict rest on the human-corrected
win rate (`calibrate`'s, 1/pi-weighted where the labels were drawn with unequal probabilities). The judge's own
consistency gate is still reported, but a judge that fails it no longer forces keep: its scores only narrow the
interval, and the corrected rate is unbiased for the people's whatever the judge's bias."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from swapjudge.core.policy import Gate
from swapjudge.decision.bounds import Bound
from swapjudge.decision.file import DecisionFile
from swapjudge.errors import InputError


@dataclass(frozen=True)
class HumanBound:
    """The corrected win rate as the decision's bound, and what it was computed from."""

    bound: Bound
    labels: int
    design: str
    source: str
    judge_gate: Gate
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"labels": self.labels, "design": self.design, "source": self.source,
                "judge_gate_passed": self.judge_gate.passed, "notes": list(self.notes)}


def _labels_path(spec: DecisionFile, decision_path: str | None) -> Path:
    assert spec.human is not None
    path = Path(spec.human.labels)
    if not path.is_absolute() and decision_path is not None:
        beside = Path(decision_path).parent / path
        if beside.exists():  # a path in the decision file is read beside it, as it was committed
            path = beside
    if not path.exists():
        raise InputError(f"human.labels: no such file {spec.human.labels!r}", path=decision_path or "decision")
    return path


def _people(path: Path) -> pl.DataFrame:
    """People's records from a records file, or the live votes of a review store (SQLite)."""
    from swapjudge.reading.records import read_records, records_from_dicts

    with path.open("rb") as handle:
        is_sqlite = handle.read(16) == b"SQLite format 3\x00"
    if is_sqlite:
        from swapjudge.review.export import review_records

        try:
            rows = review_records(path)
        except sqlite3.DatabaseError as err:
            raise InputError(f"cannot read the review store: {err}", path=str(path)) from None
        if not rows:
            raise InputError("the review store holds no vote yet", path=str(path))
        return records_from_dicts(rows, allow_unpaired=True).frame
    return read_records(path, allow_unpaired=True).frame


def human_bound(spec: DecisionFile, decision_path: str | None, calls: pl.DataFrame, gate: Gate) -> HumanBound:
    """The corrected win rate of the candidate with its bounds, each one-sided at the decision's alpha."""
    from swapjudge.probes.calibrate import calibrate_records

    assert spec.human is not None
    path = _labels_path(spec, decision_path)
    people_frame = _people(path)
    result = calibrate_records(calls, people_frame, spec.candidate, spec.incumbent, gate=gate,
                               tie_policy=spec.tie_policy, confidence=1 - 2 * spec.alpha, judge_source="judge records",
                               human_source=str(path))
    registered = spec.human.design
    if registered == "active" and not result.pi_recorded:
        raise InputError("the decision registers an active design (human.design) but the labels carry no `pi`: "
                         "without the probabilities each item was drawn with, no unbiased correction exists",
                         path=str(path))
    if registered == "uniform" and result.design == "active":
        raise InputError("the decision registers a uniform design (human.design) but the labels' `pi` differ: "
                         "they were drawn actively; register `design: active`", path=str(path))
    notes = list(result.notes)
    if spec.monitoring == "sequential":
        bound = sequential_bound(calls, people_frame, spec, path)
        notes.append("monitoring: sequential: the rectifier (person - judge) on the labels in the order they came "
                     "is an anytime-valid betting confidence sequence at alpha / 2, the judge's mean over every "
                     "item a fixed bound at alpha / 2; their sum bounds the people's win rate after every vote "
                     "(it needs the labels to come in a random order of a random sample, as the review page's do)")
    else:
        c = result.ppi.corrected
        method = "ipw_ppi" if result.design == "active" else "ppi"
        bound = Bound(c.value, c.low, c.high, result.n_judge, spec.alpha, method)
    if not gate.passed:
        notes.append(f"the judge fails its consistency gate ({gate.reason}): reported, not deciding; the people's "
                     "labels carry the decision and the judge's scores only narrow the interval")
    return HumanBound(bound, result.ppi.n_human, result.design, str(path), gate, tuple(notes))


def sequential_bound(calls: pl.DataFrame, people: pl.DataFrame, spec: DecisionFile, path: Path) -> Bound:
    """Classic PPI made anytime-valid by a union bound (Angelopoulos et al. 2023, section on confidence
    sequences): theta = E[person - judge] + E[judge]. The first term is a betting confidence sequence over the
    labelled items in the order their first vote came (the rectifier mapped from [-1, 1] to [0, 1]), at alpha / 2;
    the second a fixed bound over every judged item, at alpha / 2. Ship when the sum's lower bound clears the
    bar at any vote; `ship_at` / `keep_at` count labelled items."""
    import numpy as np

    from swapjudge.decision.bounds import betting_sequence, fixed_bound
    from swapjudge.probes.calibrate import QUEUE_ORIGIN, item_score_frame

    if "origin" in people.columns:
        people = people.filter(~(people.get_column("origin").cast(pl.String) == QUEUE_ORIGIN).fill_null(False))
    judged = item_score_frame(calls, spec.candidate, spec.incumbent, spec.tie_policy, source="judge records")
    labels = item_score_frame(people, spec.candidate, spec.incumbent, spec.tie_policy, source=str(path))
    first_seen = (people.select("item").with_row_index("_row").group_by("item").agg(pl.col("_row").min()))
    ordered = (labels.join(judged, on="item", how="inner", suffix="_judge").join(first_seen, on="item")
               .sort("_row"))
    rectifier = (ordered.get_column("score").to_numpy() - ordered.get_column("score_judge").to_numpy() + 1.0) / 2.0
    half = spec.alpha / 2
    f_bound = fixed_bound(judged.get_column("score").to_numpy(), half)
    assert f_bound.low is not None and f_bound.high is not None and f_bound.value is not None
    bar = spec.bar

    def to_unit(level: float) -> float:
        """The bar on the rectifier's [0, 1] scale once the judge's bound `level` is added back."""
        return float(np.clip((bar - level + 1.0) / 2.0, 0.0, 1.0))

    ship_seq = betting_sequence(rectifier, to_unit(f_bound.low), half)
    keep_seq = betting_sequence(rectifier, to_unit(f_bound.high), half)
    if ship_seq.low is None or keep_seq.high is None or ship_seq.value is None:
        return Bound(None, None, None, int(judged.height), spec.alpha, "ppi_betting_cs")
    value = (2.0 * ship_seq.value - 1.0) + f_bound.value
    low = max(0.0, (2.0 * ship_seq.low - 1.0) + f_bound.low)
    high = min(1.0, (2.0 * keep_seq.high - 1.0) + f_bound.high)
    return Bound(value, low, high, int(judged.height), spec.alpha, "ppi_betting_cs", None, ship_seq.ship_at,
                 keep_seq.keep_at)
