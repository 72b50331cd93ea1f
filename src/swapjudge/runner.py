"""The runner: the only code that knows which identity sits in which slot.

It plans the calls (every pair in both orders, or one coin-flipped order in `random` mode), serves what it can
from the store (calls already made by an unfinished run, the reply cache, identical answers), makes the rest
with bounded concurrency, client-side rate limits and retries, and commits every call the moment it is in.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import random
import signal
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

from swapjudge.adaptive import adaptive_view, verdict_confidence
from swapjudge.config import LoadedConfig, Price
from swapjudge.errors import InputError, SwapjudgeError
from swapjudge.judges.base import (
    FatalJudgeError,
    Judge,
    JudgeReply,
    JudgeRequest,
    PermanentJudgeError,
    TransientJudgeError,
)
from swapjudge.judges.registry import create_judge, supports_structured
from swapjudge.pairs_input import PairsFile, load_pairs
from swapjudge.pricing import call_cost, price_for
from swapjudge.prompts import render_request
from swapjudge.store import CallRecord, Store

CHARS_PER_TOKEN = 4.0  # rough estimate for planning; real counts come from the API's usage


@dataclass(frozen=True)
class PlannedCall:
    item: str
    first: str
    second: str
    order_index: int  # 0: the coin's order; 1: the swap
    label: str | None
    request: JudgeRequest
    identical: bool
    round: int = 0

    @property
    def key(self) -> tuple[int, str, str, str]:
        return (self.round, self.item, self.first, self.second)


# Awaited after each call the runner makes (see run_async).
AfterCall = Callable[[PlannedCall], Awaitable[None]]


@dataclass(frozen=True)
class Plan:
    calls: tuple[PlannedCall, ...]
    seed: str
    pairs: int
    systems: tuple[str, ...]
    skipped_missing: int  # (item, pair) combinations skipped because an answer is missing
    structured: bool
    # Content hash of the judged pairs (task and both answers of each), independent of file layout and order.
    pair_set_hash: str = ""


def coin_seed(pairs_digest: str, user_seed: str) -> str:
    """The run's coin seed, derived from the inputs (pairs file bytes and the configured seed)."""
    return hashlib.sha256(f"{pairs_digest}|{user_seed}".encode()).hexdigest()[:16]


def coin_first(seed: str, item: str, x: str, y: str) -> str:
    """Which of x < y sits in slot 1 in the pair's first call: a seeded coin per (item, pair)."""
    lo, hi = sorted((x, y))
    bit = hashlib.sha256(f"{seed}|{item}|{lo}|{hi}".encode()).digest()[0] & 1
    return lo if bit == 0 else hi


def release_pairs(releases: Sequence[str], baseline: str) -> list[tuple[str, str]]:
    """(older, newer) for each release against the previous one, then against the pinned baseline (a pair
    already in the first chain is judged once)."""
    out = list(itertools.pairwise(releases))
    seen = {frozenset(p) for p in out}
    for r in releases:
        if r != baseline and frozenset((baseline, r)) not in seen:
            out.append((baseline, r))
            seen.add(frozenset((baseline, r)))
    return out


def system_pairs(loaded: LoadedConfig, pairs: PairsFile) -> list[tuple[str, str]]:
    cfg = loaded.config.pairs
    available = pairs.systems
    if cfg.plan == "two":
        assert cfg.a is not None and cfg.b is not None
        return [(cfg.a, cfg.b)]
    if cfg.plan == "releases":
        assert cfg.releases is not None and cfg.baseline is not None
        named = [*cfg.releases, *([] if cfg.baseline in cfg.releases else [cfg.baseline])]
        unknown = [s for s in named if s not in available]
        if unknown:
            raise InputError(f"release(s) not in any answer: {', '.join(unknown)}", path=str(pairs.path),
                             field="answers")
        return release_pairs(cfg.releases, cfg.baseline)
    systems = cfg.systems or available
    unknown = [s for s in systems if s not in available]
    if unknown:
        raise InputError(
            f"configured system(s) not in any answer: {', '.join(unknown)}",
            path=str(pairs.path),
            field="answers",
        )
    if cfg.plan == "baseline":
        assert cfg.baseline is not None
        if cfg.baseline not in available:
            raise InputError(f"baseline {cfg.baseline!r} is not in any answer", path=str(pairs.path), field="answers")
        return [(cfg.baseline, s) for s in systems if s != cfg.baseline]
    return list(itertools.combinations(sorted(systems), 2))


def build_plan(loaded: LoadedConfig, pairs: PairsFile, *, structured: bool) -> Plan:
    cfg = loaded.config
    seed = coin_seed(pairs.digest, cfg.seed)
    combos = system_pairs(loaded, pairs)
    calls: list[PlannedCall] = []
    skipped = 0
    n_pairs = 0
    pair_keys: list[tuple[str, ...]] = []
    for it in pairs.items:
        for x, y in combos:
            if x not in it.answers or y not in it.answers:
                if cfg.pairs.plan == "two":
                    missing = x if x not in it.answers else y
                    raise InputError(
                        f"has no answer from system {missing!r}",
                        path=str(pairs.path),
                        line=it.line,
                        field=f"answers.{missing}",
                    )
                skipped += 1
                continue
            n_pairs += 1
            lo, hi = sorted((x, y))
            pair_keys.append((it.item, lo, hi, _sha(it.prompt), _sha(it.answers[lo]), _sha(it.answers[hi])))
            first = coin_first(seed, it.item, x, y)
            second = y if first == x else x
            orders = [(first, second), (second, first)] if cfg.orders == "both" else [(first, second)]
            identical = it.answers[x] == it.answers[y]
            for idx, (s1, s2) in enumerate(orders):
                request = render_request(
                    task=it.prompt,
                    first=it.answers[s1],
                    second=it.answers[s2],
                    rubric=loaded.rubric_text,
                    allow_tie=cfg.allow_tie,
                    chain_of_thought=cfg.chain_of_thought,
                    structured=structured,
                    metadata={"item": it.item, "first": s1, "second": s2, "round": 0},
                )
                calls.append(
                    PlannedCall(
                        item=it.item,
                        first=s1,
                        second=s2,
                        order_index=idx,
                        label=it.label,
                        request=request,
                        identical=identical and not cfg.judge_identical,
                    )
                )
    return Plan(
        calls=tuple(calls),
        seed=seed,
        pairs=n_pairs,
        systems=tuple(sorted({s for c in combos for s in c})),
        skipped_missing=skipped,
        structured=structured,
        pair_set_hash=_sha("\n".join("\t".join(k) for k in sorted(pair_keys))),
    )


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# ---- rate limiting -------------------------------------------------------------------------------------


class _Bucket:
    """A token bucket refilled at `per_minute / 60` per second, holding at most one second's worth (or one
    request's need). A request may take it into debt, so one large request never waits forever."""

    def __init__(self, per_minute: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.stamp = time.monotonic()


class RateLimiter:
    def __init__(self, requests_per_minute: float | None, tokens_per_minute: float | None) -> None:
        self._buckets: list[tuple[_Bucket, bool]] = []
        if requests_per_minute:
            self._buckets.append((_Bucket(requests_per_minute), False))
        if tokens_per_minute:
            self._buckets.append((_Bucket(tokens_per_minute), True))
        self._lock = asyncio.Lock()

    async def acquire(self, tokens: float) -> None:
        if not self._buckets:
            return
        async with self._lock:  # first come, first served
            while True:
                delay = 0.0
                for bucket, is_tokens in self._buckets:
                    amount = tokens if is_tokens else 1.0
                    now = time.monotonic()
                    bucket.level = min(bucket.capacity, bucket.level + (now - bucket.stamp) * bucket.rate)
                    bucket.stamp = now
                    need = min(amount, bucket.capacity)
                    if bucket.level < need:
                        delay = max(delay, (need - bucket.level) / bucket.rate)
                if delay <= 0:
                    for bucket, is_tokens in self._buckets:
                        bucket.level -= tokens if is_tokens else 1.0
                    return
                await asyncio.sleep(delay)


# ---- execution ----------------------------------------------------------------------------------------


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
    adaptive_skipped: int = 0  # swapped calls not made (adaptive swapping); nothing is stored for them

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

    @property
    def complete(self) -> bool:
        return not self.interrupted and self.stats.failed == 0


def estimated_tokens(request: JudgeRequest, output: int) -> float:
    """Tokens a call spends, for the rate limiter: the prompt by characters plus `output` reply tokens."""
    return (len(request.system) + len(request.user)) / CHARS_PER_TOKEN + output


def expected_output_tokens(request: JudgeRequest) -> int:
    """Reply tokens a call is planned at: a reasoning, a JSON verdict, or a bare word."""
    if request.chain_of_thought:
        return 250
    return 30 if request.structured else 4


def resolved_judge_config(loaded: LoadedConfig) -> Any:
    """The judge config with its file paths (replay records, local .gguf model) resolved against the config file."""
    cfg = loaded.config.judge
    updates: dict[str, Any] = {}
    if cfg.path:
        updates["path"] = str(loaded.resolve(cfg.path))
    if cfg.backend == "local" and cfg.model and cfg.model.endswith(".gguf"):
        updates["model"] = str(loaded.resolve(cfg.model))
    return cfg.model_copy(update=updates) if updates else cfg


class _Progress:
    """A live bar on a terminal; elsewhere (a CI log, a file) a plain line at every tenth of the calls."""

    def __init__(self, console: Console | None, total: int, enabled: bool) -> None:
        self.enabled = enabled and total > 0
        self.progress: Progress | None = None
        self.task: Any = None
        self.console = console
        self.total = total
        self.plain = self.enabled and console is not None and not console.is_terminal
        self._next_line = 0
        if self.enabled and not self.plain:
            self.progress = Progress(
                TextColumn("judging"),
                BarColumn(),
                TaskProgressColumn(),
                TextColumn("{task.completed}/{task.total} calls"),
                TextColumn("[red]{task.fields[failures]} failed[/]"),
                TextColumn("{task.fields[rate]:.1f} calls/s"),
                TextColumn("{task.fields[spend]}"),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=console,
                transient=False,
                refresh_per_second=4,
            )
            self.task = self.progress.add_task("judging", total=total, failures=0, rate=0.0, spend="$0.0000")

    def __enter__(self) -> _Progress:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def update(self, done: int, failures: int, rate: float, spend: float | None) -> None:
        text = f"${spend:.4f}" if spend is not None else "spend n/a"
        if self.progress is not None:
            self.progress.update(self.task, completed=done, failures=failures, rate=rate, spend=text)
        elif self.plain and self.console is not None and (done >= self._next_line or done == self.total):
            eta = f", about {(self.total - done) / rate:.0f} s left" if rate > 0 and done < self.total else ""
            self.console.print(f"  judging: {done}/{self.total} calls ({done / self.total:.0%}), {failures} failed, "
                               f"{rate:.2f} calls/s, {text}{eta}", highlight=False, markup=False)
            self._next_line = done + max(1, -(-self.total // 10))


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
    progress: _Progress
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


def _cached_record(call: PlannedCall, cached: Any) -> CallRecord:
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


def _identical_record(call: PlannedCall) -> CallRecord:
    return _stored(call, verdict="tie", source="identical", raw="(identical answers: no call made, counted as a tie)",
                   cost_usd=0.0)


def adaptive_skips(calls: Iterable[Mapping[str, Any]], threshold: float) -> dict[tuple[int, str, str, str], float]:
    """The swapped calls adaptive swapping does not make: for each stored first-order call without a transport
    error whose verdict's confidence is at least `threshold`, the key (round, item, first, second) of its swapped
    call, with that confidence. Deterministic from the stored first calls, so a resumed run skips the same ones."""
    out: dict[tuple[int, str, str, str], float] = {}
    for c in calls:
        if c["order_index"] != 0 or c["error"] is not None or c.get("source") == "inferred":
            continue
        conf = verdict_confidence(c["verdict"], c["probabilities"])
        if conf is not None and conf >= threshold:
            out[(int(c["round"]), str(c["item"]), str(c["second"]), str(c["first"]))] = conf
    return out


def _adaptive_second_calls(
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


def prepare(loaded: LoadedConfig) -> tuple[PairsFile, Plan]:
    pairs = load_pairs(loaded.pairs_path)
    structured = loaded.config.judge.structured_output and supports_structured(loaded.config.judge.backend)
    return pairs, build_plan(loaded, pairs, structured=structured)


async def run_async(
    loaded: LoadedConfig,
    *,
    store_path: str | Path | None = None,
    judge: Judge | None = None,
    console: Console | None = None,
    progress: bool = True,
    handle_sigint: bool = False,
    after_call: AfterCall | None = None,
) -> RunOutcome:
    """Judge the configured pairs. Resumes the unfinished run of the same configuration if there is one.
    `after_call` is awaited after each call is made and stored (not for calls served from the store or cache),
    on the same worker, before that worker's next call: e.g. the live identical probe runs a self-pair call
    there, right after the call that shares its prefix, so a local judge's KV cache serves both."""
    cfg = loaded.config
    started = time.perf_counter()
    pairs, plan = prepare(loaded)
    path = loaded.store_path(store_path)
    stats = RunStats(planned=len(plan.calls))
    store = Store(path)
    try:
        config_hash = loaded.config_hash
        run_id = store.resumable_run(config_hash, pairs.digest)
        resumed = run_id is not None
        if run_id is None:
            run_id = store.create_run(
                config_hash=config_hash,
                judge_hash=loaded.judge_hash,
                judge=cfg.judge.judge_name,
                config=loaded.normalised(),
                config_path=str(loaded.source.resolve()),
                pairs_digest=pairs.digest,
                seed=plan.seed,
                orders=cfg.orders,
                total_calls=len(plan.calls),
                provenance={**loaded.provenance(structured=plan.structured), "pair_set_hash": plan.pair_set_hash},
            )
        else:
            store.mark_running(run_id)
        done_keys = store.done_keys(run_id)
        pending = [c for c in plan.calls if c.key not in done_keys]
        stats.already_stored = len(plan.calls) - len(pending)
        identical = [c for c in pending if c.identical]
        if identical:
            store.record_calls(run_id, [_identical_record(c) for c in identical])
        stats.identical = len(identical)
        pending = [c for c in pending if not c.identical]
        cache = store.cached(loaded.judge_hash, (c.request.prompt_hash for c in pending))
        hits = [c for c in pending if c.request.prompt_hash in cache]
        if hits:
            store.record_calls(run_id, [_cached_record(c, cache[c.request.prompt_hash]) for c in hits])
        stats.cached = len(hits)
        pending = [c for c in pending if c.request.prompt_hash not in cache]
        stats.to_call = len(pending)
        threshold = cfg.adaptive_swap
        phases = [pending] if threshold is None else [
            [c for c in pending if c.order_index == 0], [c for c in pending if c.order_index != 0]]
        interrupted = False
        # Adaptive runs make two passes with one judge (a local model is loaded once).
        own_judge = judge is None and len(phases) > 1 and any(phases)
        active = judge
        try:
            if own_judge:
                active = create_judge(resolved_judge_config(loaded))
            for phase, calls in enumerate(phases):
                if interrupted:
                    break
                if phase == 1 and threshold is not None:
                    calls = _adaptive_second_calls(store, run_id, calls, threshold, stats)
                groups: dict[str, list[PlannedCall]] = {}
                for c in calls:
                    groups.setdefault(c.request.prompt_hash, []).append(c)
                if groups:
                    interrupted = await _execute(
                        loaded,
                        store,
                        run_id,
                        list(groups.values()),
                        stats,
                        judge=active,
                        console=console,
                        progress=progress,
                        handle_sigint=handle_sigint,
                        after_call=after_call,
                    )
        except BaseException:
            # A missing key, a refused login, Ctrl-C before the handler: the run stays resumable.
            store.finish_run(run_id, "incomplete")
            raise
        finally:
            if own_judge and active is not None:
                await active.aclose()
        status = "interrupted" if interrupted else ("done" if stats.failed == 0 else "incomplete")
        store.finish_run(run_id, status)
        return RunOutcome(
            run_id=run_id,
            store_path=path,
            resumed=resumed,
            interrupted=interrupted,
            stats=stats,
            elapsed_s=time.perf_counter() - started,
            seed=plan.seed,
            orders=cfg.orders,
        )
    finally:
        store.close()


async def _execute(
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
        with _Progress(console, total, progress) as bar:
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


def run(loaded: LoadedConfig, **kwargs: Any) -> RunOutcome:
    return asyncio.run(run_async(loaded, **kwargs))


# ---- dry run ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DryRunEstimate:
    planned_calls: int
    pairs: int
    orders: str
    identical: int
    already_stored: int
    cached: int
    calls_to_make: int
    input_tokens: int
    output_tokens: int
    shared_prefix_tokens: int
    model: str | None
    price_known: bool
    cost_usd: float | None
    prompt_cache_saving_usd: float | None
    store_cache_saving_usd: float | None
    structured: bool
    # Adaptive swapping: `calls_to_make` (and tokens, cost) count every swapped call, the upper bound. Which swaps
    # are skipped is known only once a pair's first verdict is in; those already stored or cached are counted here.
    adaptive_swap: float | None = None
    adaptive_swaps_planned: int = 0  # swapped calls among calls_to_make
    adaptive_firsts_known: int = 0  # of those, swaps whose pair's first verdict is stored or cached
    adaptive_skips_known: int = 0  # of those, swaps the threshold would skip (first verdict confident enough)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def estimate(loaded: LoadedConfig, *, store_path: str | Path | None = None) -> DryRunEstimate:
    """What a run would do, without calling the judge or writing the store."""
    cfg = loaded.config
    pairs, plan = prepare(loaded)
    path = loaded.store_path(store_path)
    done: set[tuple[int, str, str, str]] = set()
    cache: dict[str, Any] = {}
    stored_firsts: list[dict[str, Any]] = []
    if path.exists():
        with Store(path) as store:
            run_id = store.resumable_run(loaded.config_hash, pairs.digest)
            if run_id is not None:
                done = store.done_keys(run_id)
                stored_firsts = [c for c in store.calls(run_id) if c["order_index"] == 0 and c["error"] is None]
            cache = store.cached(loaded.judge_hash, (c.request.prompt_hash for c in plan.calls))
    pending = [c for c in plan.calls if c.key not in done]
    identical = [c for c in pending if c.identical]
    pending = [c for c in pending if not c.identical]
    hits = [c for c in pending if c.request.prompt_hash in cache]
    to_make = list({c.request.prompt_hash: c for c in pending if c.request.prompt_hash not in cache}.values())
    in_tok = int(sum((len(c.request.system) + len(c.request.user)) / CHARS_PER_TOKEN for c in to_make))
    out_tok = sum(expected_output_tokens(c.request) for c in to_make)
    prefix = int(len(plan.calls[0].request.system) / CHARS_PER_TOKEN) if plan.calls else 0
    price = price_for(cfg.judge.model, cfg.prices, backend=cfg.judge.backend)
    cost = call_cost(price, input_tokens=in_tok, output_tokens=out_tok)
    saving = None
    if price is not None and to_make:
        cached_price = price.cached_input if price.cached_input is not None else price.input
        saving = prefix * (len(to_make) - 1) * (price.input - cached_price) / 1_000_000
        if cost is not None:
            cost -= saving
    hit_cost = None
    if price is not None:
        hit_cost = sum(
            call_cost(
                price,
                input_tokens=int((len(c.request.system) + len(c.request.user)) / CHARS_PER_TOKEN),
                output_tokens=expected_output_tokens(c.request),
            )
            or 0.0
            for c in hits
        )
    swaps = known = skips = 0
    threshold = cfg.adaptive_swap
    if threshold is not None:
        # the first verdicts known without a call: stored by the unfinished run, or in the reply cache
        firsts: dict[tuple[int, str, str, str], dict[str, Any]] = {
            (int(c["round"]), str(c["item"]), str(c["first"]), str(c["second"])): c for c in stored_firsts}
        for c in plan.calls:
            if c.order_index == 0 and c.key not in firsts and c.request.prompt_hash in cache:
                hit = cache[c.request.prompt_hash]
                firsts[c.key] = {"round": c.round, "item": c.item, "first": c.first, "second": c.second,
                                 "order_index": 0, "error": None, "source": "cache", "verdict": hit.verdict,
                                 "probabilities": hit.probabilities}
        skip = adaptive_skips(firsts.values(), threshold)
        for c in to_make:
            if c.order_index == 0:
                continue
            swaps += 1
            known += (c.round, c.item, c.second, c.first) in firsts
            skips += c.key in skip
    return DryRunEstimate(
        planned_calls=len(plan.calls),
        pairs=plan.pairs,
        orders=cfg.orders,
        identical=len(identical),
        already_stored=len(done & {c.key for c in plan.calls}),
        cached=len(hits),
        calls_to_make=len(to_make),
        input_tokens=in_tok,
        output_tokens=out_tok,
        shared_prefix_tokens=prefix,
        model=cfg.judge.model,
        price_known=price is not None,
        cost_usd=cost,
        prompt_cache_saving_usd=saving,
        store_cache_saving_usd=hit_cost,
        structured=plan.structured,
        adaptive_swap=threshold,
        adaptive_swaps_planned=swaps,
        adaptive_firsts_known=known,
        adaptive_skips_known=skips,
    )


# ---- after the run -------------------------------------------------------------------------------------


def run_records(store: Store, run_id: int) -> list[dict[str, Any]]:
    """A run's presentation records with the run's registration (configuration hash, tie policy, the systems a and
    b it compared and, for an adaptive run, its threshold) attached, so a later analysis applies what the run was
    registered with."""
    info = store.run(run_id)
    extra = {"config_hash": info.config_hash, "registered_tie_policy": info.config.get("tie_policy")}
    pairs = info.config.get("pairs") or {}
    if pairs.get("a") and pairs.get("b"):
        # which system the run's win rate is of: `analyze` of the export then reads it the same way round
        extra |= {"registered_a": pairs["a"], "registered_b": pairs["b"]}
    if info.config.get("adaptive_swap") is not None:
        # the skipped swaps are part of the run: the analysis of the export accepts and counts them as `run` does
        extra["registered_adaptive_swap"] = float(info.config["adaptive_swap"])
    return [{**rec, **extra} for rec in store.presentation_records(run_id)]


def run_record_set(store: Store, run_id: int) -> Any:
    """A stored run's calls as a validated `RecordSet` (core fields only). A pair with one usable order (an
    interrupted run, a failed call, a single-order run) is incomplete rather than an error."""
    from swapjudge.records import records_from_dicts

    core = ("judge", "round", "item", "first", "second", "verdict", "label")
    # `inferred` rows (an older swapjudge's stand-ins for swapped calls adaptive swapping skipped) are no verdicts
    rows = [{k: rec[k] for k in core if k in rec} for rec in store.presentation_records(run_id)
            if rec["source"] != "inferred"]
    if not rows:
        raise SwapjudgeError(f"run {run_id} has no stored calls to analyse")
    return records_from_dicts(rows, source=f"{store.path} run {run_id}", allow_unpaired=True)


def analyze_run(store: Store, run_id: int, records: Any = None, **overrides: Any) -> list[Any]:
    """The analysis of a stored run under the policy, gate and systems it was registered with (`overrides`
    replaces any of analyze's keyword arguments, e.g. `a`/`b` to compare two systems of a many-system run)."""
    from swapjudge.analysis import analyze

    info = store.run(run_id)
    cfg = info.config
    if records is None:
        records = run_record_set(store, run_id)
    pairs_cfg = cfg.get("pairs") or {}
    settings: dict[str, Any] = {
        "a": pairs_cfg.get("a"),
        "b": pairs_cfg.get("b"),
        "tie_policy": cfg.get("tie_policy", "half_credit"),
        "min_consistency": (cfg.get("gates") or {}).get("min_self_consistency", 0.70),
        "confidence": cfg.get("confidence", 0.95),
    }
    analyses = analyze(records, **{**settings, **overrides})
    threshold = cfg.get("adaptive_swap")
    # records carrying the registered threshold got the adaptive treatment in `analyze` already
    if threshold is not None and getattr(records, "registered_adaptive_swap", None) is None:
        heads = _unswapped_calls(store, run_id, float(threshold))
        analyses = [adaptive_view(a, heads, float(threshold), {**settings, **overrides}) for a in analyses]
    return analyses


def _unswapped_calls(store: Store, run_id: int, threshold: float) -> list[dict[str, Any]]:
    """The first calls of an adaptive run's pairs whose swap was skipped (confident enough, twin not stored)."""
    calls = list(store.calls(run_id))
    skipped = adaptive_skips(calls, threshold)
    stored = {(int(c["round"]), str(c["item"]), str(c["first"]), str(c["second"])) for c in calls
              if c["source"] != "inferred"}
    twin = [(int(c["round"]), str(c["item"]), str(c["second"]), str(c["first"])) for c in calls]
    return [c for c, key in zip(calls, twin, strict=True)
            if c["order_index"] == 0 and c["source"] != "inferred" and key in skipped and key not in stored]
