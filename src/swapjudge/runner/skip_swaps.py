"""The adaptive-swap policy of a live run: which swapped calls to make once the first verdicts are in."""

from __future__ import annotations

from swapjudge.core.adaptive import adaptive_skips
from swapjudge.runner.outcome import RunStats
from swapjudge.runner.plan import (
    PlannedCall,
)
from swapjudge.store import Store


def second_calls_to_make(
    store: Store, run_id: int, calls: list[PlannedCall], threshold: float, stats: RunStats
) -> list[PlannedCall]:
    """Adaptive swapping: the swapped call is made only when the pair's first verdict is less confident than
    `threshold` (or its confidence is unknown). Nothing is stored for a call not made: the pair stays single-order
    (no swap measurement), and a resumed run finds the same calls to skip from the stored first verdicts."""
    skip = adaptive_skips(store.calls(run_id), threshold)
    make = [c for c in calls if c.key not in skip]
    stats.adaptive_skipped += len(calls) - len(make)
    stats.to_call -= len(calls) - len(make)
    return make
