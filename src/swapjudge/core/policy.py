"""Tie policies, win rates and the gate (DESIGN 3.3).

A split is any complete pair that is not a consistent win: a consistent tie, a flip, a half-tie. The policy,
fixed before the run, says what a split is worth. Every interval is over pairs, never over calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, TiePolicy
from swapjudge.core.stats import mean_interval, wilson

__all__ = ["DEFAULT_MIN_CONSISTENCY", "TiePolicy"]  # defined in core.choices (light), used from here too




@dataclass(frozen=True)
class Rate:
    value: float | None
    low: float | None
    high: float | None

    def to_dict(self) -> dict[str, float | None]:
        return {"value": self.value, "low": self.low, "high": self.high}


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
            "counts": {"a_wins": self.a_wins, "b_wins": self.b_wins, "splits": self.splits, "pairs": self.pairs},
        }


def _proportion(k: int, n: int, confidence: float) -> Rate:
    p = wilson(k, n, confidence)
    return Rate(p.rate, p.low, p.high)


def win_rate(a: str, b: str, a_wins: int, b_wins: int, splits: int, policy: TiePolicy | str = TiePolicy.half_credit,
             confidence: float = 0.95) -> WinRate:
    """a's win rate over complete pairs of (a, b) under each tie policy, each with an interval over pairs."""
    n = a_wins + b_wins + splits
    # half credit: each pair scores 1, 0.5 or 0 for a; the interval is over those per-pair scores.
    scores = np.concatenate([np.ones(a_wins), np.zeros(b_wins), np.full(splits, 0.5)])
    half = Rate(*mean_interval(scores, confidence))
    return WinRate(
        a=a, b=b, a_wins=a_wins, b_wins=b_wins, splits=splits, policy=TiePolicy(policy),
        half_credit=half,
        exclude=_proportion(a_wins, a_wins + b_wins, confidence),
        no_credit=_proportion(a_wins, n, confidence),
        separate_a=_proportion(a_wins, n, confidence),
        separate_b=_proportion(b_wins, n, confidence),
        separate_split=_proportion(splits, n, confidence),
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
