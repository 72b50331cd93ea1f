"""Release over release, with a pinned baseline.

A chain of "new release vs previous release" comparisons has no fixed point: a judge's stable taste (length,
formatting) compounds release after release while each step looks like a modest win. So each release is judged
against the previous one AND against a pinned baseline, and the properties that travel with the answers
(length, markdown formatting) are tracked release by release: a drift each step hides shows up against the
fixed point, and the property series shows its likely cause.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from swapjudge.core.analysis import JudgeAnalysis, analyze_records
from swapjudge.core.policy import DEFAULT_MIN_CONSISTENCY, TiePolicy
from swapjudge.core.stats import Proportion, wilson
from swapjudge.errors import SwapjudgeError
from swapjudge.reading.pairs import Outcome, build_pairs
from swapjudge.reading.pairs_file import PairsFile
from swapjudge.reading.records import RecordSet

_HEADER = re.compile(r"^\s{0,3}#{1,6}\s+\S", re.MULTILINE)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\S", re.MULTILINE)
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class AnswerProperties:
    """Per-answer means (and the median length) of one release's answers."""

    release: str
    answers: int
    chars_mean: float
    chars_median: float
    words_mean: float
    headers_mean: float
    bullets_mean: float
    bold_mean: float

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def answer_properties(release: str, texts: Sequence[str]) -> AnswerProperties:
    """Length (characters; whitespace-separated words as a tokenizer-free token count) and markdown formatting
    (headers, bullet or numbered list items, bold spans) of a release's answers."""
    if not texts:
        raise SwapjudgeError(f"release {release!r} has no answers")
    chars = [len(t) for t in texts]
    return AnswerProperties(
        release=release,
        answers=len(texts),
        chars_mean=float(np.mean(chars)),
        chars_median=float(statistics.median(chars)),
        words_mean=float(np.mean([len(_WORD.findall(t)) for t in texts])),
        headers_mean=float(np.mean([len(_HEADER.findall(t)) for t in texts])),
        bullets_mean=float(np.mean([len(_BULLET.findall(t)) for t in texts])),
        bold_mean=float(np.mean([len(_BOLD.findall(t)) for t in texts])),
    )


@dataclass(frozen=True)
class ReleaseStep:
    """One comparison of a release (`newer`) with an older one: the judge's analysis and how often the longer
    answer won among the consistent wins."""

    newer: str
    older: str
    analysis: JudgeAnalysis
    longer_won: Proportion  # consistent wins that went to the longer answer / consistent wins of unequal lengths

    @property
    def win_rate(self) -> float | None:
        """The newer release's headline win rate (None when the gate withholds it)."""
        wr = self.analysis.win_rate
        return None if wr is None or self.analysis.withheld else wr.headline.value

    @property
    def beat_clearly(self) -> bool:
        """The newer release's win rate interval lies above 50% (the gate passed)."""
        wr = self.analysis.win_rate
        low = None if wr is None else wr.headline.low
        return low is not None and low > 0.5

    def to_dict(self) -> dict[str, Any]:
        d = self.analysis.to_dict()
        return {"newer": self.newer, "older": self.older, "pairs": d["pairs"], "consistency": d["consistency"],
                "win_rate": d.get("win_rate"), "gate": d["gate"], "longer_won": self.longer_won.to_dict()}


@dataclass(frozen=True)
class ReleaseReport:
    releases: tuple[str, ...]
    baseline: str
    previous: tuple[ReleaseStep, ...]  # releases[i] vs releases[i-1]
    against_baseline: tuple[ReleaseStep, ...]  # each release other than the baseline vs the baseline
    properties: tuple[AnswerProperties, ...]

    @property
    def summary(self) -> str:
        steps = [s.win_rate for s in self.previous]
        base = [s.win_rate for s in self.against_baseline]
        parts = []
        known = [w for w in steps if w is not None]
        if steps and len(known) == len(steps):
            # "beat" is said only when every step's interval lies above 50%; otherwise what was measured
            if all(s.beat_clearly for s in self.previous):
                parts.append(f"every release beat its predecessor (step win rates {min(known):.0%} to "
                             f"{max(known):.0%}, each interval above 50%)")
            else:
                unclear = [s.newer for s in self.previous if not s.beat_clearly]
                parts.append(f"step win rates {min(known):.0%} to {max(known):.0%}; the interval of "
                             f"{', '.join(unclear)} against its predecessor does not lie above 50%")
        if base and base[-1] is not None:
            verb = ("beats it" if self.against_baseline[-1].beat_clearly
                    else "is not clearly ahead (interval reaches 50%)")
            parts.append(f"against the pinned baseline {self.baseline} the latest release {self.releases[-1]} "
                         f"scores {base[-1]:.0%} and {verb}")
        first, last = self.properties[0], self.properties[-1]
        if first.chars_mean > 0:
            growth = last.chars_mean / first.chars_mean - 1
            parts.append(f"mean answer length moved {growth:+.0%} ({first.chars_mean:.0f} -> {last.chars_mean:.0f} "
                         f"characters)")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"releases": list(self.releases), "baseline": self.baseline,
                "previous": [s.to_dict() for s in self.previous],
                "against_baseline": [s.to_dict() for s in self.against_baseline],
                "properties": [p.to_dict() for p in self.properties], "summary": self.summary}


def _longer_won(records: RecordSet, newer: str, older: str, lengths: Mapping[tuple[str, str], int],
                confidence: float) -> Proportion:
    frame = records.frame.filter(pl.col("first").is_in([newer, older]) & pl.col("second").is_in([newer, older]))
    table = build_pairs(frame).frame.filter(pl.col("outcome").is_in([Outcome.X_WINS, Outcome.Y_WINS]))
    longer = total = 0
    for row in table.iter_rows(named=True):
        winner = row["x"] if row["outcome"] == Outcome.X_WINS else row["y"]
        loser = row["y"] if winner == row["x"] else row["x"]
        lw, ll = lengths.get((row["item"], winner)), lengths.get((row["item"], loser))
        if lw is None or ll is None or lw == ll:
            continue
        total += 1
        longer += lw > ll
    return wilson(longer, total, confidence)


def release_report(records: RecordSet, pairs: PairsFile, releases: Sequence[str], baseline: str, *,
                   tie_policy: TiePolicy | str = TiePolicy.half_credit,
                   min_consistency: float = DEFAULT_MIN_CONSISTENCY, confidence: float = 0.95) -> ReleaseReport:
    """Both chains (each release vs the previous one, each vs the pinned baseline) and the property series."""
    if len(releases) < 2:
        raise SwapjudgeError("a release plan needs at least two releases")
    lengths = {(it.item, name): len(text) for it in pairs.items for name, text in it.answers.items()}

    def step(newer: str, older: str) -> ReleaseStep:
        (analysis,) = analyze_records(records, a=newer, b=older, tie_policy=tie_policy, min_consistency=min_consistency,
                                      confidence=confidence)
        return ReleaseStep(newer, older, analysis, _longer_won(records, newer, older, lengths, confidence))

    previous = tuple(step(new, old) for old, new in itertools.pairwise(releases))
    against = tuple(step(r, baseline) for r in releases if r != baseline)
    names = [*([] if baseline in releases else [baseline]), *releases]
    props = tuple(answer_properties(r, [it.answers[r] for it in pairs.items if r in it.answers]) for r in names)
    return ReleaseReport(tuple(releases), baseline, previous, against, props)
