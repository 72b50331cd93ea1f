"""The owner's view of a live review, computed by the project's own statistics from the votes so far.

Per reviewer: votes, each reviewer's swap-consistency and flip direction on the re-shown pairs
(`core.analysis.analyze_records` of the reviewer's records, exactly as a judge's), agreement with the judge (Cohen's
kappa of the judge's verdicts against the reviewer's, `probes.agreement`), and between reviewers on the pairs
several of them saw (kappa over items). With judge records, the human-corrected win rate
(`probes.calibrate.calibrate_records`) from the random sample's votes only, recomputed as votes arrive so the interval
can be watched narrowing. No system name appears: the two systems are "a" and "b".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from swapjudge.core.analysis import analyze_records
from swapjudge.core.policy import DEFAULT_MIN_CONSISTENCY, Gate
from swapjudge.errors import InputError, SwapjudgeError
from swapjudge.probes.agreement import agreement_of_records, kappa
from swapjudge.probes.calibrate import calibrate_records
from swapjudge.reading.records import records_from_dicts
from swapjudge.review.assign import SAMPLE
from swapjudge.review.export import reviewer_judge, vote_record

HISTORY_POINTS = 12  # checkpoints of the calibrated interval's history


@dataclass(frozen=True)
class JudgeContext:
    """The judge's records the votes are compared with, and the two systems of the win rate (a over b)."""

    frame: pl.DataFrame
    gate: Gate
    a: str
    b: str
    name: str | None


@dataclass(frozen=True)
class ReviewerStatus:
    reviewer: str
    votes: int
    total: int
    sample_votes: int
    queue_votes: int
    reshown_pairs: int  # pairs this reviewer has voted on in both orders
    median_seconds: float | None
    consistency: dict[str, Any] | None  # analyze's consistency, over the re-shown pairs
    flip_direction: dict[str, Any] | None
    judge_kappa: dict[str, Any] | None  # kappa of the judge's order-cancelled verdicts against this reviewer's

    def to_dict(self) -> dict[str, Any]:
        return {"reviewer": self.reviewer, "votes": self.votes, "total": self.total,
                "sample_votes": self.sample_votes, "queue_votes": self.queue_votes,
                "reshown_pairs": self.reshown_pairs, "median_seconds": self.median_seconds,
                "consistency": self.consistency, "flip_direction": self.flip_direction,
                "agreement_with_judge": self.judge_kappa}


@dataclass(frozen=True)
class ReviewStatus:
    reviewers: tuple[ReviewerStatus, ...]
    between_reviewers: tuple[dict[str, Any], ...]
    calibration: dict[str, Any] | None
    history: tuple[dict[str, Any], ...]
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"votes": sum(r.votes for r in self.reviewers), "total": sum(r.total for r in self.reviewers),
                "reviewers": [r.to_dict() for r in self.reviewers],
                "between_reviewers": list(self.between_reviewers), "calibration": self.calibration,
                "calibration_history": list(self.history), "notes": list(self.notes)}


def _kappa_dict(k: Any) -> dict[str, Any] | None:
    return None if k is None else k.to_dict()


def item_verdicts(records: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """A reviewer's verdict per item: the system every one of its votes named, else "tie" (a tie, both bad, or
    the two orders naming different systems), the rule calibrate scores a person's pair by."""
    named: dict[str, set[str]] = {}
    for r in records:
        pick = r["first"] if r["verdict"] == "first" else r["second"] if r["verdict"] == "second" else "tie"
        named.setdefault(str(r["item"]), set()).add(pick)
    return {item: next(iter(picks)) if len(picks) == 1 else "tie" for item, picks in named.items()}


def review_status(rows: Sequence[Mapping[str, Any]], totals: Mapping[str, int],
                  judge: JudgeContext | None = None, *, confidence: float = 0.95) -> ReviewStatus:
    """The status of a review from its live votes (rows of `review.votes.live_votes`, in the order cast) and
    each reviewer's number of tasks."""
    records = [vote_record(r) for r in rows]
    notes: list[str] = []
    reviewers = []
    per_reviewer: dict[str, dict[str, str]] = {}
    for name, total in totals.items():
        mine = [r for r in records if r["reviewer"] == name]
        per_reviewer[name] = item_verdicts(mine)
        seconds = [float(r["seconds"]) for r in mine if r["seconds"] is not None]
        consistency = flips = None
        reshown = 0
        if mine:
            result = analyze_records(records_from_dicts(mine, allow_unpaired=True), judge=reviewer_judge(name),
                                     confidence=confidence)[0]
            reshown = result.outcomes.complete
            if result.consistency is not None and reshown:
                consistency = result.consistency.to_dict()
                flips = result.flip_direction.to_dict()
        reviewers.append(ReviewerStatus(
            name, len(mine), int(total), sum(r["origin"] == SAMPLE for r in mine),
            sum(r["origin"] != SAMPLE for r in mine), reshown,
            float(np.median(seconds)) if seconds else None, consistency, flips,
            _judge_kappa(judge, per_reviewer[name], confidence) if judge is not None and mine else None))

    between = []
    for left, right in combinations(totals, 2):
        common = sorted(set(per_reviewer[left]) & set(per_reviewer[right]))
        if len(common) < 2:
            continue
        k = kappa(np.array([per_reviewer[left][i] for i in common], dtype=object),
                  np.array([per_reviewer[right][i] for i in common], dtype=object), confidence, subject="item")
        between.append({"reviewers": [left, right], "kappa": k.to_dict(),
                        "agreement": float(np.mean([per_reviewer[left][i] == per_reviewer[right][i]
                                                    for i in common]))})

    calibration: dict[str, Any] | None = None
    history: tuple[dict[str, Any], ...] = ()
    if judge is not None:
        sample = [r for r in records if r["origin"] == SAMPLE]
        if not sample:
            notes.append("no vote on the random sample yet: the corrected win rate needs one")
        else:
            calibration = _calibrated(judge, sample, confidence)
            history = _history(judge, sample, confidence)
            if calibration is None:
                notes.append("the sample's votes do not yet give a corrected win rate (too few items matched "
                             "with the judge's)")
    return ReviewStatus(tuple(reviewers), tuple(between), calibration, history, tuple(notes))


def _judge_kappa(judge: JudgeContext, verdicts: Mapping[str, str], confidence: float) -> dict[str, Any] | None:
    """Kappa of the judge against the reviewer's verdicts as labels (probes.agreement), over the judge's pairs
    of a and b on the items the reviewer voted on."""
    frame = judge.frame.filter(pl.col("item").is_in(list(verdicts)))
    pair = [judge.a, judge.b]
    frame = frame.filter(pl.col("first").is_in(pair) & pl.col("second").is_in(pair))
    if frame.height == 0:
        return None
    labels = pl.DataFrame({"item": list(verdicts), "_label": list(verdicts.values())},
                          schema={"item": pl.String, "_label": pl.String})
    frame = frame.drop("label").join(labels, on="item", how="left").rename({"_label": "label"})
    result = agreement_of_records(frame, confidence=confidence)[0]
    chosen = result.kappa_labels_cancelled or result.kappa_labels_per_call
    if chosen is None:
        return None
    return {**chosen.to_dict(), "verdict": "order_cancelled" if result.kappa_labels_cancelled else "per_call"}


def _calibrated(judge: JudgeContext, sample: Sequence[Mapping[str, Any]],
                confidence: float) -> dict[str, Any] | None:
    try:
        people = records_from_dicts(sample, allow_unpaired=True).frame
        result = calibrate_records(judge.frame, people, judge.a, judge.b, gate=judge.gate, judge=judge.name,
                                   confidence=confidence)
    except SwapjudgeError:
        return None
    out = result.to_dict()
    out["systems"] = {"a": "a", "b": "b"}  # the page never shows a system name
    out["notes"] = [n.replace(judge.a, "a").replace(judge.b, "b") for n in out["notes"]]
    return {k: out[k] for k in ("corrected", "human_only", "judge_only", "n_human", "n_judge", "lambda",
                                "width_ratio", "confidence", "gate", "notes", "systems")}


def _history(judge: JudgeContext, sample: Sequence[Mapping[str, Any]],
             confidence: float) -> tuple[dict[str, Any], ...]:
    """The corrected interval after the first n sample votes, at up to HISTORY_POINTS values of n."""
    steps = sorted({round(float(x)) for x in np.linspace(0, len(sample), HISTORY_POINTS + 1)[1:]} - {0})
    out = []
    for n in steps:
        result = _calibrated(judge, sample[:n], confidence)
        if result is None:
            continue
        c = result["corrected"]
        out.append({"votes": n, "items": result["n_human"], "value": c["value"], "low": c["low"],
                    "high": c["high"]})
    return tuple(out)


def judge_context(records_path: str | Path, systems: Sequence[tuple[str, str]], *, judge: str | None = None,
                  a: str | None = None, b: str | None = None, min_consistency: float = DEFAULT_MIN_CONSISTENCY,
                  confidence: float = 0.95) -> JudgeContext:
    """The judge the status page compares the votes with: its records (one judge: `judge`, needed when the file
    holds several), its self-consistency gate, and the two systems a and b of the win rate (given, or the two
    every reviewed pair compares)."""
    from swapjudge.reading.records import read_records, select_judges

    loaded = read_records(records_path, allow_unpaired=True)
    names = select_judges(loaded.frame, judge)
    if judge is None and len(names) > 1:
        raise InputError(f"records hold {len(names)} judges ({', '.join(names)}); choose one with {{judge}}",
                         path=loaded.source, arguments=("judge",))
    name = names[0]
    if a is None or b is None:
        if len(set(systems)) != 1:
            raise InputError("the reviewed pairs compare more than two systems: name the two with {a} and {b}",
                             path=loaded.source, arguments=("a", "b"))
        a, b = systems[0]
    frame = loaded.frame.filter(pl.col("judge") == name)
    try:
        result = analyze_records(loaded, judge=name, a=a, b=b, min_consistency=min_consistency,
                                 confidence=confidence)[0]
    except SwapjudgeError as err:
        raise InputError(str(err), path=loaded.source) from None
    return JudgeContext(frame, result.gate, a, b, name or None)
