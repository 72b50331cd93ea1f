"""How many items the registered power needs, and the check of that promise by seeded simulation.

The expected data are a distribution of item scores (`Design`): from expected rates (the candidate's win rate
under the tie policy and the share of split pairs), or from a pilot's item scores (resampled, so a pilot with
several rounds per item is planned as it is). With the fixed interval the items come from the normal
approximation n = ((z_{1-alpha} + z_{power}) sd / (rate - bar))^2; with the confidence sequence, from simulated
streams: the item by which the sequence has shipped in a `power` share of them. Either way the power at the
planned items is then simulated again with another seed, through the same bound `decide` reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

from swapjudge.core.choices import TiePolicy
from swapjudge.core.display import Displayable
from swapjudge.decision.bounds import first_crossings, fixed_bound
from swapjudge.errors import SwapjudgeError

DEFAULT_SIMULATIONS = 2000
MAX_ITEMS = 200_000  # beyond this a plan says "more than" rather than simulating further
_BLOCK_VALUES = 2_000_000  # item scores simulated at once (streams x horizon), to bound the memory


class PlanError(SwapjudgeError):
    """Expected rates that cannot be planned for (exit 2)."""


@dataclass(frozen=True)
class Design:
    """Item scores as the plan expects them: `values` with probabilities `probs` (summing to 1) among the items
    that get a score, and `unscored`, the share of items that get none (exclude: every pair a split)."""

    values: np.ndarray
    probs: np.ndarray
    unscored: float = 0.0
    source: str = "expected"  # expected | pilot
    splits: float | None = None  # share of split pairs, when known

    @property
    def rate(self) -> float:
        return float(np.dot(self.values, self.probs))

    @property
    def sd(self) -> float:
        return float(math.sqrt(max(0.0, np.dot(self.values**2, self.probs) - self.rate**2)))

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Scores of scored items."""
        return rng.choice(self.values, size=shape, p=self.probs)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "rate": self.rate, "splits": self.splits, "sd": self.sd,
                "unscored": self.unscored, "values": self.values.tolist(), "probs": self.probs.tolist()}


def expected_design(rate: float, splits: float, policy: TiePolicy | str) -> Design:
    """The item-score distribution of items with one pair each, from the candidate's expected win rate under the
    policy (`rate`) and the expected share of split pairs (`splits`)."""
    policy = TiePolicy(policy)
    if not 0 < rate < 1:
        raise PlanError(f"{{expect}} must be a win rate between 0 and 1 (exclusive), got {rate}", arguments=("expect",))
    if not 0 <= splits < 1:
        raise PlanError(f"{{splits}} must be a share of pairs in [0, 1), got {splits}", arguments=("splits",))
    if policy is TiePolicy.half_credit:
        wins, losses = rate - splits / 2, 1 - rate - splits / 2
        if wins < -1e-12 or losses < -1e-12:
            raise PlanError(f"with {splits:.0%} splits a half-credit win rate lies between {splits / 2:.1%} and "
                            f"{1 - splits / 2:.1%}; {{expect}} {rate} is outside it", arguments=("expect",))
        values, probs = np.array([0.0, 0.5, 1.0]), np.array([max(losses, 0.0), splits, max(wins, 0.0)])
        return Design(values, probs / probs.sum(), 0.0, "expected", splits)
    if policy is TiePolicy.exclude:
        return Design(np.array([0.0, 1.0]), np.array([1 - rate, rate]), splits, "expected", splits)
    if rate + splits > 1 + 1e-12:
        raise PlanError(f"under {policy.value} the win rate counts consistent wins only: with {splits:.0%} splits "
                        f"it is at most {1 - splits:.1%}, and {{expect}} is {rate}", arguments=("expect",))
    return Design(np.array([0.0, 1.0]), np.array([1 - rate, rate]), 0.0, "expected", splits)


def pilot_design(scores: np.ndarray, unscored: int = 0, splits: float | None = None) -> Design:
    """The empirical distribution of a pilot's item scores (resampled by the simulations)."""
    scores = np.asarray(scores, dtype=float)
    if scores.size == 0:
        raise PlanError("the pilot has no scored item (no complete pair of the two systems)")
    values, counts = np.unique(scores, return_counts=True)
    share = unscored / (scores.size + unscored)
    return Design(values, counts / counts.sum(), share, "pilot", splits)


def _z(p: float) -> float:
    return NormalDist().inv_cdf(p)


def analytic_items(design: Design, bar: float, alpha: float, power: float, *, side: str = "ship") -> int | None:
    """Items for the fixed interval by the normal approximation (None: the expected rate is on the wrong side of
    the bar, so no number of items reaches `side`)."""
    gap = design.rate - bar if side == "ship" else bar - design.rate
    if gap <= 0:
        return None
    scored = 1 if design.sd == 0 else math.ceil(((_z(1 - alpha) + _z(power)) * design.sd / gap) ** 2)
    return _items_for(scored, design)


def _items_for(scored: int, design: Design) -> int:
    """Items whose expected number of scored items is `scored`."""
    return max(1, math.ceil(scored / (1 - design.unscored)))


def _scored(items: int, design: Design, rng: np.random.Generator, studies: int) -> np.ndarray:
    if design.unscored == 0:
        return np.full(studies, items)
    return rng.binomial(items, 1 - design.unscored, size=studies)


def simulated_power_fixed(design: Design, items: int, bar: float, alpha: float, *, side: str = "ship",
                          studies: int = DEFAULT_SIMULATIONS, seed: int = 1) -> float:
    """Share of simulated studies of `items` items in which the fixed interval ships (or keeps)."""
    rng = np.random.default_rng(seed)
    hits = 0
    for n in _scored(items, design, rng, studies):
        counts = rng.multinomial(int(n), design.probs)
        bound = fixed_bound(np.repeat(design.values, counts), alpha)
        if bound.low is None or bound.high is None:
            continue
        hits += bound.low > bar if side == "ship" else bound.high < bar
    return hits / studies


REFINE_LIMIT = 5000  # above this many items the normal approximation is left as it is


def fixed_items(design: Design, start: int, bar: float, alpha: float, power: float, *,
                studies: int = DEFAULT_SIMULATIONS, seed: int = 0) -> int:
    """The normal approximation's items, corrected by simulation where it is off (few items: the interval's
    asymmetry and the scores' discreteness): the fewest items, stepping from `start`, whose simulated power
    reaches `power`."""
    if start > REFINE_LIMIT:
        return start

    def reaches(n: int) -> bool:
        return simulated_power_fixed(design, n, bar, alpha, studies=studies, seed=seed) >= power

    step = max(1, round(0.02 * start))
    n = start
    if not reaches(n):
        while not reaches(n) and n < 2 * REFINE_LIMIT:
            n += step
        return n
    while n - step >= 1 and reaches(n - step):
        n -= step
    return n


def crossing_items(design: Design, bar: float, alpha: float, horizon: int, *, side: str = "ship",
                   streams: int = DEFAULT_SIMULATIONS, seed: int = 1) -> np.ndarray:
    """For each simulated stream of `horizon` scored items, the scored item at which the sequence first ships
    (or keeps); 0 when it does not within the horizon."""
    rng = np.random.default_rng(seed)
    out = []
    per_block = max(1, _BLOCK_VALUES // horizon)
    for start in range(0, streams, per_block):
        block = design.sample(rng, (min(per_block, streams - start), horizon))
        ship, keep = first_crossings(block, bar, alpha)
        out.append(ship if side == "ship" else keep)
    return np.concatenate(out)


def sequential_items(design: Design, bar: float, alpha: float, power: float, *, side: str = "ship",
                     streams: int = DEFAULT_SIMULATIONS, seed: int = 1, max_items: int = MAX_ITEMS) -> int | None:
    """Items by which the sequence has reached `side` in a `power` share of simulated streams (None: the rate is
    on the other side of the bar, or more than `max_items` would be needed)."""
    gap = design.rate - bar if side == "ship" else bar - design.rate
    if gap <= 0:
        return None
    start = analytic_items(design, bar, alpha, power, side=side) or 1
    horizon = max(200, 3 * math.ceil(start * (1 - design.unscored)))
    need = math.ceil(power * streams)
    horizon = min(horizon, max_items)
    while True:
        # shorter horizons first: most plans end in the first pass
        times = crossing_items(design, bar, alpha, horizon, side=side, streams=streams, seed=seed)
        crossed = np.sort(times[times > 0])
        if crossed.size >= need:
            return _items_for(int(crossed[need - 1]), design)
        if horizon >= max_items:
            return None
        horizon = min(2 * horizon, max_items)
        streams = min(streams, max(200, int(4e7 // horizon)))  # keep a long horizon's time bounded
        need = math.ceil(power * streams)


def simulated_power_sequential(design: Design, items: int, bar: float, alpha: float, *, side: str = "ship",
                               streams: int = DEFAULT_SIMULATIONS, seed: int = 1) -> float:
    """Share of simulated streams in which the sequence ships (or keeps) by item `items`."""
    scored = max(1, round(items * (1 - design.unscored)))
    times = crossing_items(design, bar, alpha, scored, side=side, streams=streams, seed=seed)
    return float(np.mean(times > 0))


@dataclass(frozen=True)
class Plan(Displayable):
    """The items the registered power needs under the registered bound, and the simulated check of that power.

    `items` is None when no number of items would ship at the expected rates (at or below the bar)."""

    items: int | None
    monitoring: str
    hypothesis: str
    bar: float
    alpha: float
    power: float
    tie_policy: str
    design: Design
    simulated_power: float | None
    simulations: int
    seed: int
    analytic_items: int | None = None  # the normal approximation, before the simulation's correction
    fixed_items: int | None = None  # what one look at the fixed-sample interval would need (for comparison)
    registered_items: int | None = None
    calls: int | None = None  # judge calls for `items`, both orders
    cost_usd: float | None = None  # synchronous prices
    batch_cost_usd: float | None = None
    model: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def simulation_se(self) -> float | None:
        p = self.simulated_power
        return None if p is None else math.sqrt(p * (1 - p) / self.simulations)

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": self.items, "monitoring": self.monitoring, "hypothesis": self.hypothesis, "bar": self.bar,
            "alpha": self.alpha, "power": self.power, "tie_policy": self.tie_policy,
            "expected": self.design.to_dict(), "analytic_items": self.analytic_items,
            "fixed_items": self.fixed_items,
            "simulated_power": self.simulated_power, "simulation_se": self.simulation_se,
            "simulations": self.simulations, "seed": self.seed, "registered_items": self.registered_items,
            "calls": self.calls, "orders": 2, "cost_usd": self.cost_usd, "batch_cost_usd": self.batch_cost_usd,
            "model": self.model, "independent": "items", "notes": list(self.notes),
        }


def plan_items(design: Design, *, bar: float, alpha: float, power: float, monitoring: str, hypothesis: str = "superior",
               tie_policy: str = "half_credit", simulations: int = DEFAULT_SIMULATIONS, seed: int = 0,
               registered_items: int | None = None) -> Plan:
    """The plan: items for the power, then the power at those items simulated with a different seed."""
    analytic = analytic_items(design, bar, alpha, power)
    notes: list[str] = []
    fixed = None if analytic is None else fixed_items(design, analytic, bar, alpha, power, studies=simulations,
                                                       seed=seed)
    items = sequential_items(design, bar, alpha, power, streams=simulations, seed=seed) \
        if monitoring == "sequential" else fixed
    simulated = None
    if items is not None and items <= MAX_ITEMS:
        check = seed + 1  # the check never reuses the streams the plan was read from
        simulated = (simulated_power_sequential(design, items, bar, alpha, streams=simulations, seed=check)
                     if monitoring == "sequential"
                     else simulated_power_fixed(design, items, bar, alpha, studies=simulations, seed=check))
    elif items is None and design.rate > bar:
        notes.append(f"more than {MAX_ITEMS:,} items would be needed")
    if design.rate <= bar:
        notes.append(f"the expected win rate {design.rate:.1%} is not above the bar of {bar:.1%}: no number of "
                     "items ships")
    return Plan(items, monitoring, hypothesis, bar, alpha, power, str(tie_policy), design, simulated, simulations,
                seed, analytic, fixed, registered_items, notes=tuple(notes))
