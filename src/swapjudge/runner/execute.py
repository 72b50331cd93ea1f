"""The synchronous executor: makes planned calls with bounded concurrency, retries and rate limits, and commits
every call to the store the moment it is in. A call group shares one prompt: one request serves them all."""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from swapjudge.config import LoadedConfig, Price
from swapjudge.errors import SwapjudgeError
from swapjudge.judges.base import (
    FatalJudgeError,
    Judge,
    JudgeReply,
    JudgeRequest,
    PermanentJudgeError,
    TransientJudgeError,
)
from swapjudge.judges.registry import create_judge
from swapjudge.runner.outcome import RunStats
from swapjudge.runner.plan import (
    PlannedCall,
    estimated_tokens,
    expected_output_tokens,
)
from swapjudge.runner.pricing import call_cost, price_for
from swapjudge.runner.progress import CallProgress
from swapjudge.runner.ratelimit import RateLimiter
from swapjudge.store import CallRecord, Store

AfterCall = Callable[[PlannedCall], Awaitable[None]]

def resolved_judge_config(loaded: LoadedConfig) -> Any:
    """The judge config with its file paths (replay records, local .gguf model) resolved against the config file."""
    cfg = loaded.config.judge
    updates: dict[str, Any] = {}
    if cfg.path:
        updates["path"] = str(loaded.resolve(cfg.path))
    if cfg.backend == "local" and cfg.model and cfg.model.endswith(".gguf"):
        updates["model"] = str(loaded.resolve(cfg.model))
    return cfg.model_copy(update=updates) if updates else cfg

def _stored(call: PlannedCall, **outcome: Any) -> CallRecord:
    """The stored record of a planned call: its identity (round, item, slots, order, label, prompt) and `outcome`."""
    return CallRecord(item=call.item, first=call.first, second=call.second, order_index=call.order_index,
                      round=call.round, label=call.label, prompt_hash=call.request.prompt_hash, **outcome)


def _record_from_reply(
    call: PlannedCall,
    reply: JudgeReply | None,
    *,
    error: str | None,
    attempts: int,
    source: str,
    price: Price | None,
) -> CallRecord:
    if reply is None:
        return _stored(call, verdict=None, source=source, error=error, attempts=attempts)
    cost = reply.cost_usd
    if cost is None:
        cost = call_cost(
            price,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            cached_input_tokens=reply.cached_input_tokens,
            cache_write_tokens=reply.cache_write_tokens,
        )
    return _stored(
        call,
        verdict=reply.verdict,
        source=source,
        raw=reply.raw,
        input_tokens=reply.input_tokens,
        output_tokens=reply.output_tokens,
        cached_input_tokens=reply.cached_input_tokens,
        latency_s=reply.latency_s,
        cost_usd=cost,
        error=reply.error or error,
        probabilities=reply.probabilities,
        settings=reply.settings,
        attempts=attempts,
    )


async def call_with_retries(
    judge: Judge,
    request: JudgeRequest,
    *,
    timeout_s: float,
    max_retries: int,
    backoff_s: float,
    max_backoff_s: float,
    limiter: RateLimiter,
    est_tokens: float,
    on_attempt: Callable[[], None] | None = None,
) -> tuple[JudgeReply | None, str | None, int]:
    """One judge call with retries on transient failures. Returns (reply, error, attempts)."""
    last = ""
    for attempt in range(max_retries + 1):
        await limiter.acquire(est_tokens)
        if on_attempt is not None:
            on_attempt()
        retry_after: float | None = None
        try:
            async with asyncio.timeout(timeout_s):  # no extra task per call, unlike wait_for in 3.11
                reply = await judge.judge(request)
            return reply, None, attempt + 1
        except TimeoutError:
            last = f"timed out after {timeout_s:g} s"
        except TransientJudgeError as err:
            last, retry_after = str(err), err.retry_after
        except PermanentJudgeError as err:
            return None, str(err), attempt + 1
        except (FatalJudgeError, SwapjudgeError):
            raise
        except Exception as err:
            # A backend bug or a library error on this one prompt (e.g. a context overflow): recorded, run goes on.
            return None, f"{type(err).__name__}: {err}", attempt + 1
        if attempt == max_retries:
            break
        # Exponential backoff with full jitter; a server's Retry-After wins when it gives one.
        delay = (
            retry_after
            if retry_after is not None
            else min(max_backoff_s, backoff_s * 2**attempt) * random.uniform(0.5, 1.0)
        )
        await asyncio.sleep(delay)
    return None, f"gave up after {max_retries + 1} attempts: {last}", max_retries + 1


@dataclass
class _Context:
    store: Store
    run_id: int
    judge_hash: str
    price: Price | None
    stats: RunStats
    progress: CallProgress
    started: float
    done: int = 0


async def _process(
    ctx: _Context, judge: Judge, group: Sequence[PlannedCall], limiter: RateLimiter, loaded: LoadedConfig
) -> None:
    jc = loaded.config.judge
    head = group[0]

    def count_attempt() -> None:
        ctx.stats.http_attempts += 1

    reply, error, attempts = await call_with_retries(
        judge,
        head.request,
        timeout_s=jc.timeout_s,
        max_retries=jc.max_retries,
        backoff_s=jc.backoff_s,
        max_backoff_s=jc.max_backoff_s,
        limiter=limiter,
        est_tokens=estimated_tokens(head.request, expected_output_tokens(head.request)),
        on_attempt=count_attempt,
    )
    records = [_record_from_reply(head, reply, error=error, attempts=attempts, source="api", price=ctx.price)]
    # Other calls of this run with the very same prompt reuse the reply (never paid twice).
    records += [
        _record_from_reply(c, reply, error=error, attempts=0, source="cache", price=ctx.price) for c in group[1:]
    ]
    ctx.store.record_calls(ctx.run_id, records, judge_hash=ctx.judge_hash)
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
    return _stored(
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
    )


def identical_record(call: PlannedCall) -> CallRecord:
    return _stored(call, verdict="tie", source="identical", raw="(identical answers: no call made, counted as a tie)",
                   cost_usd=0.0)

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
    jc = loaded.config.judge
    own_judge = judge is None
    active = judge if judge is not None else create_judge(resolved_judge_config(loaded))
    limiter = RateLimiter(jc.requests_per_minute, jc.tokens_per_minute)
    queue = deque(groups)
    total = sum(len(g) for g in groups)
    stop = asyncio.Event()
    fatal: list[BaseException] = []
    loop = asyncio.get_running_loop()
    if handle_sigint:
        loop.add_signal_handler(signal.SIGINT, stop.set)
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
            )

            async def worker() -> None:
                while queue and not stop.is_set():
                    group = queue.popleft()
                    try:
                        await _process(ctx, active, group, limiter, loaded)
                        if after_call is not None:
                            await after_call(group[0])
                    except (FatalJudgeError, SwapjudgeError) as err:
                        fatal.append(err)
                        stop.set()

            workers = [asyncio.create_task(worker()) for _ in range(min(jc.max_concurrency, len(groups)))]
            stopper = asyncio.create_task(stop.wait())
            everything = asyncio.gather(*workers)
            waitables: set[asyncio.Future[Any]] = {everything, stopper}
            await asyncio.wait(waitables, return_when=asyncio.FIRST_COMPLETED)
            interrupted = stop.is_set() and not fatal
            for task in workers:
                task.cancel()
            stopper.cancel()
            await asyncio.gather(*workers, stopper, return_exceptions=True)
            with contextlib.suppress(asyncio.CancelledError):
                await everything  # retrieve its outcome so asyncio does not log it
    finally:
        if handle_sigint:
            loop.remove_signal_handler(signal.SIGINT)
        if own_judge:
            await active.aclose()
    if fatal:
        raise SwapjudgeError(f"the run stopped: {fatal[0]}")
    return interrupted
