"""Studies with known truth, seeded: how often each design ships when the candidate is exactly at the bar.

- `fixed_false_ship`: studies of `items` items, the fixed interval read once at the end.
- `monitoring_false_ship`: streams checked after every `every` items up to `horizon` (a team running `decide` after
  every push): the fixed interval recomputed at each look, shipping at the first look whose lower bound clears the
  bar, next to the confidence sequence read the same way.

The tests, `bench/bench_decide.py` and the figures in docs/decide.md all come from these functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from swapjudge.decision.bounds import first_crossings, fixed_bound
from swapjudge.decision.power import Design, simulated_power_fixed


@dataclass(frozen=True)
class SimulatedRate:
    """A simulated share with its Monte Carlo standard error."""

    hits: int
    runs: int

    @property
    def value(self) -> float:
        return self.hits / self.runs

    @property
    def se(self) -> float:
        p = self.value
        return math.sqrt(max(p * (1 - p), 1e-12) / self.runs)

    def to_dict(self) -> dict[str, Any]:
        return {"rate": self.value, "se": self.se, "hits": self.hits, "runs": self.runs}


def null_design(bar: float, splits: float) -> Design:
    """Item scores whose mean is exactly the bar (half credit, one pair per item): wins bar - splits/2."""
    wins, losses = bar - splits / 2, 1 - bar - splits / 2
    return Design(np.array([0.0, 0.5, 1.0]), np.array([losses, splits, wins]), 0.0, "expected", splits)


def fixed_false_ship(design: Design, items: int, bar: float, alpha: float, *, studies: int = 2000,
                     seed: int = 0) -> SimulatedRate:
    """Share of studies of `items` items in which the fixed interval, read once, ships."""
    share = simulated_power_fixed(design, items, bar, alpha, studies=studies, seed=seed)
    return SimulatedRate(round(share * studies), studies)


def monitoring_false_ship(design: Design, bar: float, alpha: float, *, every: int = 20, horizon: int = 400,
                          streams: int = 1000, seed: int = 0) -> tuple[SimulatedRate, SimulatedRate]:
    """(fixed interval looked at every `every` items, confidence sequence looked at the same way): the share of
    streams that ship at some look up to `horizon`."""
    rng = np.random.default_rng(seed)
    x = design.sample(rng, (streams, horizon))
    looks = range(every, horizon + 1, every)
    fixed_hits = 0
    for row in x:
        for n in looks:
            low = fixed_bound(row[:n], alpha).low
            if low is not None and low > bar:
                fixed_hits += 1
                break
    ship, _ = first_crossings(x, bar, alpha)
    # the sequence is read at the looks only: a crossing between looks is seen at the next look, the same stream
    sequential_hits = int(np.sum((ship > 0) & (ship <= looks[-1])))
    return SimulatedRate(fixed_hits, streams), SimulatedRate(sequential_hits, streams)
