"""Prompt variants: the same pairs judged under two judge prompts (with and without chain-of-thought, two rubric
wordings), compared on consistency, flip direction and accuracy.

A variant is the records with one value of a field: `judge` (two judge configurations in one file, or two
files whose judges are named apart) or `round` (two runs of one judge in one file). The paired test uses the
pairs both variants judged completely: McNemar's exact test on per-pair consistency, i.e. an exact two-sided
binomial test of the discordant pairs (consistent under one variant only) against 1/2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from swapjudge.core.stats import binomial_p
from swapjudge.errors import ArgumentError, SwapjudgeError
from swapjudge.probes.panel import JudgeSummary, panel_with_holm, summarize
from swapjudge.reading.pairs import Outcome, PairTable, build_pairs

VARIANT_FIELDS = ("judge", "round")


@dataclass(frozen=True)
class McNemar:
    """Per-pair consistency under variants a and b over the pairs both judged completely."""

    pairs: int
    both: int  # consistent under both
    only_a: int  # consistent under a only
    only_b: int
    neither: int
    p_value: float | None  # exact two-sided binomial test of only_a of (only_a + only_b) against 1/2

    @property
    def difference(self) -> float | None:
        """Consistency of a minus consistency of b on the common pairs."""
        return None if self.pairs == 0 else (self.only_a - self.only_b) / self.pairs

    def to_dict(self) -> dict[str, Any]:
        return {"pairs": self.pairs, "both": self.both, "only_a": self.only_a, "only_b": self.only_b,
                "neither": self.neither, "difference": self.difference, "p_value": self.p_value}


def mcnemar(consistent_a: np.ndarray, consistent_b: np.ndarray) -> McNemar:
    """McNemar's exact test from two boolean vectors over the same pairs."""
    a, b = np.asarray(consistent_a, dtype=bool), np.asarray(consistent_b, dtype=bool)
    if a.shape != b.shape:
        raise ValueError("both variants must cover the same pairs")
    only_a, only_b = int(np.sum(a & ~b)), int(np.sum(~a & b))
    return McNemar(int(a.size), int(np.sum(a & b)), only_a, only_b, int(np.sum(~a & ~b)),
                   binomial_p(only_a, only_a + only_b))


@dataclass(frozen=True)
class VariantComparison:
    field: str
    a: JudgeSummary
    b: JudgeSummary
    test: McNemar

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "a": self.a.to_dict(), "b": self.b.to_dict(), "mcnemar": self.test.to_dict()}


def compare_variants(frame: pl.DataFrame, a: str, b: str, *, field: str = "judge",
                     confidence: float = 0.95) -> VariantComparison:
    """Compare variant `a` with variant `b` (values of `field`, judge or round) over validated records."""
    if field not in VARIANT_FIELDS:
        raise SwapjudgeError(f"variants are told apart by one of {', '.join(VARIANT_FIELDS)}, not {field!r}")
    if a == b:
        raise SwapjudgeError("name two different variants")
    values = frame.get_column(field).cast(pl.String)
    present = sorted(set(values.to_list()))
    for name in (a, b):
        if name not in present:
            raise SwapjudgeError(f"no records with {field} {name!r}; values: " + ", ".join(repr(v) for v in present))
    tagged = frame.with_columns(values.alias("_variant"))
    key = ["judge", "round", "item", "x", "y"]
    key.remove(field)
    if field == "round" and tagged.get_column("judge").n_unique() > 1:
        raise ArgumentError("round variants need one judge: pass {judge} to pick it", "judge")
    tables = {}
    for name in (a, b):
        part = tagged.filter(pl.col("_variant") == name).drop("_variant")
        if field == "round":
            part = part.with_columns(pl.lit(0, dtype=pl.Int64).alias("round"))
        tables[name] = build_pairs(part).frame
    summaries = list(panel_with_holm(tuple(summarize(name, PairTable(tables[name]), confidence) for name in (a, b))))
    done = {name: tables[name].filter(pl.col("outcome") != Outcome.INCOMPLETE)
            .select(*key, (pl.col("outcome") <= Outcome.TIE).alias(f"c_{i}")) for i, name in enumerate((a, b))}
    common = done[a].join(done[b], on=key, how="inner")
    test = mcnemar(common.get_column("c_0").to_numpy(), common.get_column("c_1").to_numpy())
    return VariantComparison(field, summaries[0], summaries[1], test)
