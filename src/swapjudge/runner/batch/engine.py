"""The batch executor: the second way to make a run's calls, beside the synchronous one (runner/execute.py).

Order of work, each step committed before the next, so a process killed anywhere resumes without paying twice:
1. submissions planned by an earlier process but not known to have reached the provider are looked for there
   (adopted) and submitted only when the provider has no such batch;
2. calls neither stored nor in flight are planned (ledger first), split by the provider's limits, submitted;
3. batches are polled until they end (or, without waiting, once), and each ended batch is collected: every
   result parsed with the synchronous parser and stored, errored / expired / canceled calls marked for a retry;
4. retries go into a follow-up batch, or to the synchronous executor with `batch_fallback: sync`.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

from swapjudge.config import LoadedConfig, Price
from swapjudge.errors import SwapjudgeError
from swapjudge.judges.batch import WAIT, BatchJudge, BatchProvider, ResultLine
from swapjudge.runner.backend import resolved_judge_config
from swapjudge.runner.batch.common import fault_point, key_of, split
from swapjudge.runner.execute import _record_from_reply, _stored
from swapjudge.runner.outcome import RunStats
from swapjudge.runner.plan import PlannedCall
from swapjudge.runner.pricing import batch_price, price_for
from swapjudge.runner.retry import idempotent
from swapjudge.store import CallRecord, Store
from swapjudge.store.batches import OPEN_STATUSES, CallKey, Submission

STORE_CHUNK = 2000  # results committed per transaction while collecting
MAX_FOLLOW_UPS = 2  # follow-up batches per invocation for failed requests; then they are stored as failed


@dataclass
class BatchOutcome:
    waiting: bool = False  # batches still running (not waited for)
    requests_in_flight: int = 0
    batches_in_flight: int = 0
    to_sync: list[PlannedCall] = field(default_factory=list)  # batch_fallback: sync


def body_judge(loaded: LoadedConfig, provider: BatchProvider) -> BatchJudge:
    """The configured judge's wire format, for its request bodies and its parser only: it makes no request and
    reads no key (an offline engine needs none)."""
    return provider.judge(resolved_judge_config(loaded), None)


def make_provider(loaded: LoadedConfig) -> BatchProvider:
    jc = loaded.config.judge
    if jc.batch == "files":
        from swapjudge.runner.batch.files import FileBatches

        assert jc.batch_dir is not None
        return FileBatches(loaded.resolve(jc.batch_dir))
    if jc.backend == "anthropic":
        from swapjudge.judges.anthropic_batch import AnthropicBatches

        return AnthropicBatches.from_config(jc, retry=idempotent)
    from swapjudge.judges.openai_batch import OpenAIBatches

    return OpenAIBatches.from_config(jc, retry=idempotent)


def batch_call_price(loaded: LoadedConfig) -> Price | None:
    """What a batch call is billed at: the provider's batch rates; an offline engine only at configured prices."""
    jc = loaded.config.judge
    if jc.batch == "files":
        return loaded.config.prices.get(jc.model or "")
    return batch_price(price_for(jc.model, loaded.config.prices, backend=jc.backend), jc.backend)


class _Run:
    def __init__(self, loaded: LoadedConfig, store: Store, run_id: int, plan: dict[CallKey, PlannedCall],
                 stats: RunStats, provider: BatchProvider, bodies: BatchJudge, console: Console | None,
                 progress: bool) -> None:
        self.loaded, self.store, self.run_id, self.plan, self.stats = loaded, store, run_id, plan, stats
        self.provider, self.bodies, self.console, self.progress = provider, bodies, console, progress
        self.price = batch_call_price(loaded)
        self.started = time.monotonic()
        self.payloads: dict[str, Any] = {}  # key -> temporary file with the payload of a submission planned here

    # ---- submitting ----------------------------------------------------------------------------------------

    def plan_submissions(self, calls: Sequence[PlannedCall], wave: int) -> None:
        """Commit new submissions for `calls` (one request per distinct prompt) before anything is sent. Each
        payload is written once, to a temporary file, on the way (after a restart it is rebuilt from the ledger)."""
        groups: dict[str, list[PlannedCall]] = {}
        for c in calls:
            groups.setdefault(c.request.prompt_hash, []).append(c)
        heads = [g[0] for g in groups.values()]

        def measured() -> Iterator[tuple[CallKey, dict[str, Any]]]:
            for h in heads:
                yield h.key, self.bodies.request_body(h.request)

        def sink(key: str, line: bytes) -> None:
            if key not in self.payloads:
                self.payloads[key] = tempfile.TemporaryFile()  # noqa: SIM115 - closed when sent or in finally
            self.payloads[key].write(line if line.endswith(b"\n") else line + b"\n")

        chunks = split(measured(), self.provider, sink=sink)
        now = time.time()
        start = 0
        for key, chunk in chunks:
            rows: list[tuple[str, CallKey]] = []
            for head, (cid, _) in zip(heads[start:start + len(chunk)], chunk, strict=True):
                rows += [(cid, c.key) for c in groups[head.request.prompt_hash]]
            start += len(chunk)
            self.store.plan_submission(run_id=self.run_id, key=key, provider=self.provider.name, wave=wave,
                                       planned_at=now, rows=rows)

    def _lines_of(self, sub: Submission) -> Iterator[bytes]:
        """A submission's request lines, built from the ledger (same prompts, same bodies after a restart)."""
        for cid, keys in self.store.requests_of(sub.key).items():
            call = self.plan.get(keys[0])
            if call is None:
                raise SwapjudgeError(f"batch {sub.key}: a planned call is no longer in this run's plan")
            yield self.provider.line(cid, self.bodies.request_body(call.request))

    async def settle(self, sub: Submission) -> bool:
        """Make sure a planned submission exists at the provider exactly once. False: wait (Anthropic: a recent
        unknown batch may be it, and only its results can tell)."""
        found = await self.provider.find(sub, self.store.known_batch_ids())
        if found == WAIT:
            return False
        if found is None:
            payload = self.payloads.pop(sub.key, None)
            if payload is None:  # planned by a process that died: the same lines, from the ledger
                payload = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the with below
                for line in self._lines_of(sub):
                    payload.write(line if line.endswith(b"\n") else line + b"\n")
            with payload:  # streamed from disk: a batch can be hundreds of MB
                payload.seek(0)
                if sub.file_id is None:
                    fault_point("before_upload")

                def uploaded(file_id: str) -> None:
                    fault_point("after_upload")
                    self.store.update_submission(sub.key, file_id=file_id)

                found = await self.provider.submit(sub, payload, uploaded)
                fault_point("after_create")
        elif sub.key in self.payloads:
            self.payloads.pop(sub.key).close()
        self.store.update_submission(sub.key, batch_id=found, status="submitted", provider_status="submitted")
        return True

    # ---- collecting ----------------------------------------------------------------------------------------

    def _records(self, cid: str, keys: list[CallKey], res: ResultLine) -> list[CallRecord]:
        calls = [self.plan[k] for k in keys if k in self.plan]
        if not calls:
            return []
        head = calls[0]
        assert res.body is not None
        reply = self.bodies.reply_from_body(res.body, head.request)
        reply.settings["batch"] = self.provider.name  # a fresh dict per reply: provenance of the call
        records = [_record_from_reply(head, reply, error=None, attempts=1, source="api", price=self.price)]
        records += [_record_from_reply(c, reply, error=None, attempts=0, source="cache", price=self.price)
                    for c in calls[1:]]
        return records

    async def collect(self, sub: Submission, state: Any) -> list[str]:
        """Store every result of an ended batch; the custom_ids to retry (failed, or missing from the results)."""
        requests = self.store.requests_of(sub.key)
        done = self.store.done_keys(self.run_id)
        seen: set[str] = set()
        retry: list[str] = []
        chunk: list[CallRecord] = []
        fault_point("download")
        async for res in self.provider.results(sub.batch_id or "", state):
            if key_of(res.custom_id) != sub.key or res.custom_id not in requests or res.custom_id in seen:
                continue  # never trust a line that names another submission
            seen.add(res.custom_id)
            keys = requests[res.custom_id]
            if res.body is None:
                retry.append(res.custom_id)
                self.stats.batch_failed_requests += 1
                continue
            if all(k in done for k in keys):
                continue
            records = self._records(res.custom_id, keys, res)
            self.stats.made += 1
            for rec in records:
                if rec.error is None and rec.verdict is None:
                    self.stats.unparsed += 1
            if records and records[0].cost_usd is not None:
                self.stats.spend_usd += records[0].cost_usd
            elif records:
                self.stats.spend_known = False
            chunk += records
            if len(chunk) >= STORE_CHUNK:
                self.store.record_calls(self.run_id, chunk, judge_hash=self.loaded.judge_hash)
                chunk = []
                fault_point("storing")
        if chunk:
            self.store.record_calls(self.run_id, chunk, judge_hash=self.loaded.judge_hash)
            fault_point("storing")
        retry += [cid for cid in requests if cid not in seen and not all(k in done for k in requests[cid])]
        self.store.mark_requests(sub.key, retry, "retry")
        self.store.mark_requests(sub.key, [c for c in seen if c not in set(retry)], "stored")
        self.store.update_submission(sub.key, status="collected", provider_status=state.provider_status,
                                     counts=state.counts)
        return retry

    def report(self, subs: Sequence[Submission], failed: int) -> None:
        if not self.progress or self.console is None:
            return
        total = sum(s.requests for s in subs)
        done = sum(int(s.counts.get("completed", s.counts.get("succeeded", 0)) or 0) for s in subs)
        elapsed = int(time.monotonic() - self.started)
        ended = sum(s.status == "collected" for s in subs)
        self.console.print(
            f"batches: {len(subs)} ({ended} collected); requests: {done:,} done, {failed:,} failed of {total:,}; "
            f"{elapsed // 3600:d}:{elapsed // 60 % 60:02d}:{elapsed % 60:02d} elapsed", highlight=False)


async def execute_batches(
    loaded: LoadedConfig,
    store: Store,
    run_id: int,
    calls: Sequence[PlannedCall],
    plan_calls: Sequence[PlannedCall],
    stats: RunStats,
    *,
    wave: int = 0,
    wait: bool = True,
    console: Console | None = None,
    progress: bool = True,
) -> BatchOutcome:
    """Make `calls` (and collect whatever this run has in flight) through the configured batch path."""
    jc = loaded.config.judge
    plan = {c.key: c for c in plan_calls}
    provider = make_provider(loaded)
    bodies = body_judge(loaded, provider)
    run = _Run(loaded, store, run_id, plan, stats, provider, bodies, console, progress)
    outcome = BatchOutcome()
    poll_s = jc.batch_poll_s
    try:
        follow_ups = 0
        todo = list(calls)
        while True:
            in_flight = store.in_flight(run_id)
            done = store.done_keys(run_id)
            fresh = [c for c in todo if c.key not in in_flight and c.key not in done]
            if fresh:
                run.plan_submissions(fresh, wave)
            todo = []
            retry: list[str] = []
            retry_keys: list[str] = []
            while True:
                open_subs = store.submissions(run_id, OPEN_STATUSES)
                for sub in open_subs:
                    if sub.status == "planned":
                        # Not known to have reached the provider: adopt it, or submit it (or wait to tell).
                        await run.settle(sub)
                        continue
                    fault_point("polling")
                    state = await provider.status(sub.batch_id or "")
                    store.update_submission(sub.key, provider_status=state.provider_status, counts=state.counts)
                    if state.ended:
                        failed = await run.collect(sub, state)
                        retry += failed
                        retry_keys += [sub.key] * len(failed)
                open_subs = store.submissions(run_id, OPEN_STATUSES)
                run.report(store.submissions(run_id), len(retry))
                if not open_subs:
                    break
                if not wait:
                    outcome.waiting = True
                    outcome.batches_in_flight = len(open_subs)
                    outcome.requests_in_flight = sum(s.requests for s in open_subs)
                    return outcome
                await asyncio.sleep(poll_s)
            if not retry:
                return outcome
            done = store.done_keys(run_id)
            again: list[PlannedCall] = []
            by_key: dict[str, dict[str, list[CallKey]]] = {}
            for cid, key in zip(retry, retry_keys, strict=True):
                reqs = by_key.setdefault(key, store.requests_of(key))
                again += [plan[k] for k in reqs.get(cid, []) if k in plan and k not in done]
            if jc.batch_fallback == "sync":
                outcome.to_sync = again
                return outcome
            if follow_ups >= MAX_FOLLOW_UPS:
                # Stored as failed: the run ends incomplete, and the same command retries them.
                store.record_calls(run_id, [_stored(c, verdict=None, source="api", error="batch request failed "
                                                    f"{follow_ups + 1} times", attempts=follow_ups + 1)
                                            for c in again])
                stats.failed += len(again)
                return outcome
            follow_ups += 1
            todo = again
    finally:
        for payload in run.payloads.values():
            payload.close()
        await provider.aclose()
        await bodies.aclose()
