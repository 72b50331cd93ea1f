"""Tie policies, win rates and the gate (DESIGN 3.3).

A split is any complete pair that is not a consistent win: a consistent tie, a flip, a half-tie. The policy,
fixed before the run, says what a split is worth. Every interval is over pairs, never over calls.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

from swapjudge.core.stats import Independence, MeanInterval, mean_interval, proportion_interval


class TiePolicy(enum.StrEnum):
    half_credit = "half_credit"
    exclude = "exclude"
    no_credit = "no_credit"
    separate = "separate"


DEFAULT_MIN_CONSISTENCY = 0.70


@dataclass(frozen=True)
class Rate:
    """A rate with its interval; `method` and `independence` say how the interval was made and what it treated
    as independent (pairs, or items when pairs share one)."""

    value: float | None
    low: float | None
    high: float | None
    method: str = "wilson"
    independence: Independence | None = None
    effective_n: float | None = None

    @classmethod
    def of(cls, m: MeanInterval) -> Rate:
        return cls(m.value, m.low, m.high, m.method, m.independence, m.effective_n)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "low": self.low, "high": self.high, "method": self.method,
                               "effective_n": self.effective_n}
        if self.independence is not None:
            out.update(self.independence.to_dict())
        return out


@dataclass(frozen=True)
class WinRate:
    """System a's win rate against b under every policy; `policy` names the headline one."""

    a: str
    b: str
    a_wins: int
    b_wins: int
    splits: int
    policy: TiePolicy
    half_credit: Rate
    exclude: Rate
    no_credit: Rate
    separate_a: Rate
    separate_b: Rate
    separate_split: Rate
    # FastChat's per-game convention: each call counts, a tie half a win in that call, so a half-tie pair is
    # worth 3/4; reported beside the headline for comparison with published figures, never as the headline
    per_call: Rate | None = None

    @property
    def pairs(self) -> int:
        return self.a_wins + self.b_wins + self.splits

    @property
    def headline(self) -> Rate:
        return {TiePolicy.half_credit: self.half_credit, TiePolicy.exclude: self.exclude,
                TiePolicy.no_credit: self.no_credit, TiePolicy.separate: self.separate_a}[self.policy]

    @property
    def margin(self) -> float | None:
        """Consistent-win lead of one system over the other, as a share of complete pairs."""
        return None if self.pairs == 0 else abs(self.a_wins - self.b_wins) / self.pairs

    def to_dict(self) -> dict[str, Any]:
        h = self.headline
        return {
            "policy": self.policy.value, "value": h.value, "low": h.low, "high": h.high,
            "half_credit": self.half_credit.value, "exclude": self.exclude.value, "no_credit": self.no_credit.value,
            "separate": {"a": self.separate_a.value, "b": self.separate_b.value, "split": self.separate_split.value},
            "intervals": {"half_credit": self.half_credit.to_dict(), "exclude": self.exclude.to_dict(),
                          "no_credit": self.no_credit.to_dict(),
                          "separate": {"a": self.separate_a.to_dict(), "b": self.separate_b.to_dict(),
                                       "split": self.separate_split.to_dict()}},
            "per_call": None if self.per_call is None else {
                **self.per_call.to_dict(),
                "convention": "per call: every usable call between the two systems counts, a tie is half a win "
                              "in that call; the interval treats each item (its pairs' calls) as one unit"},
            "counts": {"a_wins": self.a_wins, "b_wins": self.b_wins, "splits": self.splits, "pairs": self.pairs},
        }


def win_rate(a: str, b: str, a_wins: int, b_wins: int, splits: int, policy: TiePolicy | str = TiePolicy.half_credit,
             confidence: float = 0.95) -> WinRate:
    """a's win rate over complete pairs of (a, b) under each tie policy from counts alone, each pair independent."""
    result = np.concatenate([np.ones(a_wins), np.zeros(b_wins), np.full(splits, 0.5)])
    return win_rate_over_pairs(a, b, result, policy=policy, confidence=confidence)


def win_rate_over_pairs(a: str, b: str, result: np.ndarray, *, items: np.ndarray | None = None,
                        per_call: tuple[np.ndarray, np.ndarray] | None = None,
                        policy: TiePolicy | str = TiePolicy.half_credit, confidence: float = 0.95) -> WinRate:
    """a's win rate under each tie policy from each complete pair's result for a (1 consistent win, 0 consistent
    loss, 1/2 split), each with an interval over pairs; `items` (each pair's item) makes pairs judged on the
    same item move together. `per_call` = (each usable call's score for a: 1, 1/2 for a tie, 0; each call's
    item) adds the per-call rate, its interval clustered by item so a pair's two calls count as one unit."""
    result = np.asarray(result, dtype=float)
    win, loss = result == 1.0, result == 0.0
    decided = win | loss
    keep = None if items is None else np.asarray(items)
    return WinRate(
        a=a, b=b, a_wins=int(win.sum()), b_wins=int(loss.sum()), splits=int((~decided).sum()),
        policy=TiePolicy(policy),
        half_credit=Rate.of(mean_interval(result, confidence, keep)),
        exclude=Rate.of(proportion_interval(win[decided], confidence, None if keep is None else keep[decided])),
        no_credit=Rate.of(proportion_interval(win, confidence, keep)),
        separate_a=Rate.of(proportion_interval(win, confidence, keep)),
        separate_b=Rate.of(proportion_interval(loss, confidence, keep)),
        separate_split=Rate.of(proportion_interval(~decided, confidence, keep)),
        per_call=None if per_call is None else Rate.of(mean_interval(np.asarray(per_call[0], float), confidence,
                                                                     np.asarray(per_call[1]))),
    )


@dataclass(frozen=True)
class Gate:
    """The self-consistency gate: below it no win rate is reported."""

    min_self_consistency: float
    passed: bool
    reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"min_self_consistency": self.min_self_consistency, "passed": self.passed, "reason": self.reason}


def gate(rate: float | None, minimum: float = DEFAULT_MIN_CONSISTENCY) -> Gate:
    if rate is None:
        return Gate(minimum, False, "swap-consistency cannot be measured (no pair has both orders with verdicts)")
    if rate < minimum:
        return Gate(minimum, False, f"swap-consistency {rate:.1%} is below the gate of {minimum:.0%}: "
                                    "the judge cannot tell these answers apart reliably; no win rate reported")
    return Gate(minimum, True, None)


@dataclass(frozen=True)
class Decision:
    """Could presentation order alone have decided the contested pairs? Compares the upper bound of the flip
    rate with the observed margin between the two systems."""

    margin: float | None
    flip_rate_high: float | None
    order_could_decide: bool | None

    def to_dict(self) -> dict[str, Any]:
        return {"margin": self.margin, "flip_rate_high": self.flip_rate_high,
                "order_could_decide": self.order_could_decide}

    def sentence(self) -> str:
        if self.margin is None or self.flip_rate_high is None:
            return "no margin to compare with the flip rate"
        if self.order_could_decide:
            return (f"the flip rate could be as high as {self.flip_rate_high:.1%}, at or above the margin of "
                    f"{self.margin:.1%}: presentation order could decide the contested pairs")
        return (f"the flip rate's upper bound {self.flip_rate_high:.1%} is below the margin of {self.margin:.1%}: "
                "order alone cannot explain the lead")


def decision(margin: float | None, flip_rate_high: float | None) -> Decision:
    if margin is None or flip_rate_high is None:
        return Decision(margin, flip_rate_high, None)
    return Decision(margin, flip_rate_high, flip_rate_high >= margin)
