"""The one retry policy for every call to a provider, whichever command makes it: a judge call of a run, the
one-request check, the live identical probe, the anchored scorer's completions, and the batch engine's polls.

A transient failure (rate limit, server error, timeout, dropped connection) is retried with exponential backoff
and full jitter; a server's Retry-After wins when it gives one, up to `max_backoff_s`. A permanent failure (a
400) ends that call and is recorded; a fatal one (missing key, 401/403, unknown model) stops the command. With a
`Control` the run as a whole is consulted too: nothing is sent once it is stopping, a server that refuses the
connection before it ever answered stops it, and a Retry-After above the run's ceiling stops it, resumable.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rich.console import Console

from swapjudge.config import JudgeConfig
from swapjudge.errors import SwapjudgeError
from swapjudge.judges.base import FatalJudgeError, PermanentJudgeError, TransientJudgeError, UnreachableJudgeError
from swapjudge.runner.ratelimit import RateLimiter

T = TypeVar("T")


class Abandoned(Exception):
    """The run is stopping: this call sends nothing more (it stays missing and a resumed run makes it)."""


class ServerUnreachableError(SwapjudgeError):
    """The judge's server refused the connection (or its host does not resolve) before ever answering."""


class ProviderBackoffError(SwapjudgeError):
    """The provider asked to wait longer than the configured ceiling: the run stops, resumable."""


@dataclass
class Control:
    """What the workers share about the run as a whole: stopping, whether the server has ever answered, and
    the notes they print (each distinct note at most once every few seconds, not once per worker)."""

    stop: asyncio.Event
    console: Console | None = None
    answered: bool = False
    max_retry_after_s: float | None = None
    last_said: dict[str, float] = field(default_factory=dict)

    def note(self, text: str) -> None:
        if self.console is None:
            return
        now = time.monotonic()
        if now - self.last_said.get(text, -1e9) >= 5.0:
            self.last_said[text] = now
            self.console.print(text, highlight=False, markup=False)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry. `timeout_s` bounds each attempt (None: the client's own timeout)."""

    max_retries: int
    backoff_s: float
    max_backoff_s: float = math.inf
    timeout_s: float | None = None

    @classmethod
    def of(cls, judge: JudgeConfig) -> RetryPolicy:
        """The policy a judge configuration sets (`max_retries`, `backoff_s`, `max_backoff_s`, `timeout_s`)."""
        return cls(judge.max_retries, judge.backoff_s, judge.max_backoff_s, judge.timeout_s)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before attempt `attempt + 1`: the server's Retry-After (capped at `max_backoff_s`),
        else exponential backoff with full jitter."""
        if retry_after is not None:
            return min(retry_after, self.max_backoff_s)
        return min(self.max_backoff_s, self.backoff_s * 2.0**attempt) * random.uniform(0.5, 1.0)


# The batch engine's idempotent provider requests (polls, listings, downloads): six attempts, no ceiling.
BATCH_POLICY = RetryPolicy(max_retries=5, backoff_s=0.5)


@dataclass(frozen=True)
class Pacing:
    """What a command's calls share besides the policy: the client-side rate limits, the run's `Control`, and a
    hook called before every attempt (the run counts its HTTP attempts)."""

    limiter: RateLimiter = field(default_factory=lambda: RateLimiter(None, None))
    control: Control | None = None
    on_attempt: Callable[[], None] | None = None


UNPACED = Pacing()


async def retry_transient(make: Callable[[], Awaitable[T]], policy: RetryPolicy, pacing: Pacing = UNPACED, *,
                          est_tokens: float = 0.0) -> tuple[T, int]:
    """`make()` until it does not fail transiently: (its value, attempts made). `est_tokens` is what one attempt
    is taken to spend against the token rate limit. Once the retries are spent the last transient failure is
    raised (a timeout as a TransientJudgeError); any other failure is raised at once."""
    control = pacing.control
    last: TransientJudgeError | None = None
    for attempt in range(policy.max_retries + 1):
        await pacing.limiter.acquire(est_tokens)
        if control is not None and control.stop.is_set():
            raise Abandoned
        if pacing.on_attempt is not None:
            pacing.on_attempt()
        try:
            async with asyncio.timeout(policy.timeout_s):  # no extra task per call, unlike wait_for in 3.11
                return await make(), attempt + 1
        except TimeoutError:
            limit = f" after {policy.timeout_s:g} s" if policy.timeout_s is not None else ""
            last = TransientJudgeError(f"timed out{limit}")
        except UnreachableJudgeError as err:
            if control is not None and not control.answered:
                # Nothing listening, or no such host: every call would wait out its retries for nothing.
                raise ServerUnreachableError(f"{err}: {err.hint}") from None
            last = err
        except TransientJudgeError as err:
            last = err
        if attempt == policy.max_retries:
            break
        retry_after = last.retry_after
        if retry_after is not None and control is not None:
            ceiling = control.max_retry_after_s
            if ceiling is not None and retry_after > ceiling:
                raise ProviderBackoffError(
                    f"the server asks to wait {retry_after:,.0f} s before the next request ({last}), more than "
                    f"max_retry_after_s = {ceiling:g} s: stopped; every finished call is stored, run the same "
                    "command again later to resume"
                )
        delay = policy.delay(attempt, retry_after)
        if retry_after is not None and control is not None:
            capped = f", capped at max_backoff_s = {policy.max_backoff_s:g} s" if retry_after > policy.max_backoff_s \
                else ""
            control.note(f"waiting {delay:g} s as the server asks ({last}: Retry-After {retry_after:g} s{capped})")
        await asyncio.sleep(delay)
        if control is not None and control.stop.is_set():
            raise Abandoned
    assert last is not None
    raise last


async def call_with_retries(make: Callable[[], Awaitable[T]], policy: RetryPolicy, pacing: Pacing = UNPACED, *,
                            est_tokens: float = 0.0) -> tuple[T | None, str | None, int]:
    """One provider call (`make()`: a judge call, a completion) under the policy: (reply, error, attempts).

    A permanent failure, retries spent, or a backend's own bug on this one prompt (e.g. a context overflow)
    give (None, error, attempts): recorded, the command goes on. Fatal failures and user errors raise; with
    a `Control` in `pacing`, so do a stopping run (Abandoned), a server that never answered and a Retry-After above
    the ceiling.
    """
    failure: list[str] = []

    async def once() -> T | None:
        try:
            return await make()
        except (TransientJudgeError, TimeoutError, FatalJudgeError, SwapjudgeError):
            raise
        except PermanentJudgeError as err:
            failure.append(str(err))
        except Exception as err:
            failure.append(f"{type(err).__name__}: {err}")
        return None

    try:
        reply, attempts = await retry_transient(once, policy, pacing, est_tokens=est_tokens)
    except TransientJudgeError as err:
        spent = policy.max_retries + 1
        return None, f"gave up after {spent} attempts: {err}", spent
    if failure:
        return None, failure[-1], attempts
    if pacing.control is not None:
        pacing.control.answered = True
    return reply, None, attempts


async def idempotent(make: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    """An idempotent provider request (poll, list, download) under the batch policy; its failure raises."""
    value, _ = await retry_transient(make, BATCH_POLICY)
    return value
