"""Anchored pointwise scoring, for regression monitoring where there is no natural opponent.

A short discrete scale whose levels are described behaviours, two or three fixed exemplar answers with their
scores inside the rubric, and a pinned reference set scored on every run. If the anchors' scores move, the judge
moved, and every other number of that run is suspect. Pure statistics (scipy for the tests and intervals), a
renderer for the rubric and a strict parser for the judge's reply.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from swapjudge.core.stats import Proportion, wilson
from swapjudge.errors import SwapjudgeError
from swapjudge.outcome import Conclusion, Ending

DEFAULT_TOLERANCE = 0.5  # levels: a mean move of half a level on the reference set flags the run


@dataclass(frozen=True)
class Level:
    score: int
    description: str


@dataclass(frozen=True)
class Exemplar:
    """A fixed answer with the score it must get; shown inside the rubric and re-scored on every run."""

    name: str
    task: str
    answer: str
    score: int


@dataclass(frozen=True)
class Scale:
    """Consecutive integer levels, each a described behaviour (3 to 7 levels: short enough to tell apart)."""

    levels: tuple[Level, ...]

    def __post_init__(self) -> None:
        scores = [lv.score for lv in self.levels]
        if not 3 <= len(scores) <= 7:
            raise SwapjudgeError(f"a scale has 3 to 7 levels, got {len(scores)}")
        if scores != list(range(scores[0], scores[0] + len(scores))):
            raise SwapjudgeError(f"scale levels must be consecutive integers in order, got {scores}")
        if any(not lv.description.strip() for lv in self.levels):
            raise SwapjudgeError("every level needs a description of the behaviour it stands for")

    @property
    def scores(self) -> tuple[int, ...]:
        return tuple(lv.score for lv in self.levels)


def render_rubric(scale: Scale, exemplars: Sequence[Exemplar], criteria: str) -> str:
    """The pointwise rubric: criteria, the described levels, the exemplars with their scores, the reply format."""
    if not 2 <= len(exemplars) <= 3:
        raise SwapjudgeError(f"give two or three exemplars, got {len(exemplars)}")
    for ex in exemplars:
        if ex.score not in scale.scores:
            raise SwapjudgeError(f"exemplar {ex.name!r} has score {ex.score}, not a level of the scale")
    lines = [criteria.strip(), "", "Score the answer on this scale:"]
    lines += [f"{lv.score}: {lv.description.strip()}" for lv in scale.levels]
    lines += ["", "Scored examples (fixed reference points; score new answers consistently with them):"]
    for ex in exemplars:
        lines += [f"Example {ex.name}. Task: {ex.task.strip()}", f"Answer: {ex.answer.strip()}",
                  f"Score: {ex.score}", ""]
    lo, hi = scale.scores[0], scale.scores[-1]
    lines.append(f"Reply with exactly one line and nothing else: `Score: N` with N an integer from {lo} to {hi}.")
    return "\n".join(lines)


_SCORE_LINE = re.compile(r"^\s*Score:\s*(?P<n>[+-]?\d+)\s*$")


def parse_score(text: str, scale: Scale) -> int | None:
    """Strict: the reply's last non-empty line must be `Score: N` with N a level of the scale; else None."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return None
    m = _SCORE_LINE.match(lines[-1])
    if not m:
        return None
    n = int(m.group("n"))
    return n if n in scale.scores else None


@dataclass(frozen=True)
class ScoreDistribution:
    """Scores on the reference set: counts per level, mean and median, and the scale compression (share of
    scores on the two most common levels: near 1 means the judge uses two levels of the scale)."""

    levels: tuple[int, ...]
    counts: tuple[int, ...]
    mean: float | None
    median: float | None
    compression: Proportion
    top_levels: tuple[int, ...]

    @property
    def n(self) -> int:
        return sum(self.counts)

    @property
    def shares(self) -> tuple[float, ...]:
        return tuple(c / self.n if self.n else 0.0 for c in self.counts)

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "counts": dict(zip([str(x) for x in self.levels], self.counts, strict=True)),
                "shares": dict(zip([str(x) for x in self.levels], self.shares, strict=True)),
                "mean": self.mean, "median": self.median, "compression": self.compression.to_dict(),
                "top_levels": list(self.top_levels)}


def score_distribution(scores: Iterable[int], scale: Scale, confidence: float = 0.95) -> ScoreDistribution:
    values = np.asarray(list(scores), dtype=np.int64)
    bad = sorted(set(values.tolist()) - set(scale.scores))
    if bad:
        raise SwapjudgeError(f"score(s) {bad} are not levels of the scale {list(scale.scores)}")
    counts = tuple(int(np.sum(values == s)) for s in scale.scores)
    # the two most common levels (ties broken toward the lower level, so the result is deterministic)
    order = sorted(range(len(counts)), key=lambda i: (-counts[i], i))[:2]
    top = sum(counts[i] for i in order)
    n = int(values.size)
    return ScoreDistribution(
        levels=scale.scores, counts=counts,
        mean=float(values.mean()) if n else None, median=float(np.median(values)) if n else None,
        compression=wilson(top, n, confidence), top_levels=tuple(sorted(scale.scores[i] for i in order)),
    )


@dataclass(frozen=True)
class AnchorCheck:
    """The reference set re-scored against its pinned scores, and the exemplars against their stated scores."""

    items: int
    mean_shift: float | None  # current minus pinned, in levels
    mean_abs_shift: float | None
    moved: Proportion  # reference items whose score changed
    up: int
    down: int
    p_value: float | None  # Wilcoxon signed-rank test of the shifts (zero shifts dropped); None when all zero
    exemplar_errors: tuple[tuple[str, int, int | None], ...]  # (name, stated, scored) for every exemplar
    tolerance: float
    flagged: bool
    reasons: tuple[str, ...]
    pinned: ScoreDistribution
    current: ScoreDistribution

    def to_dict(self) -> dict[str, Any]:
        return {"items": self.items, "mean_shift": self.mean_shift, "mean_abs_shift": self.mean_abs_shift,
                "moved": self.moved.to_dict(), "up": self.up, "down": self.down, "p_value": self.p_value,
                "exemplars": [{"name": n, "stated": s, "scored": c} for n, s, c in self.exemplar_errors],
                "tolerance": self.tolerance, "flagged": self.flagged, "reasons": list(self.reasons),
                "pinned": self.pinned.to_dict(), "current": self.current.to_dict()}


def check_anchors(pinned: Mapping[str, int], current: Mapping[str, int], scale: Scale, *,
                  exemplars: Mapping[str, tuple[int, int | None]] | None = None,
                  tolerance: float = DEFAULT_TOLERANCE, confidence: float = 0.95) -> AnchorCheck:
    """Flag the run when the reference set's mean score moved by more than `tolerance` levels from its pinned
    scores, or an exemplar's score is off its stated score by more than `tolerance` (or unparsed).

    `pinned`/`current`: reference item -> score; the items scored in both are compared. `exemplars`: name ->
    (stated score, score this run gave it, None when unparsable).
    """
    if tolerance < 0:
        raise SwapjudgeError(f"the tolerance must be at least 0 levels, got {tolerance}")
    shared = sorted(set(pinned) & set(current))
    if not shared:
        raise SwapjudgeError("the pinned reference set and this run's scores share no item")
    before = np.asarray([pinned[k] for k in shared], dtype=np.int64)
    after = np.asarray([current[k] for k in shared], dtype=np.int64)
    shift = after - before
    nonzero = shift[shift != 0]
    p = None
    if nonzero.size:
        from scipy import stats  # only for a shifted anchor check: its import is slow

        p = float(stats.wilcoxon(nonzero, zero_method="wilcox").pvalue)
    mean_shift = float(shift.mean())
    reasons = []
    if abs(mean_shift) > tolerance:
        reasons.append(f"the reference set's mean score moved {mean_shift:+.2f} levels (tolerance {tolerance:g}): "
                       "the judge moved, every other number of this run is suspect")
    ex_rows: list[tuple[str, int, int | None]] = []
    for name, (stated, scored) in sorted((exemplars or {}).items()):
        ex_rows.append((name, stated, scored))
        if scored is None:
            reasons.append(f"exemplar {name!r} got no parsable score")
        elif abs(scored - stated) > tolerance:
            reasons.append(f"exemplar {name!r} scored {scored}, its stated score is {stated}")
    return AnchorCheck(
        items=len(shared), mean_shift=mean_shift, mean_abs_shift=float(np.abs(shift).mean()),
        moved=wilson(int(nonzero.size), len(shared), confidence), up=int(np.sum(shift > 0)),
        down=int(np.sum(shift < 0)), p_value=p, exemplar_errors=tuple(ex_rows), tolerance=tolerance,
        flagged=bool(reasons), reasons=tuple(reasons),
        pinned=score_distribution(before.tolist(), scale, confidence),
        current=score_distribution(after.tolist(), scale, confidence),
    )


def anchor_ending(flagged: bool, reasons: Sequence[str]) -> Ending:
    """An anchored run that moved beyond its tolerance (or whose exemplars missed their stated scores) fails (exit
    1 at the CLI, after it is shown); ok when it held."""
    if not flagged:
        return Ending()
    detail = "; ".join(reasons) or "an exemplar did not get its stated score"
    return Ending(Conclusion.failed, (f"anchor check: the run is flagged: {detail}",))
