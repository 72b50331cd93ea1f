"""The human-corrected win rate: a judge's order-cancelled pair scores on every item, corrected by people's
scores on the items they labelled (prediction-powered inference, `core.ppi`).

A pair score is what one item's pair of a and b is worth to a: 1 for a win of a, 0 for a win of b, and for a
split (a tie, a flip, a half-tie) what the tie policy gives it (half_credit 0.5, no_credit 0). A judge's pair
judged in both orders is scored by its order-cancelled outcome; a single call (one order only, as a person's
review sheet usually is) by its verdict. Several rounds or reviewers of one item are averaged into one score, so
the item stays the independent unit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from swapjudge.core.active_ppi import UNIFORM, corrected_mean
from swapjudge.core.policy import Gate, TiePolicy
from swapjudge.core.ppi import PPIResult
from swapjudge.errors import InputError

SPLIT_VALUE = {TiePolicy.half_credit: 0.5, TiePolicy.no_credit: 0.0}
# people's records of a priority queue (`origin` queue, as `swapjudge review export` writes) are not a random
# sample of the items: a correction from them would be biased, so they never enter it
QUEUE_ORIGIN = "queue"

PI = "pi"  # a person's record: the probability its item was drawn for labelling (review serve records it)
NO_PI_NOTE = ("the people's records carry no `pi` (the probability each item was drawn): they are read as a "
              "uniform random sample of the judge's items")

VALID_SENTENCE = ("the corrected win rate is unbiased for the people's win rate whatever the judge's position "
                  "or preference bias: the judge only narrows the interval, by as much as its scores track "
                  "the people's")


def item_score_frame(frame: pl.DataFrame, a: str, b: str, policy: TiePolicy | str, *, source: str) -> pl.DataFrame:
    """One score per item for a against b: columns `item`, `score`, `orders` (most orders any pair had)."""
    policy = TiePolicy(policy)
    if policy not in SPLIT_VALUE:
        raise InputError(f"calibrate needs a tie policy that gives every pair a score (half_credit or "
                         f"no_credit), not {policy.value}", path=source)
    split = SPLIT_VALUE[policy]
    calls = frame.filter(
        ((pl.col("first") == a) & (pl.col("second") == b)) | ((pl.col("first") == b) & (pl.col("second") == a))
    ).filter(pl.col("verdict").is_not_null())
    if calls.height == 0:
        raise InputError(f"no usable verdict compares {a!r} with {b!r}", path=source)
    named = (pl.when(pl.col("verdict") == "first").then(pl.col("first"))
             .when(pl.col("verdict") == "second").then(pl.col("second")).otherwise(pl.lit("tie")))
    calls = calls.with_columns(
        pl.when(named == a).then(1.0).when(named == b).then(0.0).otherwise(pl.lit(None, dtype=pl.Float64))
        .alias("_s"))
    pairs = calls.group_by("judge", "round", "item").agg(
        pl.col("_s").min().alias("lo"), pl.col("_s").max().alias("hi"), pl.col("_s").null_count().alias("ties"),
        pl.len().alias("calls"))
    # a win counts only when every call of the pair names the same system and none says tie
    pairs = pairs.with_columns(
        pl.when((pl.col("ties") == 0) & (pl.col("lo") == 1.0)).then(1.0)
        .when((pl.col("ties") == 0) & (pl.col("hi") == 0.0)).then(0.0)
        .otherwise(split).alias("score"))
    return pairs.group_by("item").agg(pl.col("score").mean(), pl.col("calls").max().alias("orders")).sort("item")


@dataclass(frozen=True)
class Calibration:
    """`calibrate`'s result: the PPI estimate, the judge's gate, and what was matched."""

    a: str
    b: str
    judge: str | None
    policy: TiePolicy
    ppi: PPIResult
    gate: Gate
    n_judge: int
    human_items_unmatched: int
    human_single_order: bool
    notes: tuple[str, ...]
    design: str = UNIFORM  # uniform (no pi, or all equal: PPI++) or active (pi vary: 1/pi-weighted PPI)
    pi_recorded: bool = False

    def to_dict(self) -> dict[str, Any]:
        ppi = self.ppi.to_dict()
        judge_only = ppi["judge_only"] if self.gate.passed else {**ppi["judge_only"], "value": None, "low": None,
                                                                  "high": None, "withheld": True}
        return {
            "judge": self.judge, "systems": {"a": self.a, "b": self.b}, "tie_policy": self.policy.value,
            "corrected": ppi["corrected"], "human_only": ppi["human_only"], "judge_only": judge_only,
            "rectifier": ppi["rectifier"], "n_human": self.ppi.n_human, "n_judge": self.n_judge,
            "n_unlabelled": self.ppi.n_unlabelled, "lambda": self.ppi.lam, "correlation": self.ppi.correlation,
            "width_ratio": self.ppi.width_ratio, "confidence": self.ppi.confidence, "gate": self.gate.to_dict(),
            "human_items_unmatched": self.human_items_unmatched, "human_single_order": self.human_single_order,
            "valid": VALID_SENTENCE, "notes": list(self.notes), "design": self.design,
            "pi_recorded": self.pi_recorded,
        }


def calibrate_records(judge_frame: pl.DataFrame, human_frame: pl.DataFrame, a: str, b: str, *, gate: Gate,
                      judge: str | None = None, tie_policy: TiePolicy | str = TiePolicy.half_credit,
                      confidence: float = 0.95, judge_source: str = "judge records",
                      human_source: str = "human records") -> Calibration:
    """The PPI++ win rate of a against b from one judge's records and people's records on some of its items."""
    policy = TiePolicy(tie_policy)
    queued = 0
    if "origin" in human_frame.columns:
        from_queue = (human_frame.get_column("origin").cast(pl.String) == QUEUE_ORIGIN).fill_null(False)
        queued = int(from_queue.sum())
        if queued == human_frame.height:
            raise InputError(f"all {queued} human records come from a priority queue (origin {QUEUE_ORIGIN}), "
                             "not a random sample: the corrected win rate needs a random sample's labels",
                             path=human_source)
        human_frame = human_frame.filter(~from_queue)
    judged = item_score_frame(judge_frame, a, b, policy, source=judge_source)
    people = item_score_frame(human_frame, a, b, policy, source=human_source)
    matched = people.join(judged, on="item", how="inner", suffix="_judge")
    if matched.height == 0:
        raise InputError(f"none of the {people.height} labelled items is among the judge's "
                         f"{judged.height} items (items are matched by their `item` id)", path=human_source)
    labelled = set(matched.get_column("item").to_list())
    rest = judged.filter(~pl.col("item").is_in(list(labelled)))
    pi = item_pi(human_frame, people, source=human_source)
    pi_labelled = None
    if pi is not None:
        pi_labelled = matched.join(pi, on="item", how="left").get_column(PI).to_numpy()
    result, design = corrected_mean(matched.get_column("score").to_numpy(),
                                    matched.get_column("score_judge").to_numpy(), rest.get_column("score").to_numpy(),
                                    pi_labelled, confidence=confidence)
    notes: list[str] = []
    if pi is None:
        notes.append(NO_PI_NOTE)
    elif design == UNIFORM:
        notes.append("every labelled item had the same probability `pi` of being drawn: a uniform design (PPI++)")
    elif pi_labelled is not None:
        notes.append(f"labels drawn with unequal probabilities `pi` ({float(pi_labelled.min()):.3g} to "
                     f"{float(pi_labelled.max()):.3g}): each label's correction is weighted by 1/pi, so the "
                     "estimate stays unbiased for the people's win rate over the judge's items")
    if queued:
        notes.append(f"{queued} human record(s) of a priority queue (origin {QUEUE_ORIGIN}) are left out: only "
                     "a random sample's labels give an unbiased correction")
    unmatched = people.height - matched.height
    if unmatched:
        notes.append(f"{unmatched} labelled item(s) have no judge score for this pair and are left out")
    if result.lam == 0.0:
        notes.append("lambda = 0: the judge's scores do not track the people's on the labelled items, so the "
                     "corrected figure is the people's own, with their interval")
    if not gate.passed:
        notes.append(f"the judge's own win rate is withheld ({gate.reason}); the corrected one does not rely on "
                     "the judge's consistency")
    return Calibration(a=a, b=b, judge=judge, policy=policy, ppi=result, gate=gate, n_judge=judged.height,
                       human_items_unmatched=unmatched,
                       human_single_order=bool((people.get_column("orders") == 1).all()), notes=tuple(notes),
                       design=design, pi_recorded=pi is not None)


def item_pi(human_frame: pl.DataFrame, people: pl.DataFrame, *, source: str) -> pl.DataFrame | None:
    """Each labelled item's drawing probability (columns `item`, `pi`), or None when no record carries one.

    Every record of an item must carry the same `pi` in (0, 1]; a file where some items have it and others not
    is refused, since the two kinds of labels cannot be weighted together."""
    if PI not in human_frame.columns:
        return None
    raw = human_frame.select("item", pl.col(PI).alias("_raw"))
    values = raw.with_columns(pl.col("_raw").cast(pl.Float64, strict=False).alias(PI))
    bad = values.filter(pl.col("_raw").is_not_null() & (pl.col(PI).is_null() | pl.col(PI).is_nan()
                                                          | (pl.col(PI) <= 0.0) | (pl.col(PI) > 1.0)))
    if bad.height:
        raise InputError(f"item {bad.get_column('item')[0]!r}: `pi` must be a probability in (0, 1], got "
                         f"{bad.get_column('_raw')[0]!r}", path=source, field=PI)
    if values.get_column(PI).null_count() == values.height:
        return None
    per_item = values.group_by("item").agg(pl.col(PI).min().alias("lo"), pl.col(PI).max().alias("hi"),
                                           pl.col(PI).null_count().alias("missing"))
    missing = per_item.filter(pl.col("missing") > 0)
    if missing.height:
        raise InputError(f"item {missing.get_column('item')[0]!r} has a record without `pi` while others carry "
                         "one: give every record its item's drawing probability, or none", path=source, field=PI)
    differ = per_item.filter(pl.col("hi") - pl.col("lo") > 1e-12)
    if differ.height:
        raise InputError(f"item {differ.get_column('item')[0]!r} carries different `pi` on its records "
                         f"({differ.get_column('lo')[0]} and {differ.get_column('hi')[0]}): an item has one "
                         "drawing probability", path=source, field=PI)
    return per_item.select("item", pl.col("lo").alias(PI)).join(people.select("item"), on="item", how="semi")


def _design_words(result: Calibration) -> str:
    if result.design == UNIFORM:
        return "uniform sample" + ("" if result.pi_recorded else ", assumed: no `pi` recorded")
    return "active sample, each label weighted by 1/pi"


def calibration_sentences(result: Calibration) -> list[str]:
    """The plain-words reading of a calibration, each sentence only where the numbers support it."""
    p = result.ppi
    level = f"{round(p.confidence * 100)}%"
    out = []
    c, h = p.corrected, p.human_only
    out.append(f"corrected win rate of {result.a} over {result.b}: {c.value:.3f} ({level} interval "
               f"{c.low:.3f}–{c.high:.3f}), from {result.n_judge} judged items of which {p.n_human} labelled "
               f"by people ({_design_words(result)}); items are the independent units")
    out.append(f"people alone: {h.value:.3f} ({h.low:.3f}–{h.high:.3f}) on {p.n_human} items")
    if result.gate.passed:
        j = p.judge_only
        out.append(f"judge alone: {j.value:.3f} ({j.low:.3f}–{j.high:.3f}) on {j.n} items")
    else:
        out.append(f"judge alone: withheld ({result.gate.reason})")
    r = p.rectifier
    bias = (f"the judge's bias on the labelled items (person − judge): {r.value:+.3f} "
            f"({r.low:+.3f} to {r.high:+.3f})")
    if r.low is not None and r.high is not None and (r.low > 0 or r.high < 0):
        bias += "; the interval excludes 0: the judge's own win rate is off the people's"
    out.append(bias)
    ratio = p.width_ratio
    out.append(f"lambda = {p.lam:.3f}" + (f"; the corrected interval is {ratio:.0%} of the people-only width"
                                          if ratio is not None else ""))
    out.append(VALID_SENTENCE)
    return out + list(result.notes)
