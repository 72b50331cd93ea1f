"""The verdict: ship, keep or inconclusive, the rule that gives it, and the one line a manager reads.

The rule fails closed, in this order: calls missing or without a verdict (beyond what `allow_missing` tolerates)
keep; a failed consistency gate keeps; then the bound decides. With the fixed design the interval is read once,
at the planned number of items (the first `items` items, in record order): before they are all in, the candidate
cannot ship (a look before the planned items would be a second look), and it is kept only when the upper bound
is already below the bar (keeping is the safe side). With the sequence, any look is valid: the candidate ships
once the lower bound has cleared the bar, and is kept once the upper bound has fallen below it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from swapjudge.core.display import Displayable, percent
from swapjudge.core.policy import Gate
from swapjudge.core.swap import Consistency, FlipDirection
from swapjudge.decision.bounds import Bound
from swapjudge.outcome import Concluded, Conclusion, Ending

SHIP, KEEP, INCONCLUSIVE = "ship", "keep", "inconclusive"
# the one reading of a verdict's word: its outcome (and so its exit code: 0 ship, 1 keep, 3 inconclusive)
OUTCOMES = {SHIP: Conclusion.ok, KEEP: Conclusion.failed, INCONCLUSIVE: Conclusion.inconclusive}


@dataclass(frozen=True)
class Counts:
    """What the verdict read: items and pairs of the two systems, and the calls that were missing."""

    items_read: int  # items in the analysis (the fixed design: at most the planned items)
    items_available: int  # items of the two systems in the records
    items_scored: int  # items with a score (exclude: an item of splits only has none)
    pairs: int  # complete pairs behind the scores
    wins: int
    losses: int
    splits: int
    incomplete_pairs: int
    missing_calls: int  # calls without a verdict (judge errors, unparsable replies) or never made
    allowed_missing: int

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Verdict(Displayable, Concluded):
    """The decision's result. `verdict` is "ship", "keep" or "inconclusive"; `headline` the one line; `reasons`
    why, in the order the rule applied them; `bound` the candidate's win rate over items with its bounds (None
    when the gate or missing calls stop the decision before any rate is read)."""

    verdict: str
    headline: str
    reasons: tuple[str, ...]
    candidate: str
    incumbent: str
    hypothesis: str
    bar: float
    margin: float
    tie_policy: str
    monitoring: str
    alpha: float
    planned_items: int | None
    bound: Bound | None
    counts: Counts
    gate: Gate
    consistency: Consistency | None
    flip_direction: FlipDirection | None
    judge: str | None
    source: str
    decision: dict[str, Any]
    decision_hash: str
    decision_path: str | None = None
    needed_items: int | None = None  # inconclusive: items the plan needs at the observed rates
    more_items: int | None = None  # of which not in yet
    registration_changed_after: int | None = None  # decisions recorded under another version of the file
    notes: tuple[str, ...] = field(default_factory=tuple)
    human: dict[str, Any] | None = None  # the people's labels the verdict rests on (a decision's `human` block)

    @property
    def outcome(self) -> Conclusion:
        """ship: ok, keep: failed, inconclusive: inconclusive."""
        return OUTCOMES[self.verdict]
    fragility: Any = None  # decision.fragility.Fragility, when asked for
    attack_gate: Any = None  # decision.attack_gate.AttackGate, when the decision names attacks

    @property
    def exit_code(self) -> int:
        return int(self.outcome)

    def ending(self) -> Ending:
        """Ship ends ok; keep (a failed gate and missing calls included) fails with its first reason; inconclusive
        says what is still missing. `raise_for_gate()` raises the last two as `GateError` (exit 1 and 3)."""
        if self.outcome is Conclusion.failed:
            return Ending(Conclusion.failed, (f"keep: {self.candidate} does not ship ({self.reasons[0]})",))
        if self.outcome is Conclusion.inconclusive:
            return Ending(Conclusion.inconclusive, (f"inconclusive: the data do not decide yet ({self.reasons[-1]})",))
        return Ending()

    @property
    def shipped(self) -> bool:
        return self.verdict == SHIP

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict, "exit_code": self.exit_code, "headline": self.headline,
            "reasons": list(self.reasons), "candidate": self.candidate, "incumbent": self.incumbent,
            "hypothesis": self.hypothesis, "bar": self.bar, "margin": self.margin, "tie_policy": self.tie_policy,
            "monitoring": self.monitoring, "alpha": self.alpha, "planned_items": self.planned_items,
            "win_rate": None if self.bound is None else self.bound.to_dict(),
            "counts": self.counts.to_dict(), "gate": self.gate.to_dict(),
            "consistency": None if self.consistency is None else self.consistency.to_dict(),
            "flip_direction": None if self.flip_direction is None else self.flip_direction.to_dict(),
            "judge": self.judge, "source": self.source, "decision": self.decision,
            "decision_hash": self.decision_hash, "decision_path": self.decision_path,
            "needed_items": self.needed_items, "more_items": self.more_items,
            "registration_changed_after": self.registration_changed_after, "notes": list(self.notes),
            **({"human": self.human} if self.human is not None else {}),
            **({} if self.fragility is None else {"fragility": self.fragility.to_dict()}),
            **({} if self.attack_gate is None else {"attack_gate": self.attack_gate.to_dict()}),
        }


@dataclass(frozen=True)
class Ruling:
    verdict: str
    headline: str
    reasons: tuple[str, ...]
    rate_read: bool  # False: the decision stopped before the win rate (missing calls, the gate)


def _consistency_tail(consistency: Consistency | None, gate: Gate) -> str:
    rate = "not measured" if consistency is None or consistency.rate is None else percent(consistency.rate)
    return f"judge consistency {rate} (gate {percent(gate.min_self_consistency)})"


def _bar_text(bar: float, hypothesis: str, margin: float) -> str:
    if hypothesis != "non_inferior":
        return percent(bar)
    return f"{percent(bar)}, the non-inferiority bar: 50% less {100 * margin:g} points"


def rule(*, bound: Bound | None, bar: float, hypothesis: str, margin: float, monitoring: str,
         planned_items: int | None, items_read: int, candidate: str, gate: Gate,
         consistency: Consistency | None, missing_calls: int, allowed_missing: int) -> Ruling:
    """The verdict, fail-closed (module docstring)."""
    tail = _consistency_tail(consistency, gate)
    if missing_calls > allowed_missing:
        allowed = f"--allow-missing {allowed_missing} tolerates {allowed_missing}" if allowed_missing else \
            "no missing call is tolerated unless --allow-missing N is given"
        head = (f"Keep: {missing_calls:,} judge call(s) are missing or have no verdict (judge errors, unparsable "
                f"replies, calls never made); the decision fails closed ({allowed})")
        return Ruling("keep", head, (head.removeprefix("Keep: "),), False)
    if not gate.passed:
        why = gate.reason or "the consistency gate failed"
        rate = "" if consistency is None or consistency.rate is None else f" {percent(consistency.rate)}"
        head = (f"Keep: the judge's swap-consistency{rate} is below the gate of {percent(gate.min_self_consistency)}, "
                "so no win rate is read (the decision fails closed)" if consistency is not None
                and consistency.rate is not None else f"Keep: {why} (the decision fails closed)")
        return Ruling("keep", head, (why,), False)
    if bound is None or bound.value is None or bound.low is None or bound.high is None:
        head = f"Inconclusive: no item has a score for {candidate} ({tail})"
        return Ruling("inconclusive", head, ("no item has a score (every pair a split under the exclude policy, or "
                                             "no complete pair)",), True)
    rate = f"the candidate {candidate} wins {percent(bound.value)} of {bound.n:,} items"
    bar_text = _bar_text(bar, hypothesis, margin)
    kind = "confidence sequence" if monitoring == "sequential" else "fixed-sample interval"
    if monitoring == "sequential":
        ship = bound.ship_at is not None and (bound.keep_at is None or bound.ship_at < bound.keep_at)
        keep = bound.keep_at is not None and not ship
        if ship:
            head = f"Ship: {rate} (lower bound {percent(bound.low)} > {bar_text}); {tail}"
            return Ruling("ship", head, (f"the {kind}'s lower bound cleared the bar at item {bound.ship_at:,}",), True)
        if keep:
            head = f"Keep: {rate} (upper bound {percent(bound.high)} < {bar_text}); {tail}"
            return Ruling("keep", head, (f"the {kind}'s upper bound fell below the bar at item {bound.keep_at:,}",),
                          True)
        head = f"Inconclusive: {rate} (bounds {percent(bound.low)} to {percent(bound.high)} contain {bar_text}); {tail}"
        return Ruling("inconclusive", head, (f"the {kind} still contains the bar",), True)
    early = planned_items is not None and items_read < planned_items
    if bound.high < bar:
        head = f"Keep: {rate} (upper bound {percent(bound.high)} < {bar_text}); {tail}"
        why = f"the {kind}'s upper bound is below the bar"
        if early:
            why += f" already at {items_read:,} of the {planned_items:,} planned items (keeping early is the safe side)"
        return Ruling("keep", head, (why,), True)
    if early:
        assert planned_items is not None
        head = (f"Inconclusive: {items_read:,} of the {planned_items:,} planned items are in; the fixed design reads "
                f"its interval once, at {planned_items:,} items (so far {rate}, bounds {percent(bound.low)} to "
                f"{percent(bound.high)}); {tail}")
        return Ruling("inconclusive", head, (
            f"the fixed design ships only at its planned {planned_items:,} items: a look before them would be a "
            "second look at a fixed-sample interval (use monitoring: sequential to look after every push)",), True)
    if bound.low > bar:
        head = f"Ship: {rate} (lower bound {percent(bound.low)} > {bar_text}); {tail}"
        return Ruling("ship", head, (f"the {kind}'s lower bound clears the bar",), True)
    head = f"Inconclusive: {rate} (bounds {percent(bound.low)} to {percent(bound.high)} contain {bar_text}); {tail}"
    return Ruling("inconclusive", head, (f"the {kind} contains the bar",), True)
