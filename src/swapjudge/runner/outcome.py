"""What a run did: its counters while it runs, and its outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class RunStats:
    planned: int = 0
    already_stored: int = 0
    identical: int = 0
    cached: int = 0
    to_call: int = 0
    made: int = 0  # distinct prompts sent to the judge (retries not counted)
    http_attempts: int = 0
    failed: int = 0
    unparsed: int = 0
    spend_usd: float = 0.0
    spend_known: bool = True
    retried_unparsed: int = 0  # calls set aside by --retry-unparsed and asked again
    unparsed_stored: int = 0  # the run's stored calls without a parsable verdict, at its end
    adaptive_skipped: int = 0  # swapped calls not made (adaptive swapping); nothing is stored for them
    batch_failed_requests: int = 0  # batch requests that came back errored, expired or canceled (then retried)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class RunOutcome:
    run_id: int
    store_path: Path
    resumed: bool
    interrupted: bool
    stats: RunStats
    elapsed_s: float
    seed: str
    orders: str
    warnings: tuple[str, ...] = field(default_factory=tuple)
    # Submitted provider batches not waited for (`--no-wait`): the same command collects them later.
    batch_requests_in_flight: int = 0
    batches_in_flight: int = 0

    @property
    def batch_waiting(self) -> bool:
        return self.batches_in_flight > 0

    @property
    def complete(self) -> bool:
        return not self.interrupted and self.stats.failed == 0 and not self.batch_waiting
