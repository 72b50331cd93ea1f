"""The runner: the only code that knows which identity sits in which slot.

It plans the calls (every pair in both orders, or one coin-flipped order in `random` mode), serves what it can
from the store (calls already made by an unfinished run, the reply cache, identical answers), makes the rest
with bounded concurrency, client-side rate limits and retries, and commits every call the moment it is in.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from swapjudge.config import LoadedConfig
from swapjudge.errors import SwapjudgeError
from swapjudge.judges.base import Judge
from swapjudge.reading.pairs_file import PairsFile, load_pairs
from swapjudge.runner.backend import check_judge_options, open_judge, structured_output
from swapjudge.runner.batch.engine import BatchOutcome, execute_batches, refuse_uncollected_batches
from swapjudge.runner.execute import AfterCall, cached_record, execute_groups, identical_record
from swapjudge.runner.lock import Owner, RunLock, lock_path
from swapjudge.runner.outcome import RunOutcome, RunStats
from swapjudge.runner.plan import (
    CallPlan,
    PlannedCall,
    build_plan,
)
from swapjudge.runner.provenance import open_store, run_provenance
from swapjudge.runner.skip_swaps import second_calls_to_make
from swapjudge.store.connection import StoreError


def prepare(loaded: LoadedConfig) -> tuple[PairsFile, CallPlan]:
    """The configuration checked for use, the pairs read and the calls planned (run, dry run and check)."""
    check_judge_options(loaded)
    pairs = load_pairs(loaded.pairs_path)
    return pairs, build_plan(loaded, pairs, structured=structured_output(loaded.config.judge))


async def run_async(
    loaded: LoadedConfig,
    *,
    store_path: str | Path | None = None,
    judge: Judge | None = None,
    console: Console | None = None,
    progress: bool = True,
    handle_sigint: bool = False,
    after_call: AfterCall | None = None,
    wait: bool = False,
    retry_unparsed: bool = False,
    batch_wait: bool = True,
    only_pairs: frozenset[tuple[str, str, str]] | None = None,
) -> RunOutcome:
    """Judge the configured pairs. Resumes the unfinished run of the same configuration if there is one.
    `after_call` is awaited after each call is made and stored (not for calls served from the store or cache),
    on the same worker, before that worker's next call: e.g. the live identical probe runs a self-pair call
    there, right after the call that shares its prefix, so a local judge's KV cache serves both.
    One process at a time owns a run (configuration and pairs): a second one raises RunLockedError, or with
    `wait` waits for the first to end. `retry_unparsed` asks the judge again for the calls of the latest run of
    this configuration whose reply had no parsable verdict (the old replies are kept in `superseded_calls`).
    `only_pairs` ((item, x, y) with x < y): judge only these pairs (a cascade's later judge), a run of its own."""
    cfg = loaded.config
    started = time.perf_counter()
    pairs, plan = prepare(loaded)
    if only_pairs is not None:
        pairs, plan = restrict_to(pairs, plan, only_pairs)
    path = loaded.store_path(store_path)
    stats = RunStats(planned=len(plan.calls))
    store = open_store(path)
    try:
        store.raise_if_damaged()  # before anything is planned or paid: a damaged index fails silently
    except BaseException:
        store.close()
        raise
    lock = RunLock(lock_path(path, f"{loaded.config_hash}:{pairs.digest}"))
    try:
        own_run(lock, wait=wait, console=console)
        config_hash = loaded.config_hash
        run_id = store.resumable_run(config_hash, pairs.digest)
        if retry_unparsed:
            run_id = store.latest_run_of(config_hash, pairs.digest)
            if run_id is not None:
                stats.retried_unparsed = store.supersede_unparsed(run_id, loaded.judge_hash)
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
                provenance={**run_provenance(loaded.normalised(), structured=plan.structured),
                            "pair_set_hash": plan.pair_set_hash},
            )
        else:
            store.mark_running(run_id)
        done_keys = store.done_keys(run_id)
        pending = [c for c in plan.calls if c.key not in done_keys]
        stats.already_stored = len(plan.calls) - len(pending)
        identical = [c for c in pending if c.identical]
        if identical:
            store.record_calls(run_id, [identical_record(c) for c in identical])
        stats.identical = len(identical)
        pending = [c for c in pending if not c.identical]
        cache = store.cached(loaded.judge_hash, (c.request.prompt_hash for c in pending))
        hits = [c for c in pending if c.request.prompt_hash in cache]
        if hits:
            store.record_calls(run_id, [cached_record(c, cache[c.request.prompt_hash]) for c in hits])
        stats.cached = len(hits)
        pending = [c for c in pending if c.request.prompt_hash not in cache]
        stats.to_call = len(pending)
        threshold = cfg.adaptive_swap
        phases = [pending] if threshold is None else [
            [c for c in pending if c.order_index == 0], [c for c in pending if c.order_index != 0]]
        interrupted = False
        batched = cfg.judge.batch is not False
        refuse_uncollected_batches(store, run_id, batched)
        waiting: BatchOutcome | None = None
        warnings: list[str] = []
        on_ray = cfg.engine == "ray"
        if on_ray and (judge is not None or after_call is not None):
            raise SwapjudgeError("engine 'ray' makes the calls on Ray's workers: it takes no judge object and no "
                                 "per-call hook (the live identical probe); use the sync engine for those")
        # Adaptive runs make two passes with one judge (a local model is loaded once).
        own_judge = judge is None and len(phases) > 1 and any(phases) and not batched and not on_ray
        active = judge
        try:
            if own_judge:
                active = open_judge(loaded)
            for phase, calls in enumerate(phases):
                if interrupted:
                    break
                if phase == 1 and threshold is not None:
                    calls = second_calls_to_make(store, run_id, calls, threshold, stats)
                if batched:
                    # Wave by wave (adaptive: the first orders, then the swaps the first verdicts leave open). An
                    # offline engine runs apart from this process: write its files and stop, never wait.
                    done_now = store.done_keys(run_id)
                    result = await execute_batches(
                        loaded, store, run_id, [c for c in calls if c.key not in done_now], plan.calls, stats,
                        wave=phase, wait=batch_wait and cfg.judge.batch != "files", console=console, progress=progress)
                    warnings += [w for w in result.warnings if w not in warnings]
                    if result.waiting:
                        waiting = result
                        break
                    calls = result.to_sync  # batch_fallback: sync
                groups: dict[str, list[PlannedCall]] = {}
                for c in calls:
                    groups.setdefault(c.request.prompt_hash, []).append(c)
                if groups and on_ray:
                    from swapjudge.runner.ray_engine import execute_ray

                    interrupted = await execute_ray(loaded, store, run_id, list(groups.values()), stats,
                                                    console=console, progress=progress)
                elif groups:
                    interrupted = await execute_groups(
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
            # A missing key, a refused login, Ctrl-C before the handler: the run stays resumable. A store that
            # cannot take the mark (a full disk) leaves it "running", which resumes the same way.
            with contextlib.suppress(StoreError):
                store.finish_run(run_id, "incomplete")
            raise
        finally:
            if own_judge and active is not None:
                await active.aclose()
        stats.unparsed_stored = store.unparsed_count(run_id)
        status = "interrupted" if interrupted else ("done" if stats.failed == 0 else "incomplete")
        if waiting is not None:
            status = "waiting"
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
            batch_requests_in_flight=waiting.requests_in_flight if waiting else 0,
            batches_in_flight=waiting.batches_in_flight if waiting else 0,
            warnings=tuple(warnings),
        )
    finally:
        lock.release()
        store.close()


def own_run(lock: RunLock, *, wait: bool, console: Console | None) -> None:
    """Take the run's lock (before reading what is stored, so two processes never plan the same calls)."""

    def waiting(owner: Owner) -> None:
        if console is not None:
            console.print(f"waiting for {owner.describe()}, which is judging this run ...", highlight=False)

    lock.acquire(wait=wait, on_wait=waiting)
    if lock.took_over is not None and console is not None:
        console.print(f"took over the run from {lock.took_over.describe()}, which ended without releasing it",
                      highlight=False)


def restrict_to(pairs: PairsFile, plan: CallPlan, only: frozenset[tuple[str, str, str]]) -> tuple[PairsFile, CallPlan]:
    """The plan's calls of the pairs in `only`, under a pairs digest of their own (the run's identity: another
    subset is another run), the coin seed kept from the whole pairs file."""
    import dataclasses
    import hashlib

    calls = tuple(c for c in plan.calls if (c.item, *sorted((c.first, c.second))) in only)
    listed = "\n".join("\t".join(k) for k in sorted(only))
    digest = hashlib.sha256(f"{pairs.digest}|pairs|{listed}".encode()).hexdigest()
    return (dataclasses.replace(pairs, digest=digest),
            dataclasses.replace(plan, calls=calls, pairs=len({(c.item, c.first, c.second) for c in calls
                                                              if c.order_index == 0}),
                                pair_set_hash=digest))  # another pair set than the whole file's


def run_session(loaded: LoadedConfig, **kwargs: Any) -> RunOutcome:
    return asyncio.run(run_async(loaded, **kwargs))
