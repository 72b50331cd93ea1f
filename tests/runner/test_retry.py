"""The one retry policy every provider call goes through (runner/retry.py): which failures are retried, how long
it waits, what a spent retry budget says, and that the batch engine's polls use it too."""

from __future__ import annotations

import asyncio
import math
import random

import pytest

from swapjudge.judges.base import FatalJudgeError, PermanentJudgeError, TransientJudgeError, UnreachableJudgeError
from swapjudge.runner.retry import (
    Abandoned,
    Control,
    Pacing,
    ProviderBackoffError,
    RetryPolicy,
    ServerUnreachableError,
    call_with_retries,
    idempotent,
    retry_transient,
)


class Script:
    """A call that fails as scripted, attempt by attempt, then returns its attempt number."""

    def __init__(self, *failures: BaseException | None) -> None:
        self.failures = list(failures)
        self.attempts = 0

    async def __call__(self) -> int:
        self.attempts += 1
        if self.failures:
            failure = self.failures.pop(0)
            if failure is not None:
                raise failure
        return self.attempts


def test_backoff_is_exponential_with_full_jitter_and_capped() -> None:
    policy = RetryPolicy(max_retries=9, backoff_s=1.0, max_backoff_s=10.0)
    random.seed(5)
    for attempt in range(8):
        cap = min(10.0, 2.0**attempt)
        delays = [policy.delay(attempt, None) for _ in range(400)]
        assert all(cap * 0.5 <= d <= cap for d in delays)
        # jittered over the whole half-interval, not a fixed fraction of it
        assert max(delays) - min(delays) > 0.4 * cap * 0.5


def test_a_retry_after_wins_up_to_the_ceiling_of_backoff() -> None:
    policy = RetryPolicy(max_retries=3, backoff_s=30.0, max_backoff_s=5.0)
    assert policy.delay(0, 0.25) == 0.25  # the server's hint, not 30 s of backoff and no jitter
    assert policy.delay(2, 42.0) == 5.0
    assert RetryPolicy(max_retries=1, backoff_s=0.5).delay(0, 42.0) == 42.0  # no ceiling (the batch polls)
    assert RetryPolicy(max_retries=1, backoff_s=0.5).max_backoff_s == math.inf


def test_transient_failures_are_retried_and_the_last_one_is_said() -> None:
    policy = RetryPolicy(max_retries=2, backoff_s=0.0, max_backoff_s=0.0)
    ok = Script(TransientJudgeError("openai: HTTP 500", status=500), None)
    assert asyncio.run(call_with_retries(ok, policy)) == (2, None, 2)
    spent = Script(*[TransientJudgeError("openai: HTTP 503", status=503)] * 3)
    assert asyncio.run(call_with_retries(spent, policy)) == (None, "gave up after 3 attempts: openai: HTTP 503", 3)
    with pytest.raises(TransientJudgeError, match="HTTP 503"):  # the bare loop raises what it saw last
        asyncio.run(retry_transient(Script(*[TransientJudgeError("HTTP 503")] * 3), policy))


def test_a_timeout_is_transient_and_names_the_limit() -> None:
    async def slow() -> int:
        await asyncio.sleep(5)
        return 1

    policy = RetryPolicy(max_retries=1, backoff_s=0.0, max_backoff_s=0.0, timeout_s=0.05)
    assert asyncio.run(call_with_retries(slow, policy)) == (None, "gave up after 2 attempts: timed out after 0.05 s", 2)


def test_a_permanent_failure_or_a_backend_bug_ends_the_call_a_fatal_one_raises() -> None:
    policy = RetryPolicy(max_retries=5, backoff_s=0.0, max_backoff_s=0.0)
    bad = Script(TransientJudgeError("HTTP 429"), PermanentJudgeError("openai: HTTP 400: bad request"))
    assert asyncio.run(call_with_retries(bad, policy)) == (None, "openai: HTTP 400: bad request", 2)
    assert bad.attempts == 2  # not retried
    bug = Script(KeyError("choices"))
    assert asyncio.run(call_with_retries(bug, policy)) == (None, "KeyError: 'choices'", 1)
    with pytest.raises(FatalJudgeError):
        asyncio.run(call_with_retries(Script(FatalJudgeError("openai: HTTP 401")), policy))


def test_with_control_a_server_that_never_answered_stops_the_run() -> None:
    policy = RetryPolicy(max_retries=5, backoff_s=0.0, max_backoff_s=0.0)

    async def go(answered: bool) -> tuple[int | None, str | None, int]:
        control = Control(stop=asyncio.Event(), answered=answered)
        refused = Script(UnreachableJudgeError("cannot reach http://127.0.0.1:9", url="http://127.0.0.1:9"), None)
        return await call_with_retries(refused, policy, Pacing(control=control))

    with pytest.raises(ServerUnreachableError, match="is the server running"):
        asyncio.run(go(answered=False))
    assert asyncio.run(go(answered=True)) == (2, None, 2)  # it answered before: a dropped connection, retried


def test_with_control_a_long_retry_after_stops_and_a_stopping_run_sends_nothing() -> None:
    policy = RetryPolicy(max_retries=5, backoff_s=0.0, max_backoff_s=1.0)

    async def asks(wait_s: float) -> None:
        control = Control(stop=asyncio.Event(), max_retry_after_s=60.0)
        await call_with_retries(Script(TransientJudgeError("HTTP 429", retry_after=wait_s)), policy,
                                Pacing(control=control))

    with pytest.raises(ProviderBackoffError, match="wait 3,600 s"):
        asyncio.run(asks(3600.0))

    async def stopped() -> None:
        control = Control(stop=asyncio.Event())
        control.stop.set()
        await call_with_retries(Script(), policy, Pacing(control=control))

    with pytest.raises(Abandoned):
        asyncio.run(stopped())


def test_the_batch_polls_retry_transient_failures_with_the_servers_wait() -> None:
    loop_time: list[float] = []

    async def poll() -> dict[str, int]:
        loop_time.append(asyncio.get_running_loop().time())
        if len(loop_time) < 3:
            raise TransientJudgeError("openai batch: HTTP 429", retry_after=0.1, status=429)
        return {"attempts": len(loop_time)}

    assert asyncio.run(idempotent(poll)) == {"attempts": 3}
    assert loop_time[1] - loop_time[0] >= 0.1 and loop_time[2] - loop_time[1] >= 0.1
    with pytest.raises(PermanentJudgeError):  # not retried, raised: the engine decides
        asyncio.run(idempotent(Script(PermanentJudgeError("HTTP 400"))))
