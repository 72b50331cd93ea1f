"""The batch executor: the second way to make a run's calls, beside the synchronous one (runner/execute.py).

Order of work, each step committed before the next, so a process killed anywhere resumes without paying twice:
1. submissions planned by an earlier process but not known to have reached the provider are looked for there
   (adopted) and submitted only when the provider has no such batch;
2. calls neither stored nor in flight are planned (ledger first), split by the provider's limits, submitted;
3. batches are polled until they end (or, without waiting, once), and each ended batch is collected: every
   result parsed with the synchronous parser and stored, errored / expired / canceled calls marked for a retry;
4. retries go into a follow-up batch, or to the synchronous executor with `batch_fallback: sync`. A call that
   came back failed from MAX_TRIES batches, counted over every run of the command (the ledger keeps them), is
   stored as failed with the engine's reason, and said so.

Results are read as they are: a custom_id of another submission is not trusted, two lines for one request that
disagree make it failed (to ask again), a success wins over a failure, and an offline engine's output file that
is still short is stored as far as it goes and read again later (`grows`). Each of these is counted and said.

The engine knows a call only through a `CallFormat`: its key in the store, its prompt hash (calls sharing a
prompt share a request), its request body, how a result body becomes stored calls, and how a call given up on is
stored. Pairwise runs hand in `PairwiseCalls` (runner.plan's PlannedCall); best-of-N runs their own format
(runner.listwise_run), through the same ledger, files, adoption, retries and store.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from rich.console import Console

from swapjudge.config import JudgeConfig, LoadedConfig, Price
from swapjudge.errors import SwapjudgeError
from swapjudge.judges.base import FatalJudgeError, PermanentJudgeError, TransientJudgeError
from swapjudge.judges.batch import WAIT, BatchJudge, BatchProvider, ResultLine
from swapjudge.redact import redact
from swapjudge.runner.backend import resolved_judge_config
from swapjudge.runner.batch.common import fault_point, key_of, split
from swapjudge.runner.execute import record_from_reply, stored_call
from swapjudge.runner.outcome import RunStats
from swapjudge.runner.plan import PlannedCall
from swapjudge.runner.pricing import batch_price, price_for
from swapjudge.runner.retry import idempotent
from swapjudge.store import CallRecord, Store
from swapjudge.store.batches import OPEN_STATUSES, CallKey, Submission

STORE_CHUNK = 2000  # results committed per transaction while collecting
MAX_TRIES = 3  # batches a call may come back failed from (the first and two follow-ups, over every run); then failed
# Keys of a reply that differ between two answers to one request without the answer differing.
VOLATILE = frozenset({"id", "created", "created_at", "usage", "system_fingerprint", "service_tier", "request_id"})


class BatchCall(Protocol):
    """What the engine reads of a call: its key in the store."""

    @property
    def key(self) -> CallKey: ...


C = TypeVar("C", bound=BatchCall)
C_in = TypeVar("C_in", bound=BatchCall, contravariant=True)


class CallFormat(Protocol[C_in]):
    """What the engine needs to know about one kind of call (see the module's docstring)."""

    def prompt_hash(self, call: C_in) -> str: ...

    def body(self, bodies: BatchJudge, call: C_in) -> dict[str, Any]:
        """The request body, exactly as the synchronous path sends it."""
        ...

    def records(self, bodies: BatchJudge, calls: Sequence[C_in], body: dict[str, Any], provider: str,
                price: Price | None) -> list[CallRecord]:
        """The stored calls of one result body: the first paid (`api`), the others sharing its prompt `cache`."""
        ...

    def failed(self, call: C_in, error: str, attempts: int) -> CallRecord:
        """A call given up on, stored as failed with the engine's reason."""
        ...

    def usable(self, record: CallRecord) -> bool:
        """Whether a stored reply gave a usable answer (a verdict, a pick)."""
        ...


class PairwiseCalls:
    """A pairwise run's calls: the judge's first request body and its synchronous parser."""

    def prompt_hash(self, call: PlannedCall) -> str:
        return call.request.prompt_hash

    def body(self, bodies: BatchJudge, call: PlannedCall) -> dict[str, Any]:
        return bodies.request_body(call.request)

    def records(self, bodies: BatchJudge, calls: Sequence[PlannedCall], body: dict[str, Any], provider: str,
                price: Price | None) -> list[CallRecord]:
        head = calls[0]
        reply = bodies.reply_from_body(body, head.request)
        reply.settings["batch"] = provider  # a fresh dict per reply: provenance of the call
        records = [record_from_reply(head, reply, error=None, attempts=1, source="api", price=price)]
        records += [record_from_reply(c, reply, error=None, attempts=0, source="cache", price=price)
                    for c in calls[1:]]
        return records

    def failed(self, call: PlannedCall, error: str, attempts: int) -> CallRecord:
        return stored_call(call, verdict=None, source="api", error=error, attempts=attempts)

    def usable(self, record: CallRecord) -> bool:
        return record.verdict is not None


@dataclass(frozen=True)
class BatchSetup:
    """What the engine reads of a run's configuration: the judge (file paths resolved), the configured prices,
    the judge's hash (the reply cache's key) and the folder of an offline engine's files (resolved)."""

    judge: JudgeConfig
    prices: Mapping[str, Price]
    judge_hash: str
    batch_dir: Path | None

    @classmethod
    def of(cls, loaded: LoadedConfig) -> BatchSetup:
        jc = loaded.config.judge
        return cls(resolved_judge_config(loaded), loaded.config.prices, loaded.judge_hash,
                   None if jc.batch_dir is None else loaded.resolve(jc.batch_dir))


def _setup(of: LoadedConfig | BatchSetup) -> BatchSetup:
    return of if isinstance(of, BatchSetup) else BatchSetup.of(of)


@dataclass
class BatchOutcome:
    waiting: bool = False  # batches still running (not waited for)
    requests_in_flight: int = 0
    batches_in_flight: int = 0
    to_sync: list[Any] = field(default_factory=list)  # batch_fallback: sync (the format's calls)
    warnings: list[str] = field(default_factory=list)  # what the results held that the user should hear about


@dataclass
class _Seen:
    """What one custom_id's lines said: how many, the first success (its place in the spool), the distinct
    answers, the first failure's reason."""

    lines: int = 0
    spooled: bool = False
    answers: set[str] = field(default_factory=set)
    failure: str | None = None


@dataclass
class _Collected:
    retry: list[tuple[str, str]] = field(default_factory=list)  # (custom_id, why)
    complete: bool = True  # False: an output still growing, read again later


def _answer(body: dict[str, Any]) -> str:
    """A digest of what a reply says, without the fields two identical answers differ in."""
    kept = {k: v for k, v in body.items() if k not in VOLATILE}
    return hashlib.sha1(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()


def provider_error(err: Exception, provider: str) -> SwapjudgeError:
    """A failed request to a provider's batch API as one line (exit 2: an error of the setup, not a verdict)."""
    text = redact(str(err))
    if "HTTP 404" in text:
        return SwapjudgeError(
            f"{text}: the server has no batch API here (vLLM's and llama.cpp's servers answer only the synchronous "
            "API): set judge.batch false, or judge.batch: files with batch_dir for vLLM's run_batch")
    if isinstance(err, TransientJudgeError):
        return SwapjudgeError(f"{text} (the {provider} batch API kept failing; what was submitted is in the store's "
                              "ledger: run the same command again to resume)")
    return SwapjudgeError(text)


def body_judge(loaded: LoadedConfig | BatchSetup, provider: BatchProvider) -> BatchJudge:
    """The configured judge's wire format, for its request bodies and its parser only: it makes no request and
    reads no key (an offline engine needs none)."""
    return provider.judge(_setup(loaded).judge, None)


def make_provider(loaded: LoadedConfig | BatchSetup) -> BatchProvider:
    setup = _setup(loaded)
    jc = setup.judge
    if jc.batch == "files":
        from swapjudge.runner.batch.files import FileBatches

        assert setup.batch_dir is not None
        return FileBatches(setup.batch_dir, model=jc.model)
    if jc.backend == "anthropic":
        from swapjudge.judges.anthropic_batch import AnthropicBatches

        return AnthropicBatches.from_config(jc, retry=idempotent)
    from swapjudge.judges.openai_batch import OpenAIBatches

    return OpenAIBatches.from_config(jc, retry=idempotent)


def batch_call_price(loaded: LoadedConfig | BatchSetup) -> Price | None:
    """What a batch call is billed at: the provider's batch rates; an offline engine only at configured prices."""
    setup = _setup(loaded)
    jc = setup.judge
    if jc.batch == "files":
        return setup.prices.get(jc.model or "")
    return batch_price(price_for(jc.model, setup.prices, backend=jc.backend), jc.backend)


class _Run(Generic[C]):
    def __init__(self, setup: BatchSetup, fmt: CallFormat[C], store: Store, run_id: int, plan: dict[CallKey, C],
                 stats: RunStats, provider: BatchProvider, bodies: BatchJudge, console: Console | None,
                 progress: bool) -> None:
        self.setup, self.fmt, self.store, self.run_id, self.plan, self.stats = setup, fmt, store, run_id, plan, stats
        self.provider, self.bodies, self.console, self.progress = provider, bodies, console, progress
        self.price = batch_call_price(setup)
        self.started = time.monotonic()
        self.payloads: dict[str, Any] = {}  # key -> temporary file with the payload of a submission planned here
        self.warnings: list[str] = []

    # ---- submitting ----------------------------------------------------------------------------------------

    def plan_submissions(self, calls: Sequence[C], wave: int) -> None:
        """Commit new submissions for `calls` (one request per distinct prompt) before anything is sent. Each
        payload is written once, to a temporary file, on the way (after a restart it is rebuilt from the ledger)."""
        groups: dict[str, list[C]] = {}
        for c in calls:
            groups.setdefault(self.fmt.prompt_hash(c), []).append(c)
        heads = [g[0] for g in groups.values()]

        def measured() -> Iterator[tuple[CallKey, dict[str, Any]]]:
            for h in heads:
                yield h.key, self.fmt.body(self.bodies, h)

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
                rows += [(cid, c.key) for c in groups[self.fmt.prompt_hash(head)]]
            start += len(chunk)
            self.store.plan_submission(run_id=self.run_id, key=key, provider=self.provider.name, wave=wave,
                                       planned_at=now, rows=rows)

    def _lines_of(self, sub: Submission) -> Iterator[bytes]:
        """A submission's request lines, built from the ledger (same prompts, same bodies after a restart)."""
        for cid, keys in self.store.requests_of(sub.key).items():
            call = self.plan.get(keys[0])
            if call is None:
                raise SwapjudgeError(f"batch {sub.key}: a planned call is no longer in this run's plan")
            yield self.provider.line(cid, self.fmt.body(self.bodies, call))

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
        assert res.body is not None
        return self.fmt.records(self.bodies, calls, res.body, self.provider.name, self.price)

    def _warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def _store(self, records: list[CallRecord]) -> None:
        self.stats.made += 1
        for rec in records:
            if rec.error is None and not self.fmt.usable(rec):
                self.stats.unparsed += 1
        if records and records[0].cost_usd is not None:
            self.stats.spend_usd += records[0].cost_usd
        elif records:
            self.stats.spend_known = False

    async def collect(self, sub: Submission, state: Any) -> _Collected:
        """Store every result of an ended batch; the custom_ids to retry, with why (failed, missing, or two
        lines that disagree). Two passes: the first reads every line (keeping each request's first success in a
        spool file, so a results file of hundreds of MB is never held in memory), the second stores."""
        requests = self.store.requests_of(sub.key)
        done = self.store.done_keys(self.run_id)
        seen: dict[str, _Seen] = {}
        foreign = unreadable = cut = 0
        model = self.setup.judge.model
        where = f"batch {sub.batch_id or sub.key}"
        fault_point("download")
        with tempfile.TemporaryFile() as spool:
            async for res in self.provider.results(sub.batch_id or "", state):
                if not isinstance(res, ResultLine):
                    cut += res.cut
                    unreadable += not res.cut
                    continue
                if key_of(res.custom_id) != sub.key or res.custom_id not in requests:
                    foreign += 1  # never trust a line that names another submission
                    continue
                s = seen.setdefault(res.custom_id, _Seen())
                s.lines += 1
                body, failure = res.body, res.failure
                served = body.get("model") if body is not None else None
                if self.provider.checks_model and isinstance(served, str) and served != model:
                    body, failure = None, f"the engine answered as model `{served}`, not judge.model `{model}`"
                if body is None:
                    s.failure = s.failure or failure or "failed"
                    continue
                s.answers.add(_answer(body))
                if not s.spooled:
                    s.spooled = True
                    spool.write(json.dumps([res.custom_id, body]).encode() + b"\n")
            missing = [cid for cid in requests if cid not in seen]
            conflicting = {cid for cid, s in seen.items() if len(s.answers) > 1}
            dupes = sum(1 for s in seen.values() if s.lines > 1)
            if foreign:
                self._warn(f"{where}: {foreign:,} lines name requests of other submissions (ignored)")
            if unreadable:
                self._warn(f"{where}: {unreadable:,} lines are not results (not JSON, or no custom_id; ignored)")
            if conflicting:
                self._warn(f"{where}: {len(conflicting):,} requests have lines that disagree (counted as failed and "
                           "asked again)")
            if dupes > len(conflicting):
                self._warn(f"{where}: {dupes - len(conflicting):,} requests have more than one line (the same answer, "
                           "or a failure and a success: the success is kept)")
            short = bool(missing) or cut > 0
            if short and self.provider.grows:
                self._warn(f"{where}: {len(requests) - len(missing):,} of {len(requests):,} requests answered so far"
                           + (" and the last line is cut" if cut else "")
                           + " (the engine may still be writing it: what is there is stored, the rest is read when "
                           "the file is complete; if the engine stopped, run it again on the request file)")
            elif missing:
                self._warn(f"{where}: {len(missing):,} of {len(requests):,} requests have no result line "
                           "(asked again)")
            spool.seek(0)
            chunk: list[CallRecord] = []
            for raw in spool:
                cid, body = json.loads(raw)
                if cid in conflicting or all(k in done for k in requests[cid]):
                    continue
                records = self._records(cid, requests[cid], ResultLine(cid, body))
                self._store(records)
                chunk += records
                if len(chunk) >= STORE_CHUNK:
                    self.store.record_calls(self.run_id, chunk, judge_hash=self.setup.judge_hash)
                    chunk = []
                    fault_point("storing")
            if chunk:
                self.store.record_calls(self.run_id, chunk, judge_hash=self.setup.judge_hash)
                fault_point("storing")
        if short and self.provider.grows:
            self.store.update_submission(sub.key, provider_status=f"output short: {len(requests) - len(missing):,} of "
                                         f"{len(requests):,} requests")
            return _Collected(complete=False)
        retry = [(cid, "conflicting duplicate lines") for cid in conflicting]
        retry += [(cid, s.failure or "failed") for cid, s in seen.items() if not s.spooled]
        retry += [(cid, "no result line") for cid in missing]
        retry = [(cid, why) for cid, why in retry if not all(k in done for k in requests[cid])]
        self.stats.batch_failed_requests += len(retry)
        retried = {cid for cid, _ in retry}
        self.store.mark_requests(sub.key, sorted(retried), "retry")
        self.store.mark_requests(sub.key, [c for c in seen if c not in retried], "stored")
        self.store.update_submission(sub.key, status="collected", provider_status=state.provider_status,
                                     counts=state.counts)
        return _Collected(retry=retry)

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


def refuse_uncollected_batches(store: Store, run_id: int, batched: bool) -> None:
    """A run with provider batches still out is collected only with batches on (as they were submitted): refused in
    one line otherwise, before anything is asked."""
    in_flight = store.submissions(run_id, OPEN_STATUSES)
    if in_flight and not batched:
        raise SwapjudgeError(
            f"run {run_id} has {sum(s.requests for s in in_flight):,} requests in {len(in_flight)} provider "
            "batch(es) not yet collected; set judge.batch as when they were submitted to collect them")


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
    """Make a pairwise run's `calls` (and collect whatever this run has in flight) through the configured batch
    path."""
    return await execute_batch_calls(BatchSetup.of(loaded), PairwiseCalls(), store, run_id, calls, plan_calls,
                                     stats, wave=wave, wait=wait, console=console, progress=progress)


async def execute_batch_calls(
    setup: BatchSetup,
    fmt: CallFormat[C],
    store: Store,
    run_id: int,
    calls: Sequence[C],
    plan_calls: Sequence[C],
    stats: RunStats,
    *,
    wave: int = 0,
    wait: bool = True,
    console: Console | None = None,
    progress: bool = True,
) -> BatchOutcome:
    """Make `calls` of any kind `fmt` describes (and collect whatever this run has in flight) through the
    configured batch path; `plan_calls`: every call of the run (a resumed run's ledger names them)."""
    jc = setup.judge
    plan = {c.key: c for c in plan_calls}
    provider = make_provider(setup)
    bodies = body_judge(setup, provider)
    run = _Run(setup, fmt, store, run_id, plan, stats, provider, bodies, console, progress)
    outcome = BatchOutcome(warnings=run.warnings)
    poll_s = jc.batch_poll_s
    try:
        todo = list(calls)
        while True:
            in_flight = store.in_flight(run_id)
            done = store.done_keys(run_id)
            fresh = [c for c in todo if c.key not in in_flight and c.key not in done]
            if fresh:
                run.plan_submissions(fresh, wave)
            todo = []
            retry: list[tuple[str, str, str]] = []  # (submission key, custom_id, why)
            while True:
                open_subs = store.submissions(run_id, OPEN_STATUSES)
                for sub in open_subs:
                    if sub.status == "planned":
                        # Not known to have reached the provider: adopt it, or submit it (or wait to tell).
                        await run.settle(sub)
                        continue
                    fault_point("polling")
                    state = await provider.status(sub.batch_id or "")
                    if state.note:
                        run._warn(state.note)
                    store.update_submission(sub.key, provider_status=state.provider_status, counts=state.counts)
                    if state.ended:
                        got = await run.collect(sub, state)
                        retry += [(sub.key, cid, why) for cid, why in got.retry]
                open_subs = store.submissions(run_id, OPEN_STATUSES)
                run.report(store.submissions(run_id), len(retry))
                if not open_subs:
                    break
                if not wait:
                    outcome.waiting = True
                    outcome.batches_in_flight = len(open_subs)
                    outcome.requests_in_flight = _outstanding(store, run_id, open_subs)
                    _give_up(run, retry, plan, outcome)
                    return outcome
                await asyncio.sleep(poll_s)
            again = _give_up(run, retry, plan, outcome)
            if not again:
                return outcome
            if jc.batch_fallback == "sync":
                outcome.to_sync = again
                return outcome
            todo = again
    except (TransientJudgeError, PermanentJudgeError, FatalJudgeError) as err:
        raise provider_error(err, provider.name) from None
    finally:
        for payload in run.payloads.values():
            payload.close()
        await provider.aclose()
        await bodies.aclose()


def _outstanding(store: Store, run_id: int, subs: Sequence[Submission]) -> int:
    """Requests of these submissions whose calls are not all stored yet (an output file read in part counts only
    what it still lacks)."""
    done = store.done_keys(run_id)
    return sum(1 for sub in subs for keys in store.requests_of(sub.key).values() if not all(k in done for k in keys))


def _give_up(run: _Run[C], retry: Sequence[tuple[str, str, str]], plan: dict[CallKey, C],
             outcome: BatchOutcome) -> list[C]:
    """The calls of the failed requests to ask again; those that came back failed from MAX_TRIES batches (over
    every run of the command) are stored as failed with the engine's reason instead, and said so."""
    if not retry:
        return []
    store, run_id = run.store, run.run_id
    done = store.done_keys(run_id)
    tries = store.failure_counts(run_id)
    by_sub: dict[str, dict[str, list[CallKey]]] = {}
    again: list[C] = []
    failed: list[CallRecord] = []
    reasons: Counter[str] = Counter()
    sync = run.setup.judge.batch_fallback == "sync"
    for key, cid, why in retry:
        reqs = by_sub.setdefault(key, store.requests_of(key))
        calls = [plan[k] for k in reqs.get(cid, []) if k in plan and k not in done]
        if not calls:
            continue
        n = max(tries.get(c.key, 0) for c in calls)
        if n < MAX_TRIES or sync:
            again += calls
            continue
        reasons[why] += 1
        failed += [run.fmt.failed(c, redact(f"{why} (failed in {n} batches)"), n) for c in calls]
    if failed:
        store.record_calls(run_id, failed)
        run.stats.failed += len(failed)
        where = "in the engine" if run.provider.grows else "in the batch"
        (top, _), more = reasons.most_common(1)[0], len(reasons) - 1
        tail = f"; and {more} other reason{'s' if more > 1 else ''}" if more else ""
        outcome.warnings.append(f"{sum(reasons.values()):,} requests failed {where} ({top}{tail}); each came back "
                                f"failed from {MAX_TRIES} batches, and is stored as failed")
    return again
