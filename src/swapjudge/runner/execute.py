"""The synchronous executor: makes planned calls with bounded concurrency, retries and rate limits, and commits
every call to the store the moment it is in. A call group shares one prompt: one request serves them all."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from swapjudge.config import LoadedConfig, Price
from swapjudge.errors import SwapjudgeError
from swapjudge.judges.base import FatalJudgeError, Judge, JudgeReply
from swapjudge.redact import redact
from swapjudge.runner.backend import open_judge
from swapjudge.runner.outcome import RunStats
from swapjudge.runner.plan import (
    PlannedCall,
    estimated_tokens,
    expected_output_tokens,
)
from swapjudge.runner.pricing import call_cost, price_for
from swapjudge.runner.progress import CallProgress
from swapjudge.runner.ratelimit import RateLimiter
from swapjudge.runner.retry import Abandoned, Control, Pacing, RetryPolicy, call_with_retries
from swapjudge.store import CallRecord, Store
from swapjudge.store.connection import StoreError, StoreFullError

AfterCall = Callable[[PlannedCall], Awaitable[None]]


def stored_call(call: PlannedCall, **outcome: Any) -> CallRecord:
    """The stored record of a planned call: its identity (round, item, slots, order, label, prompt) and `outcome`."""
    return CallRecord(item=call.item, first=call.first, second=call.second, order_index=call.order_index,
                      round=call.round, label=call.label, prompt_hash=call.request.prompt_hash, **outcome)


def record_from_reply(
    call: PlannedCall,
    reply: JudgeReply | None,
    *,
    error: str | None,
    attempts: int,
    source: str,
    price: Price | None,
) -> CallRecord:
    if reply is None:
        return stored_call(call, verdict=None, source=source, error=error, attempts=attempts)
    cost = reply.cost_usd
    if cost is None:
        cost = call_cost(
            price,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            cached_input_tokens=reply.cached_input_tokens,
            cache_write_tokens=reply.cache_write_tokens,
        )
    return stored_call(
        call,
        verdict=reply.verdict,
        source=source,
        raw=reply.raw,
        input_tokens=reply.input_tokens,
        output_tokens=reply.output_tokens,
        cached_input_tokens=reply.cached_input_tokens,
        latency_s=reply.latency_s,
        cost_usd=cost,
        error=redact(reply.error) if reply.error else error,
        probabilities=reply.probabilities,
        settings=reply.settings,
        attempts=attempts,
        strength=reply.strength,
    )


@dataclass
class _Context:
    store: Store
    run_id: int
    judge_hash: str
    price: Price | None
    stats: RunStats
    progress: CallProgress
    started: float
    control: Control
    done: int = 0
    in_flight: int = 0
    unstored: int = 0  # paid replies whose commit failed (a full disk, a damaged store)


async def _process(
    ctx: _Context, judge: Judge, group: Sequence[PlannedCall], limiter: RateLimiter, loaded: LoadedConfig
) -> None:
    jc = loaded.config.judge
    head = group[0]

    def count_attempt() -> None:
        ctx.stats.http_attempts += 1

    reply, error, attempts = await call_with_retries(
        lambda: judge.judge(head.request),
        RetryPolicy.of(jc),
        Pacing(limiter, ctx.control, count_attempt),
        est_tokens=estimated_tokens(head.request, expected_output_tokens(head.request)),
    )
    if error is not None:
        error = redact(error)  # an echoed header in an error body must not reach the store
    records = [record_from_reply(head, reply, error=error, attempts=attempts, source="api", price=ctx.price)]
    # Other calls of this run with the very same prompt reuse the reply (never paid twice).
    records += [
        record_from_reply(c, reply, error=error, attempts=0, source="cache", price=ctx.price) for c in group[1:]
    ]
    try:
        await record_paid(ctx.store, ctx.run_id, records, judge_hash=ctx.judge_hash, control=ctx.control)
    except StoreError:
        # the run stops (the worker treats it as fatal); the calls in flight end the same way and are counted
        ctx.unstored += reply is not None
        raise
    ctx.stats.made += 1
    for rec in records:
        ctx.done += 1
        if rec.error is not None:
            ctx.stats.failed += 1
        elif rec.verdict is None:
            ctx.stats.unparsed += 1
    if records[0].cost_usd is not None:
        ctx.stats.spend_usd += records[0].cost_usd
    elif records[0].error is None:
        ctx.stats.spend_known = False
    elapsed = max(1e-9, time.perf_counter() - ctx.started)
    ctx.progress.update(
        ctx.done,
        ctx.stats.failed,
        ctx.stats.made / elapsed,
        ctx.stats.spend_usd if ctx.stats.spend_known else None,
    )


def cached_record(call: PlannedCall, cached: Any) -> CallRecord:
    return stored_call(
        call,
        verdict=cached.verdict,
        source="cache",
        raw=cached.raw,
        input_tokens=cached.input_tokens,
        output_tokens=cached.output_tokens,
        cached_input_tokens=cached.cached_input_tokens,
        latency_s=cached.latency_s,
        cost_usd=cached.cost_usd,
        probabilities=cached.probabilities,
        settings=cached.settings,
        strength=cached.strength,
    )


def identical_record(call: PlannedCall) -> CallRecord:
    return stored_call(call, verdict="tie", source="identical",
                       raw="(identical answers: no call made, counted as a tie)", cost_usd=0.0)

async def record_paid(store: Store, run_id: int, records: list[CallRecord], *, judge_hash: str,
                      control: Control) -> None:
    """Commit paid replies; while another process holds the store locked, keep them and retry the write (a paid
    reply is never dropped)."""
    delay = 0.2
    while True:
        try:
            # A short wait for the lock: a long one would freeze every call in flight (and run out their timeouts).
            store.record_calls(run_id, records, judge_hash=judge_hash, busy_timeout_s=0.05)
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) and "busy" not in str(err):
                raise
            control.note(f"the store {store.path} is locked by another process: keeping the paid replies and "
                         "retrying the write")
            await asyncio.sleep(delay)
            delay = min(2 * delay, 2.0)


async def execute_groups(
    loaded: LoadedConfig,
    store: Store,
    run_id: int,
    groups: list[list[PlannedCall]],
    stats: RunStats,
    *,
    judge: Judge | None,
    console: Console | None,
    progress: bool,
    handle_sigint: bool,
    after_call: AfterCall | None = None,
) -> bool:
    """Make the calls. Returns True when a Ctrl-C stopped the run. The first Ctrl-C sends nothing new and
    waits for the calls in flight (each up to its timeout) to store their replies; a second one abandons them."""
    jc = loaded.config.judge
    own_judge = judge is None
    active = judge if judge is not None else open_judge(loaded)
    limiter = RateLimiter(jc.requests_per_minute, jc.tokens_per_minute)
    queue = deque(groups)
    total = sum(len(g) for g in groups)
    control = Control(stop=asyncio.Event(), console=console, max_retry_after_s=jc.max_retry_after_s)
    abandon = asyncio.Event()
    interrupts = 0
    fatal: list[BaseException] = []
    loop = asyncio.get_running_loop()
    ctx: _Context | None = None

    def on_sigint() -> None:
        nonlocal interrupts
        interrupts += 1
        control.stop.set()
        if interrupts == 1:
            waiting = ctx.in_flight if ctx is not None else 0
            if console is not None:
                console.print(f"Ctrl-C: sending nothing new; waiting up to {jc.timeout_s:g} s for {waiting} call(s) "
                              "in flight to store their replies (Ctrl-C again to abandon them)", highlight=False)
        else:
            abandon.set()

    if handle_sigint:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        with CallProgress(console, total, progress) as bar:
            ctx = _Context(
                store=store,
                run_id=run_id,
                judge_hash=loaded.judge_hash,
                price=price_for(jc.model, loaded.config.prices, backend=jc.backend),
                stats=stats,
                progress=bar,
                started=time.perf_counter(),
                control=control,
            )
            context = ctx

            async def worker() -> None:
                while queue and not control.stop.is_set():
                    group = queue.popleft()
                    context.in_flight += 1
                    try:
                        await _process(context, active, group, limiter, loaded)
                        if after_call is not None:
                            await after_call(group[0])
                    except Abandoned:
                        return
                    except (FatalJudgeError, SwapjudgeError) as err:
                        fatal.append(err)
                        control.stop.set()
                    finally:
                        context.in_flight -= 1

            workers = [asyncio.create_task(worker()) for _ in range(min(jc.max_concurrency, len(groups)))]
            abandoner = asyncio.create_task(abandon.wait())
            everything = asyncio.gather(*workers)
            # Workers end by themselves once stopping (their calls in flight stored); a second Ctrl-C cuts them.
            waitables: set[asyncio.Future[Any]] = {everything, abandoner}
            await asyncio.wait(waitables, return_when=asyncio.FIRST_COMPLETED)
            interrupted = interrupts > 0 and not fatal
            for task in workers:
                task.cancel()
            abandoner.cancel()
            await asyncio.gather(*workers, abandoner, return_exceptions=True)
            with contextlib.suppress(asyncio.CancelledError):
                await everything  # retrieve its outcome so asyncio does not log it
    finally:
        if handle_sigint:
            loop.remove_signal_handler(signal.SIGINT)
        if own_judge:
            await active.aclose()
    if fatal:
        store_errors = [err for err in fatal if isinstance(err, StoreError)]
        if store_errors:
            raise _counted(store_errors[0], ctx.unstored if ctx is not None else 0)
        if isinstance(fatal[0], SwapjudgeError):
            raise fatal[0]
        raise SwapjudgeError(f"the run stopped: {redact(str(fatal[0]))}")
    return interrupted


def _counted(err: StoreError, unstored: int) -> StoreError:
    """A store error that stopped the run, saying how many paid replies it kept out of the store."""
    if isinstance(err, StoreFullError):
        return err.counting(unstored)
    replies = f"{unstored:,} {'reply' if unstored == 1 else 'replies'}"
    return type(err)(f"{err} ({replies} not stored)")
