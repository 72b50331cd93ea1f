"""Tie policies, win rates and the gate.

A split is any complete pair that is not a consistent win: a consistent tie, a flip, a half-tie. The policy,
fixed before the run, says what a split is worth. Every interval is over pairs, never over calls.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, TiePolicy
from swapjudge.core.graded import ARENA_HARD_CONVENTION, GRADED_DEFINITION
from swapjudge.core.stats import (
    Independence,
    MeanInterval,
    Tally,
    tally,
    tally_mean_interval,
    tally_proportion_interval,
)

if TYPE_CHECKING:  # numpy is imported where it is used, so `calc` starts without it
    import numpy as np

__all__ = ["DEFAULT_MIN_CONSISTENCY", "TiePolicy"]  # defined in core.choices (light), used from here too




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
    # graded verdicts (core.graded): the order-averaged graded score of a over its graded pairs, and
    # arena-hard-auto's convention (a strong verdict as 3 battles, orders unreconciled), for comparison only
    graded: Rate | None = None
    graded_pairs: int = 0
    arena_hard: Rate | None = None
    arena_hard_battles: int = 0
    withheld: bool = False  # True: the gate failed, so every rate here is None (the counts stay, as measured)

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
            "graded": None if self.graded is None else {
                **self.graded.to_dict(), "pairs": self.graded_pairs, "definition": GRADED_DEFINITION},
            "arena_hard": None if self.arena_hard is None else {
                **self.arena_hard.to_dict(), "battles": self.arena_hard_battles,
                "convention": ARENA_HARD_CONVENTION},
            "counts": {"a_wins": self.a_wins, "b_wins": self.b_wins, "splits": self.splits, "pairs": self.pairs},
        }


NO_RATE = Rate(None, None, None)


def withheld_copy(rate: WinRate) -> WinRate:
    """The same comparison with every rate removed: what the library hands out when the gate fails."""
    return dataclasses.replace(rate, half_credit=NO_RATE, exclude=NO_RATE, no_credit=NO_RATE, separate_a=NO_RATE,
                               separate_b=NO_RATE, separate_split=NO_RATE,
                               per_call=None if rate.per_call is None else NO_RATE,
                               graded=None if rate.graded is None else NO_RATE,
                               arena_hard=None if rate.arena_hard is None else NO_RATE, withheld=True)


def win_rate_of_counts(a: str, b: str, a_wins: int, b_wins: int, splits: int,
                       policy: TiePolicy | str = TiePolicy.half_credit, confidence: float = 0.95) -> WinRate:
    """a's win rate over complete pairs of (a, b) under each tie policy from counts alone, each pair independent."""
    import numpy as np

    result = np.concatenate([np.ones(a_wins), np.zeros(b_wins), np.full(splits, 0.5)])
    return win_rate_over_pairs(a, b, result, policy=policy, confidence=confidence)


def win_rate_over_pairs(a: str, b: str, result: np.ndarray, *, items: np.ndarray | None = None,
                        per_call: tuple[np.ndarray, np.ndarray] | None = None,
                        policy: TiePolicy | str = TiePolicy.half_credit, confidence: float = 0.95) -> WinRate:
    """a's win rate under each tie policy from each complete pair's result for a (1 consistent win, 0 consistent
    loss, 1/2 split), each with an interval over pairs; `items` (each pair's item) makes pairs judged on the
    same item move together. `per_call` = (each usable call's score for a: 1, 1/2 for a tie, 0; each call's
    item) adds the per-call rate, its interval clustered by item so a pair's two calls count as one unit."""
    import numpy as np

    result = np.asarray(result, dtype=float)
    win, loss = result == 1.0, result == 0.0
    decided = win | loss
    keep = None if items is None else np.asarray(items)

    def counted(values: np.ndarray, clusters: np.ndarray | None) -> Tally:
        found = tally(values.astype(float), clusters)
        if found is None:
            raise ValueError("pair results must be 1, 1/2 or 0 and per-call scores 1, 1/2 or 0")
        return found

    per_call_tally = None
    if per_call is not None:
        per_call_tally = counted(np.asarray(per_call[0], float), np.asarray(per_call[1]))
    return win_rate_of_tallies(
        a, b, int(win.sum()), int(loss.sum()), int((~decided).sum()),
        WinTallies(score=counted(result, keep), win_of_decided=counted(win[decided],
                                                                       None if keep is None else keep[decided]),
                   win=counted(win, keep), loss=counted(loss, keep), split=counted(~decided, keep),
                   per_call=per_call_tally),
        policy=policy, confidence=confidence)


@dataclass(frozen=True)
class WinTallies:
    """The tallies (by item) behind a win rate's intervals: each complete pair's score for a (1, 1/2, 0), its
    consistent-win flag among decided pairs and among all, its loss and split flags, and each usable call's
    score (`per_call`, optional)."""

    score: Tally
    win_of_decided: Tally
    win: Tally
    loss: Tally
    split: Tally
    per_call: Tally | None = None


def win_rate_of_tallies(a: str, b: str, a_wins: int, b_wins: int, splits: int, tallies: WinTallies, *,
                        policy: TiePolicy | str = TiePolicy.half_credit, confidence: float = 0.95) -> WinRate:
    """`win_rate_over_pairs` from counts and tallies (`reading.reduce`): the same figures to the last bit."""
    win = Rate.of(tally_proportion_interval(tallies.win, confidence))
    return WinRate(
        a=a, b=b, a_wins=a_wins, b_wins=b_wins, splits=splits, policy=TiePolicy(policy),
        half_credit=Rate.of(tally_mean_interval(tallies.score, confidence)),
        exclude=Rate.of(tally_proportion_interval(tallies.win_of_decided, confidence)),
        no_credit=win,
        separate_a=win,
        separate_b=Rate.of(tally_proportion_interval(tallies.loss, confidence)),
        separate_split=Rate.of(tally_proportion_interval(tallies.split, confidence)),
        per_call=None if tallies.per_call is None else Rate.of(tally_mean_interval(tallies.per_call, confidence)),
    )


@dataclass(frozen=True)
class Gate:
    """The self-consistency gate: below it no win rate is reported."""

    min_self_consistency: float
    passed: bool
    reason: str | None
    # True when the consistency interval contains the threshold: the data cannot tell a pass from a fail
    uncertain: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"min_self_consistency": self.min_self_consistency, "passed": self.passed, "reason": self.reason,
                "uncertain": self.uncertain}


def gate(rate: float | None, minimum: float = DEFAULT_MIN_CONSISTENCY, low: float | None = None,
         high: float | None = None) -> Gate:
    """The gate on the point estimate; `low`/`high` (the consistency interval) say whether the verdict is sure."""
    if rate is None:
        return Gate(minimum, False, "swap-consistency cannot be measured (no pair has both orders with verdicts)")
    uncertain = None if low is None or high is None else bool(low <= minimum <= high)
    if rate < minimum:
        return Gate(minimum, False, f"swap-consistency {rate:.1%} is below the gate of {minimum:.0%}: "
                                    "the judge cannot tell these answers apart reliably; no win rate reported",
                    uncertain)
    return Gate(minimum, True, None, uncertain)


def _side(rate: float | None) -> int:
    """Which system a rate of a names as the leader: +1 a, -1 b, 0 neither."""
    return 0 if rate is None or rate == 0.5 else (1 if rate > 0.5 else -1)


@dataclass(frozen=True)
class Decision:
    """Could presentation order have decided the lead?

    `mode` "two_orders" (both orders judged): the half-credit rate already cancels order, so the question is
    whether the lead is there at all (its interval excludes 50%, `lead_clear`) and whether a single-order run with
    this judge would have named another leader (`order_could_decide`): `a_first_rate` / `b_first_rate` are a's
    half-credit rate read from the calls with a (or b) always in slot 1, i.e. with the flips and their direction
    as measured. `mode` "worst_case" (counts only, or a mix with pairs judged once): the upper bound of the flip
    rate against the margin of consistent wins.
    """

    margin: float | None
    flip_rate_high: float | None
    order_could_decide: bool | None
    mode: str = "worst_case"
    a: str | None = None
    b: str | None = None
    rate: Rate | None = None  # the two-order half-credit win rate of a
    a_first_rate: float | None = None
    b_first_rate: float | None = None

    @property
    def lead_clear(self) -> bool | None:
        """Two orders: the half-credit interval excludes 50%."""
        if self.rate is None or self.rate.low is None or self.rate.high is None:
            return None
        return self.rate.low > 0.5 or self.rate.high < 0.5

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"margin": self.margin, "flip_rate_high": self.flip_rate_high,
                               "order_could_decide": self.order_could_decide, "mode": self.mode}
        if self.mode == "two_orders":
            out.update({"lead_clear": self.lead_clear, "a_first_rate": self.a_first_rate,
                        "b_first_rate": self.b_first_rate})
        return out

    def sentence(self) -> str:
        if self.mode == "two_orders":
            return self._two_order_sentence()
        if self.margin is None or self.flip_rate_high is None:
            return "no margin to compare with the flip rate"
        if self.order_could_decide:
            return (f"the flip rate could be as high as {self.flip_rate_high:.1%}, at or above the margin of "
                    f"{self.margin:.1%}: presentation order could decide the contested pairs")
        return (f"the flip rate's upper bound {self.flip_rate_high:.1%} is below the margin of {self.margin:.1%}: "
                "order alone cannot explain the lead")

    def _two_order_sentence(self) -> str:
        r = self.rate
        if r is None or r.low is None or r.high is None or self.a_first_rate is None or self.b_first_rate is None:
            return "no complete pair: nothing to decide"
        span = f"{r.low:.1%}–{r.high:.1%}"
        leader = self.a if _side(r.value) > 0 else self.b
        lead = (f"{leader} leads: the half-credit win rate's interval ({span}) excludes 50%" if self.lead_clear
                else f"no clear lead: the half-credit win rate's interval ({span}) contains 50%")
        single = (f"a single-order run would have given {self.a} {self.a_first_rate:.1%} with {self.a} always in "
                  f"slot 1 and {self.b_first_rate:.1%} with {self.b} always in slot 1")
        if self.order_could_decide:
            return f"{lead}; {single}: presentation order alone could have named a different leader"
        if self.lead_clear:
            return f"{lead}; {single}: both name {leader} too, so order alone cannot explain the lead"
        return f"{lead}; {single}: both on the same side as the two-order rate"


def decision(margin: float | None, flip_rate_high: float | None) -> Decision:
    """The worst case (counts only, or pairs judged once): could flips as frequent as the flip rate's upper bound
    cover the margin?"""
    if margin is None or flip_rate_high is None:
        return Decision(margin, flip_rate_high, None)
    return Decision(margin, flip_rate_high, flip_rate_high >= margin)


def single_order_rate(verdicts: np.ndarray, a_first: bool) -> float | None:
    """a's half-credit rate from one order's positional verdict codes (0 first, 1 second, 2 tie)."""
    import numpy as np

    if verdicts.size == 0:
        return None
    a_named = verdicts == (0 if a_first else 1)
    return float(np.mean(np.where(a_named, 1.0, np.where(verdicts == 2, 0.5, 0.0))))


def two_order_decision(rate: WinRate, va: np.ndarray, vb: np.ndarray, flip_rate_high: float | None) -> Decision:
    """The decision on two-order data; `va` / `vb`: the positional verdicts, over complete pairs, of the call with
    a (respectively b) in slot 1."""
    ra, rb = single_order_rate(va, a_first=True), single_order_rate(vb, a_first=False)
    return two_order_decision_of_rates(rate, ra, rb, flip_rate_high)


def two_order_decision_of_rates(rate: WinRate, ra: float | None, rb: float | None,
                                flip_rate_high: float | None) -> Decision:
    """`two_order_decision` from a's single-order rates with a (`ra`) and with b (`rb`) always in slot 1."""
    side = _side(rate.half_credit.value)
    could = None if ra is None or rb is None else (_side(ra) != side or _side(rb) != side)
    return Decision(rate.margin, flip_rate_high, could, "two_orders", rate.a, rate.b, rate.half_credit, ra, rb)
