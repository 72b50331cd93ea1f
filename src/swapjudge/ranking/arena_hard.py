"""arena-hard-auto's own score (`show_result.py`), reproduced from presentation records, for comparison only.

What arena-hard-auto v0.1's `show_result.py` computes (lmarena/arena-hard-auto; read, not copied):

- battles: every judge call (a "game") on its own, the two games of a question never reconciled; the winner
  named by the label, a tie half a win; a strong label (`A>>B`, `B>>A`) is repeated `weight` = 3 times, a
  slight one or a tie counted once; a game without a usable label is dropped, its twin kept;
- a Bradley-Terry fit by logistic regression without intercept and without penalty on those battles (each
  battle duplicated, a tie as one win in one copy and one loss in the other), scores on the Elo scale and
  anchored at the baseline;
- the score of a model: its predicted win rate against the baseline, in percent (`predict_win_rate`), printed
  to one decimal after rounding to two.

The fit here maximises the same likelihood (ties as half wins, no penalty) with the baseline's strength fixed
at 0, which removes the free common shift and makes the maximum unique, by Newton's method to rounding. In
arena-hard's design every battle is against the baseline, and then each model's score is exactly its battles'
mean score; v2's `show_result.py` (without style control) reports that mean directly (as the centre of 100
unseeded bootstrap means) and keeps only questions with both games usable: `complete_pairs_only=True` does the
same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from scipy.special import expit

from swapjudge.core.graded import ARENA_HARD_WEIGHT, NO_LEVEL, levels
from swapjudge.errors import InputError
from swapjudge.ranking.battles import choose_judge
from swapjudge.ranking.bradley_terry import Battle
from swapjudge.reading.codes import MISSING, VERDICT_CODES
from swapjudge.reading.records import STRENGTH, RecordSet


@dataclass(frozen=True)
class ArenaHardScore:
    """One model's arena-hard score against the baseline."""

    model: str
    score: float  # percent, unrounded: 100 x the fitted P(model beats baseline)
    battles: int
    calls: int

    @property
    def shown(self) -> float:
        """The figure show_result prints: rounded to two decimals, then shown to one."""
        return round(round(self.score, 2), 1)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "score": self.score, "shown": self.shown, "battles": self.battles,
                "calls": self.calls}


@dataclass(frozen=True)
class ArenaHardScores:
    """arena-hard's leaderboard of these records: every model's score against `baseline`, best first."""

    baseline: str
    weight: int
    scores: tuple[ArenaHardScore, ...]
    left_out: int  # calls naming a slot without a strength: no arena-hard label, so no battle
    converged: bool
    complete_pairs_only: bool = False
    convention: str = field(default=(
        "arena-hard-auto's show_result: every call its own battle, a strong verdict as 3 battles, a tie half a "
        "win, the two orders never reconciled; Bradley-Terry by unpenalised logistic regression, the score is "
        "the predicted win rate against the baseline in percent"))

    def __getitem__(self, model: str) -> ArenaHardScore:
        for s in self.scores:
            if s.model == model:
                return s
        raise KeyError(f"no arena-hard score for {model!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline, "weight": self.weight, "convention": self.convention,
                "complete_pairs_only": self.complete_pairs_only, "left_out": self.left_out,
                "converged": self.converged, "scores": [s.to_dict() for s in self.scores]}


def _fit_anchored(names: list[str], baseline: str, first: np.ndarray, second: np.ndarray, battle: np.ndarray,
                  repeat: np.ndarray, max_iter: int = 100) -> tuple[dict[str, float], bool]:
    """Bradley-Terry log-strengths with the baseline at 0, by Newton's method on the weighted battles (a tie half a
    win each way): arena-hard's logistic regression, its free common shift fixed at the baseline, so the maximum
    is unique and Newton reaches it to rounding. Returns the strengths and whether it converged."""
    others = [n for n in names if n != baseline]
    column = {n: i for i, n in enumerate(others)}
    won = np.where(battle == Battle.TIE, 0.5, np.where(battle == Battle.LEFT, 1.0, 0.0))
    left = np.array([column.get(n, -1) for n in first])
    right = np.array([column.get(n, -1) for n in second])
    x = np.zeros((won.size, len(others)))
    rows = np.arange(won.size)
    x[rows[left >= 0], left[left >= 0]] = 1.0
    x[rows[right >= 0], right[right >= 0]] = -1.0
    beta = np.zeros(len(others))
    for _ in range(max_iter):
        p = expit(x @ beta)
        gradient = x.T @ (repeat * (won - p))
        hessian = (x * (repeat * p * (1 - p))[:, None]).T @ x
        step = np.linalg.lstsq(hessian, gradient, rcond=None)[0]
        beta += step
        if float(np.abs(step).max()) < 1e-13:
            return {n: float(beta[column[n]]) for n in others}, True
    return {n: float(beta[column[n]]) for n in others}, False


def arena_hard_scores(records: RecordSet | pl.DataFrame, baseline: str, *, judge: str | None = None,
                      weight: int = ARENA_HARD_WEIGHT, complete_pairs_only: bool = False) -> ArenaHardScores:
    """Every model's arena-hard-auto score against `baseline` from graded records (see the module docstring)."""
    source = records.source if isinstance(records, RecordSet) else "records"
    frame = choose_judge(records.frame if isinstance(records, RecordSet) else records, judge, source)
    if STRENGTH not in frame.columns:
        raise InputError("the records carry no `strength`: arena-hard's score weighs strong verdicts, so it needs "
                         "graded verdicts", path=source)
    calls = frame.filter(pl.col("first") != pl.col("second"))
    systems = set(calls.get_column("first").to_list()) | set(calls.get_column("second").to_list())
    if baseline not in systems:
        raise InputError(f"baseline {baseline!r} is not in the records; systems: {', '.join(sorted(systems))}",
                         path=source)
    code = calls.get_column("verdict").replace_strict(VERDICT_CODES, default=MISSING, return_dtype=pl.Int8) \
        .fill_null(MISSING).to_numpy()
    level = levels(code, calls.get_column(STRENGTH).fill_null(0).to_numpy())
    usable = level != NO_LEVEL
    left_out = int(((code != MISSING) & ~usable).sum())
    if complete_pairs_only:  # v2: a question counts only when both its games are usable
        key = calls.select(pl.concat_str([pl.col("round").cast(pl.String), pl.col("item"),
                                          pl.min_horizontal("first", "second"), pl.max_horizontal("first", "second")],
                                         separator="\x1f")).to_series()
        good = pl.DataFrame({"key": key, "usable": usable}).group_by("key").agg(
            (pl.col("usable").all() & (pl.len() == 2)).alias("ok"))
        ok = dict(zip(good.get_column("key").to_list(), good.get_column("ok").to_list(), strict=True))
        usable &= np.array([ok[k] for k in key.to_list()], dtype=bool)
    first = np.asarray(calls.get_column("first").to_list(), dtype=object)[usable]
    second = np.asarray(calls.get_column("second").to_list(), dtype=object)[usable]
    level = level[usable]
    if level.size == 0:
        raise InputError("no call with an arena-hard label (a verdict with its strength, or a tie)", path=source)
    battle = np.where(level < 2, Battle.LEFT, np.where(level == 2, Battle.TIE, Battle.RIGHT))
    repeat = np.where((level == 0) | (level == 4), weight, 1)
    names = sorted(set(first) | set(second))
    if ((first == baseline) | (second == baseline)).all():
        # every battle against the baseline (arena-hard's design): the likelihood splits by model, and each
        # model's maximum is its battles' mean score, in closed form
        won = np.where(battle == Battle.TIE, 0.5, np.where(battle == Battle.LEFT, 1.0, 0.0))
        converged = True

        def probability(name: str) -> float:
            mine = (first == name) | (second == name)
            score = np.where(first[mine] == name, won[mine], 1 - won[mine])
            return float((score * repeat[mine]).sum() / repeat[mine].sum())
    else:
        strengths, converged = _fit_anchored(names, baseline, first, second, battle, repeat)

        def probability(name: str) -> float:
            return float(expit(strengths[name]))
    rows = []
    for name in names:
        if name == baseline:
            continue
        mine = (first == name) | (second == name)
        rows.append(ArenaHardScore(name, 100 * probability(name), int(repeat[mine].sum()), int(mine.sum())))
    rows.sort(key=lambda s: -s.score)
    return ArenaHardScores(baseline, weight, tuple(rows), left_out, converged, complete_pairs_only)
