"""Judge panels: several judges over the same pairs, side by side.

Per judge: swap-consistency, flip direction and (with labels) accuracy. Over the pairs every judge judged
completely (the common pairs): each judge's order-cancelled verdict (a consistent winner, else "split"), the
panel disagreement rate (share of common pairs on which the judges' order-cancelled verdicts are not all the
same), the majority verdict (held by more than half of the judges, else none), and the disagreeing pairs for
human review. Self-preference: a judge whose model family matches a candidate system's may favour it; the
warning compares the judge's score for that system with the other judges' on the same pairs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl
from scipy import special

from swapjudge.core.accuracy import Accuracy, label_accuracy
from swapjudge.core.policy import DEFAULT_MIN_CONSISTENCY
from swapjudge.core.stats import Proportion, holm, wilson
from swapjudge.core.swap import (
    Consistency,
    FlipDirection,
    Outcomes,
    consistency_of_pairs,
    count_outcomes,
    flip_direction_of_pairs,
)
from swapjudge.errors import ArgumentError, SwapjudgeError
from swapjudge.reading.pairs import Outcome, PairTable, build_pairs
from swapjudge.reading.records import select_judges

SPLIT = "split"
NO_MAJORITY = "(no majority)"
PAIR_KEY = ("round", "item", "x", "y")


@dataclass(frozen=True)
class JudgeSummary:
    """What the swap says about one judge (or one prompt variant) on its pairs."""

    judge: str
    outcomes: Outcomes
    consistency: Consistency
    flip_direction: FlipDirection
    accuracy: Accuracy | None

    def to_dict(self) -> dict[str, Any]:
        o = self.outcomes
        return {"judge": self.judge, "pairs": {"total": o.total, "complete": o.complete, "incomplete": o.incomplete},
                "outcomes": o.to_dict(), "consistency": self.consistency.to_dict(),
                "flip_direction": self.flip_direction.to_dict(),
                "accuracy": self.accuracy.to_dict() if self.accuracy else None}


def summarize(judge: str, pairs: PairTable, confidence: float = 0.95) -> JudgeSummary:
    f = pairs.frame
    outcome = pairs.outcome
    counts = count_outcomes(outcome)
    acc = label_accuracy(f.get_column("x").to_numpy(), f.get_column("y").to_numpy(),
                         np.asarray(f.get_column("label").to_list(), dtype=object), pairs.vx, pairs.vy,
                         outcome <= Outcome.TIE, confidence, item=f.get_column("item").cast(pl.String).to_numpy())
    items = f.get_column("item").cast(pl.String).to_numpy()
    return JudgeSummary(judge, counts, consistency_of_pairs(outcome, items, confidence),
                        flip_direction_of_pairs(outcome, items, confidence), acc)


def family_of(name: str, families: Mapping[str, Sequence[str]] | None = None) -> str:
    """A model's family: the family whose listed prefix matches the name (longest prefix wins), else the name's
    first word without trailing version digits, after any "vendor/" ("gpt-4-0613" -> "gpt", "claude-3-haiku"
    -> "claude", "llama3-8b" -> "llama", but "gpt4all-13b" -> "gpt4all")."""
    lowered = name.lower().rsplit("/", 1)[-1]
    best: tuple[int, str] | None = None
    for family, prefixes in (families or {}).items():
        for prefix in prefixes:
            if lowered.startswith(prefix.lower()) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), family)
    if best is not None:
        return best[1]
    word = re.split(r"[-_ .:]", lowered, maxsplit=1)[0]
    return word.rstrip("0123456789") or word


def parse_families(specs: Sequence[str]) -> dict[str, list[str]]:
    """`gpt=gpt-4,gpt-3.5` -> {"gpt": ["gpt-4", "gpt-3.5"]} (one spec per --family option)."""
    out: dict[str, list[str]] = {}
    for spec in specs:
        family, sep, prefixes = spec.partition("=")
        names = [p.strip() for p in prefixes.split(",") if p.strip()]
        if not sep or not family.strip() or not names:
            raise ArgumentError(f"{{family}} must look like FAMILY=PREFIX[,PREFIX...], got {spec!r}", "family")
        out.setdefault(family.strip(), []).extend(names)
    return out


@dataclass(frozen=True)
class SelfPreference:
    """A judge scoring a system of its own family: its half-credit score for the system on the common pairs
    next to the other judges' mean score for it on the same pairs."""

    judge: str
    system: str
    family: str
    pairs: int
    judge_score: float | None
    others_score: float | None
    gap_low: float | None = None  # interval of the gap over items (pairs sharing an item averaged into one)
    gap_high: float | None = None
    items: int = 0
    withheld: bool = False  # the judge fails the self-consistency gate: its score for a system is a win rate

    @property
    def gap(self) -> float | None:
        if self.judge_score is None or self.others_score is None:
            return None
        return self.judge_score - self.others_score

    @property
    def supported(self) -> bool:
        """Self-preference is claimed only when the gap's interval lies above zero."""
        return self.gap_low is not None and self.gap_low > 0

    def sentence(self) -> str:
        base = f"judge {self.judge} and system {self.system} are both of the {self.family} family"
        if self.withheld:
            return base + "; its score for the system is withheld: the judge fails the self-consistency gate."
        if self.gap is None:
            return base + " (no common pairs to compare with the other judges)."
        span = ("no interval" if self.gap_low is None or self.gap_high is None else
                f"{self.gap_low:+.1%} to {self.gap_high:+.1%} over {self.items} items, items independent")
        measured = (f"on {self.pairs} common pairs it scores {self.system} {self.judge_score:.1%} against "
                    f"{self.others_score:.1%} from the other judges (gap {self.gap:+.1%}; {span})")
        if self.supported:
            return f"{base}: self-preference: {measured}."
        return f"{base}; no clear self-preference: {measured}."

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "system": self.system, "family": self.family, "pairs": self.pairs,
                "judge_score": self.judge_score, "others_score": self.others_score, "gap": self.gap,
                "gap_low": self.gap_low, "gap_high": self.gap_high, "items": self.items,
                "self_preference": self.supported, "withheld": self.withheld, "warning": self.sentence()}


@dataclass(frozen=True)
class PanelResult:
    judges: tuple[JudgeSummary, ...]
    common_pairs: int
    disagreement: Proportion  # common pairs whose order-cancelled verdicts are not all the same
    majority: dict[str, int]  # common pairs whose majority names a "winner", is a "split", or "(no majority)"
    majority_accuracy: Proportion | None  # majority verdict = label, among labelled common pairs
    pairwise_agreement: dict[str, dict[str, float | None]]  # judge -> judge -> share of common pairs agreeing
    self_preference: tuple[SelfPreference, ...]
    disagreements: pl.DataFrame = field(compare=False, repr=False)  # the review queue rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "judges": [j.to_dict() for j in self.judges],
            "common_pairs": self.common_pairs,
            "disagreement": self.disagreement.to_dict(),
            "majority": dict(self.majority),
            "majority_accuracy": self.majority_accuracy.to_dict() if self.majority_accuracy else None,
            "pairwise_agreement": self.pairwise_agreement,
            "self_preference": [s.to_dict() for s in self.self_preference],
            "disagreeing_pairs": self.disagreements.height,
        }

    def review_rows(self) -> list[dict[str, Any]]:
        """The disagreeing pairs, one JSON-ready object each, for the review queue."""
        return self.disagreements.to_dicts()


def _cancelled() -> pl.Expr:
    """The order-cancelled verdict: the consistent winner's name, else "split"."""
    o = pl.col("outcome")
    return (pl.when(o == Outcome.X_WINS).then(pl.col("x")).when(o == Outcome.Y_WINS).then(pl.col("y"))
            .otherwise(pl.lit(SPLIT)))


def _positional(code: str) -> pl.Expr:
    return pl.col(code).replace_strict({0: "first", 1: "second", 2: "tie"}, default=None, return_dtype=pl.String)


def panel_of_records(frame: pl.DataFrame, *, judges: Sequence[str] | None = None,
          families: Mapping[str, Sequence[str]] | None = None, confidence: float = 0.95,
          min_consistency: float = DEFAULT_MIN_CONSISTENCY) -> PanelResult:
    """Compare the judges of validated records (all of them, or those named) over the same pairs. A judge whose
    swap-consistency is below `min_consistency` gets no self-preference score (a score for a system is a win
    rate, and the gate withholds win rates)."""
    present = select_judges(frame)
    chosen = [j for name in judges for j in select_judges(frame, name)] if judges else present
    if len(chosen) < 2:
        raise SwapjudgeError("a panel needs at least two judges; judges in the file: "
                             + ", ".join(repr(j) for j in present))
    pairs = build_pairs(frame.filter(pl.col("judge").is_in(chosen))).frame
    summaries = panel_with_holm(tuple(summarize(name, PairTable(pairs.filter(pl.col("judge") == name)), confidence)
                                 for name in chosen))

    complete = pairs.filter(pl.col("outcome") != Outcome.INCOMPLETE).with_columns(
        _cancelled().alias("cancelled"), _positional("vx").alias("x_first"), _positional("vy").alias("y_first"))
    wide = complete.pivot(on="judge", index=list(PAIR_KEY), values="cancelled", aggregate_function="first")
    wide = wide.drop_nulls(subset=chosen)  # common pairs: complete for every judge
    labels = pairs.group_by(list(PAIR_KEY)).agg(pl.col("label").drop_nulls().first())
    wide = wide.join(labels, on=list(PAIR_KEY), how="left").sort(list(PAIR_KEY))
    verdicts = wide.select(chosen).to_numpy().astype(object)
    n = verdicts.shape[0]
    disagree = np.array([len(set(row)) > 1 for row in verdicts], dtype=bool)
    majority = np.array([_majority(row) for row in verdicts], dtype=object)
    x, y = wide.get_column("x").to_numpy(), wide.get_column("y").to_numpy()
    majority_counts = {"winner": int(np.sum((majority == x) | (majority == y))), SPLIT: int(np.sum(majority == SPLIT)),
                       NO_MAJORITY: int(np.sum(majority == NO_MAJORITY))}
    label = np.asarray(wide.get_column("label").to_list(), dtype=object)
    named = np.array([lab is not None and lab in (a, b) for lab, a, b in zip(label, x, y, strict=True)], dtype=bool)
    majority_accuracy = (wilson(int(np.sum(majority[named] == label[named])), int(named.sum()), confidence)
                         if named.any() else None)
    pairwise = {a: {b: (float(np.mean(verdicts[:, i] == verdicts[:, j])) if n else None)
                    for j, b in enumerate(chosen) if b != a} for i, a in enumerate(chosen)}

    review = _review_rows(complete, wide.filter(pl.Series(disagree)), majority[disagree], chosen)
    return PanelResult(
        judges=summaries, common_pairs=n, disagreement=wilson(int(disagree.sum()), n, confidence),
        majority=majority_counts, majority_accuracy=majority_accuracy, pairwise_agreement=pairwise,
        self_preference=_self_preference(chosen, verdicts, x, y, families, wide.get_column("item").to_numpy(),
                                         confidence, {s.judge for s in summaries if s.consistency.rate is None
                                                      or s.consistency.rate < min_consistency}),
        disagreements=review,
    )


def _majority(row: np.ndarray) -> str:
    values, counts = np.unique(row.astype(str), return_counts=True)
    top = int(np.argmax(counts))
    return str(values[top]) if counts[top] * 2 > row.size else NO_MAJORITY


def _review_rows(complete: pl.DataFrame, disagreeing: pl.DataFrame, majority: np.ndarray,
                 judges: Sequence[str]) -> pl.DataFrame:
    """One row per disagreeing pair: its key, label, majority and every judge's verdicts (order-cancelled and
    positional in each order)."""
    detail = complete.select(*PAIR_KEY, "judge", "cancelled", "x_first", "y_first")
    keyed = disagreeing.select(*PAIR_KEY, "label").with_columns(pl.Series("majority", majority.tolist(),
                                                                          dtype=pl.String))
    verdicts = (detail.join(keyed.select(PAIR_KEY), on=list(PAIR_KEY), how="inner")
                .filter(pl.col("judge").is_in(list(judges)))
                .group_by(list(PAIR_KEY))
                .agg(pl.struct(pl.col("judge"), pl.col("cancelled").alias("verdict"), pl.col("x_first"),
                               pl.col("y_first")).alias("judges")))
    return keyed.join(verdicts, on=list(PAIR_KEY), how="left").sort(list(PAIR_KEY))


def panel_with_holm(summaries: tuple[JudgeSummary, ...]) -> tuple[JudgeSummary, ...]:
    """The judges' flip-direction tests are run at once: each gets its Holm-adjusted p."""
    adjusted = holm([s.flip_direction.p_value for s in summaries])
    return tuple(replace(s, flip_direction=replace(s.flip_direction, p_holm=p))
                 for s, p in zip(summaries, adjusted, strict=True))


def item_mean_interval(values: np.ndarray, items: np.ndarray,
                       confidence: float = 0.95) -> tuple[float | None, float | None, int]:
    """Student-t interval of the mean of per-item means: pairs that share an item are averaged into one
    observation, so items, not pairs, are what the interval treats as independent."""
    _, inverse = np.unique(items.astype(str), return_inverse=True)
    per_item = np.bincount(inverse, weights=values) / np.bincount(inverse)
    n = int(per_item.size)
    if n < 2:
        return None, None, n
    half = float(special.stdtrit(n - 1, 0.5 + confidence / 2)) * float(per_item.std(ddof=1)) / float(np.sqrt(n))
    mean = float(per_item.mean())
    return mean - half, mean + half, n


def _self_preference(judges: Sequence[str], verdicts: np.ndarray, x: np.ndarray, y: np.ndarray,
                     families: Mapping[str, Sequence[str]] | None, items: np.ndarray,
                     confidence: float = 0.95, failed: set[str] | None = None) -> tuple[SelfPreference, ...]:
    systems = sorted(set(x.tolist()) | set(y.tolist()))
    warnings = []
    for j, judge in enumerate(judges):
        family = family_of(judge, families)
        for system in systems:
            if family_of(system, families) != family:
                continue
            involved = (x == system) | (y == system)
            if not involved.any():
                continue
            # half-credit score for the system: 1 when the verdict names it, 1/2 for a split, 0 otherwise
            scores = np.where(verdicts[involved] == system, 1.0, np.where(verdicts[involved] == SPLIT, 0.5, 0.0))
            others = np.delete(scores, j, axis=1)
            if judge in (failed or set()):
                warnings.append(SelfPreference(judge, system, family, int(involved.sum()), None, None,
                                               withheld=True))
                continue
            if not others.size:
                warnings.append(SelfPreference(judge, system, family, int(involved.sum()),
                                               float(scores[:, j].mean()), None))
                continue
            # the gap per pair: this judge's score minus the other judges' mean score on the same pair
            low, high, n_items = item_mean_interval(scores[:, j] - others.mean(axis=1), items[involved], confidence)
            warnings.append(SelfPreference(judge, system, family, int(involved.sum()), float(scores[:, j].mean()),
                                           float(others.mean()), low, high, n_items))
    return tuple(warnings)
