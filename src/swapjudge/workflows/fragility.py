"""The fragility of a verdict (`decide --fragility`, `analyze --fragility`): the items read, the search
(`decision.fragility`), and each answer confirmed by deciding again, through `swapjudge.decide` itself, on the
records without (or with flipped) those items."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from swapjudge.decision.file import DecisionFile
from swapjudge.decision.fragility import (
    AGAINST,
    DEFAULT_BUDGET,
    Fragility,
    SplitsWorstCase,
    VerdictChange,
    VerdictRule,
    fragility,
    item_table,
)
from swapjudge.reading.codes import MISSING
from swapjudge.reading.pairs import PairTable


def decision_fragility(pairs: PairTable, calls: pl.DataFrame, spec: DecisionFile, *, early: bool,
                       allow_missing: int, unmade_calls: int, decide: Callable[..., Any],
                       budget: int = DEFAULT_BUDGET) -> Fragility:
    """The fragility of the verdict `decide` gives on these pairs (the items it read) and calls; `decide` is
    `workflows.decide.decide`, passed in (it calls this module), which confirms every answer."""
    frame = pairs.frame
    missing = (np.asarray(pairs.vx) == MISSING).astype(int) + (np.asarray(pairs.vy) == MISSING).astype(int)
    table = item_table(frame.get_column("item").to_numpy(), frame.get_column("outcome").to_numpy(),
                       (frame.get_column("x") == spec.candidate).to_numpy(), missing, str(spec.tie_policy))
    rule = VerdictRule(policy=str(spec.tie_policy), bar=spec.bar, alpha=spec.alpha, monitoring=spec.monitoring,
                       min_consistency=spec.min_consistency, allowed_missing=allow_missing,
                       extra_missing=unmade_calls, early=early)
    result = fragility(table, rule, budget=budget)
    if unmade_calls:  # calls never made are not in the records: a recomputation from them could not count them
        return result
    again = _Again(calls, spec, early, allow_missing, decide)
    drop = _confirm(result.drop, again)
    flip = _confirm(result.flip, again)
    worst = result.splits_worst_case
    worst = dataclasses.replace(worst, confirmed=again.resolved(AGAINST) == worst.against
                                and again.resolved("for") == worst.toward)
    return dataclasses.replace(result, drop=drop, flip=flip, splits_worst_case=worst)


def _confirm(change: VerdictChange, again: _Again) -> VerdictChange:
    if change.items is None:
        return change
    got = again.dropped(change.ids) if change.kind == "drop" else again.flipped(change.ids, change.direction or "")
    return dataclasses.replace(change, confirmed=got == change.to)


class _Again:
    """`swapjudge.decide` on the same calls, changed."""

    def __init__(self, calls: pl.DataFrame, spec: DecisionFile, early: bool, allow_missing: int,
                 decide: Callable[..., Any]) -> None:
        self.calls, self.decide = calls, decide
        # the planned items taken as read (a removed item is not one still to come), unless they were not all in
        self.spec = spec if early else spec.model_copy(update={"items": None})
        self.allow_missing = allow_missing

    def _decide(self, calls: pl.DataFrame) -> str:
        return str(self.decide(calls, self.spec, allow_missing=self.allow_missing).verdict)

    def dropped(self, ids: tuple[str, ...]) -> str:
        return self._decide(self.calls.filter(~pl.col("item").is_in(list(ids))))

    def flipped(self, ids: tuple[str, ...], direction: str) -> str:
        return self._decide(turn(self.calls, direction, self.spec, items=ids))

    def resolved(self, direction: str) -> str:
        return self._decide(turn(self.calls, direction, self.spec, splits_only=True))


def turn(calls: pl.DataFrame, direction: str, spec: DecisionFile | Any, *, items: tuple[str, ...] | None = None,
         splits_only: bool = False) -> pl.DataFrame:
    """The calls with every complete pair of `items` (or every swap-inconsistent pair) turned into a consistent
    win of the incumbent (`direction` against) or of the candidate."""
    target = spec.incumbent if direction == AGAINST else spec.candidate
    key = ["judge", "round", "item"]
    named = (pl.when(pl.col("verdict") == "first").then(pl.col("first"))
             .when(pl.col("verdict") == "second").then(pl.col("second")).otherwise(pl.col("verdict")))
    frame = calls.with_columns(_named=named)
    frame = frame.with_columns(
        _complete=pl.col("verdict").is_not_null().all().over(key),
        _consistent=(pl.col("_named").n_unique().over(key) == 1))
    chosen = pl.col("_complete") & (~pl.col("_consistent") if splits_only else pl.col("item").is_in(list(items or ())))
    turned = pl.when(pl.col("first") == target).then(pl.lit("first")).otherwise(pl.lit("second"))
    return frame.with_columns(verdict=pl.when(chosen).then(turned).otherwise(pl.col("verdict"))).drop(
        "_named", "_complete", "_consistent")


__all__ = ["SplitsWorstCase", "decision_fragility", "turn"]
