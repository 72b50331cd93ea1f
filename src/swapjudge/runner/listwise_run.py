"""A best-of-N run: `protocol: listwise` in a run configuration. Each item's N answers are shown in rotated slot
orders (`rotations: latin | all | random`, runner.listwise_plan), named by slot only, and the judge's pick is
stored as one call per slot order in the run store, as a pairwise run's calls are (docs/running.md).

The store gives a listwise run what it gives a pairwise one: each call is committed the moment its reply is in
(a `kill -9` keeps every stored call), the run's lock (one process per run), resume (a rerun of the same
configuration makes only the calls not stored yet) and the reply cache keyed by (judge hash, prompt hash), so
the same prompt and judge configuration is never paid for twice, across runs too. A stored listwise call keeps
its slot order as a JSON list in `first` (`second` is empty), its rotation in `order_index`, no pairwise
`verdict`, and the pick in `settings.pick` (the cache keeps it there too); `export` turns the calls back into
listwise records (docs/records.md). Every call goes through the judge's plain completion under its retry
policy, rate limits and concurrency; the embedded judge (`backend: local`, `mode: logprobs`) reads the pick from
the next-token probabilities of the N slot labels and records them.

```yaml
protocol: listwise
rotations: latin            # latin (N calls per item), all (N! calls), random (N random orders)
seed: 0
judge: {backend: local, n_ctx: 4096}
pairs: {path: answers.jsonl}  # {"item": .., "task": .., "answers": {system: text}, "label": system (optional)}
store: results/judge.db     # default ./swapjudge.db in the working directory
output: listwise.jsonl      # optional: the run's records, exported after the run
gates: {min_self_consistency: 0.70}
```
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from swapjudge.config import BATCH_JUDGE_KEYS, JudgeConfig, Price, canonical_hash, text_hash
from swapjudge.defaults import DEFAULT_STORE
from swapjudge.errors import ConfigError, InputError, SwapjudgeError
from swapjudge.judges.base import Completer, Completion, FatalJudgeError
from swapjudge.judges.listwise_prompts import PICK_PREFIX, PROMPT_VERSION, RUBRIC, ListwisePrompt, parse_pick, render
from swapjudge.reading.listwise import MIN_SLOTS
from swapjudge.reading.textfiles import decode_text, json_lines, read_bytes
from swapjudge.redact import redact, redact_url
from swapjudge.runner.listwise_plan import ListwiseCallPlan, plan_listwise
from swapjudge.yamlfile import read_validated, read_yaml

if TYPE_CHECKING:
    from rich.console import Console

    from swapjudge.judges.batch import BatchJudge
    from swapjudge.runner.batch.engine import BatchOutcome
    from swapjudge.store import CallRecord, Store

PICK_MAX_TOKENS = 16
LISTWISE_BACKENDS = ("openai", "anthropic", "local")


class AnswersConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str


class ListwiseGates(BaseModel):
    model_config = ConfigDict(extra="forbid")
    min_self_consistency: float = Field(default=0.70, ge=0, le=1)


class ListwiseRunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    protocol: Literal["listwise"]
    judge: JudgeConfig
    pairs: AnswersConfig
    rotations: Literal["latin", "all", "random"] = "latin"
    seed: int = Field(default=0, ge=0)
    rubric: str | None = None
    store: str | None = None
    output: str | None = None
    gates: ListwiseGates = Field(default_factory=ListwiseGates)
    prices: dict[str, Price] = Field(default_factory=dict)


@dataclass(frozen=True)
class AnswerSet:
    item: str
    task: str
    answers: dict[str, str]
    label: str | None = None


@dataclass(frozen=True)
class ListwiseRunResult:
    """What a listwise run did: its store and run id, the calls planned, found stored (`resumed` of them by an
    unfinished run), served from the cache, made now, failed after retries and stored without a usable pick,
    what the calls made now cost (None: no price for the model), and the records file it exported (if any)."""

    store_path: Path
    run_id: int
    resumed_run: bool
    planned: int
    resumed: int
    cached: int
    made: int
    failed: int
    unparsed: int
    spend_usd: float | None
    min_consistency: float
    output: Path | None = None
    batch: bool | str = False  # the configured judge.batch
    batches_waiting: int = 0  # judge.batch: batches not collected yet (run the same command to collect)
    requests_waiting: int = 0
    warnings: tuple[str, ...] = ()  # what the batch results held that the user should hear about

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["store_path"], out["output"] = str(self.store_path), None if self.output is None else str(self.output)
        out["warnings"] = list(self.warnings)
        return out


def is_listwise_config(path: str | Path) -> bool:
    """Whether a run configuration asks for `protocol: listwise` (read before the pairwise validation)."""
    try:
        data = read_yaml(path, what="the configuration", error=ConfigError)
    except ConfigError:
        return False  # the pairwise reader names the problem
    return isinstance(data, dict) and data.get("protocol") == "listwise"


def load_listwise_config(path: str | Path) -> tuple[ListwiseRunConfig, Path]:
    source = Path(path)
    cfg = read_validated(source, ListwiseRunConfig, what="the configuration", error=ConfigError)
    if cfg.judge.backend not in LISTWISE_BACKENDS:
        raise ConfigError(f"{source}: key `judge.backend`: backend {cfg.judge.backend!r} cannot pick among N "
                          f"answers; listwise runs go through {', '.join(LISTWISE_BACKENDS)}")
    from swapjudge.judges.registry import check_options

    check_options(cfg.judge, source)  # a misspelt key under `judge:` is an error, as in a pairwise run
    return cfg, source.parent


def read_answer_sets(path: Path) -> list[AnswerSet]:
    """The answers file: one JSON object a line with `item`, `task`, `answers` ({system: text}, at least 3) and
    an optional `label` (the better system); a problem names the file, line and field."""
    name = str(path)
    sets: list[AnswerSet] = []
    seen: set[str] = set()
    for number, row in json_lines(decode_text(read_bytes(path), name), name):
        if not isinstance(row, dict):
            raise InputError("a line must be a JSON object", path=name, line=number)
        item, task, answers = row.get("item"), row.get("task", row.get("prompt")), row.get("answers")
        if not isinstance(item, str | int) or isinstance(item, bool) or str(item) == "":
            raise InputError("must be a non-empty string", path=name, line=number, field="item")
        if str(item) in seen:
            raise InputError(f"item {item!r} is already in the file", path=name, line=number, field="item")
        if not isinstance(task, str):
            raise InputError("must be the instruction the answers answer (a string)", path=name, line=number,
                             field="task")
        if not isinstance(answers, dict) or not all(isinstance(v, str) for v in answers.values()):
            raise InputError("must map each system to its answer text", path=name, line=number, field="answers")
        if len(answers) < MIN_SLOTS:
            raise InputError(f"has {len(answers)} answers: a listwise call shows at least {MIN_SLOTS}",
                             path=name, line=number, field="answers")
        label = row.get("label")
        if label is not None and label not in answers:
            raise InputError(f"must name one of the systems answered, got {label!r}", path=name, line=number,
                             field="label")
        seen.add(str(item))
        sets.append(AnswerSet(str(item), task, {str(k): v for k, v in answers.items()}, label))
    if not sets:
        raise InputError("no answer sets", path=name)
    return sets



# ---- the run's identity, plan and stored form --------------------------------------------------------------


@dataclass(frozen=True)
class ListwiseSetup:
    """A listwise configuration read for use: its answer sets, every planned call with its prompt, the store, and
    the hashes that make it one run (configuration, answers file) and one judge (the cache's key)."""

    config: ListwiseRunConfig
    source: Path
    sets: dict[str, AnswerSet]
    calls: tuple[ListwiseCallPlan, ...]
    prompts: tuple[ListwisePrompt, ...]
    store_path: Path
    answers_digest: str
    config_hash: str
    judge_hash: str
    normalised: dict[str, Any] = field(repr=False)

    @property
    def rubric(self) -> str:
        return self.config.rubric or RUBRIC


def _resolve(base: Path, path: str) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else base / p


def resolved_judge(cfg: ListwiseRunConfig, base: Path) -> JudgeConfig:
    """The judge configuration with a local model file resolved against the configuration's folder."""
    judge = cfg.judge
    if judge.backend == "local" and judge.model and judge.model.endswith(".gguf"):
        return judge.model_copy(update={"model": str(_resolve(base, judge.model))})
    return judge


def normalised_config(cfg: ListwiseRunConfig) -> dict[str, Any]:
    """The settled configuration stored with the run and hashed (rubric text inlined, defaults spelled out): where
    the store and the export go, and how batches are made, are no part of it."""
    data = cfg.model_dump(mode="json")
    data["rubric"] = {"text": cfg.rubric or RUBRIC}
    for key in ("store", "output"):
        data.pop(key, None)
    for key in BATCH_JUDGE_KEYS:
        data["judge"].pop(key, None)
    if data["judge"].get("base_url"):
        data["judge"]["base_url"] = redact_url(data["judge"]["base_url"])
    return data


def listwise_judge_hash(cfg: ListwiseRunConfig, base: Path) -> str:
    """The judge's identity for the reply cache: what decides its answer (runtime settings left out), marked
    listwise, a local model's file by its resolved path."""
    ident = resolved_judge(cfg, base).identity()
    ident["protocol"] = "listwise"
    return canonical_hash(ident)


def prepare_listwise(path: str | Path, *, store: str | Path | None = None,
                     answers: str | Path | None = None) -> ListwiseSetup:
    """Read the configuration and answers and plan every call (the run, its dry run and its check). `answers`
    replaces the configuration's answers file (a card's suite)."""
    cfg, base = load_listwise_config(path)
    if answers is not None:
        cfg = cfg.model_copy(update={"pairs": AnswersConfig(path=str(Path(answers).resolve()))})
    answers_path = _resolve(base, cfg.pairs.path)
    sets = read_answer_sets(answers_path)
    by_item = {s.item: s for s in sets}
    calls = tuple(plan_listwise([(s.item, list(s.answers)) for s in sets], cfg.rotations, cfg.seed))
    rubric = cfg.rubric or RUBRIC
    prompts = tuple(render(by_item[c.item].task, [by_item[c.item].answers[s] for s in c.slots], rubric)
                    for c in calls)
    store_path = (Path(store) if store is not None else
                  _resolve(base, cfg.store) if cfg.store else Path.cwd() / DEFAULT_STORE)
    normalised = normalised_config(cfg)
    return ListwiseSetup(cfg, Path(path), by_item, calls, prompts, store_path,
                         hashlib.sha256(read_bytes(answers_path)).hexdigest(), canonical_hash(normalised),
                         listwise_judge_hash(cfg, base), normalised)


def slots_key(slots: tuple[str, ...] | list[str]) -> str:
    """A slot order as the store keeps it in a call's `first` column: a JSON list, slot 1 first."""
    return json.dumps(list(slots), ensure_ascii=False)


def call_key(call: ListwiseCallPlan) -> tuple[int, str, str, str]:
    """The (round, item, first, second) key of a listwise call in the store (`second` is empty)."""
    return (0, call.item, slots_key(call.slots), "")


def listwise_provenance(setup: ListwiseSetup) -> dict[str, Any]:
    """The run's provenance columns: the rubric in effect, the prompt frame's version, `schema: listwise`."""
    judge = setup.normalised["judge"]
    version = judge.get("version")
    return {"judge_model": judge.get("model"), "judge_version": None if version is None else str(version),
            "rubric_text": setup.rubric, "rubric_hash": text_hash(setup.rubric),
            "template_hash": text_hash(PROMPT_VERSION), "schema": "listwise", "tie_policy": None,
            "pair_set_hash": setup.answers_digest}


def _record(call: ListwiseCallPlan, prompt: ListwisePrompt, label: str | None, *, source: str,
            reply: Completion | None, pick: int | None, error: str | None, attempts: int, cost: float | None,
            settings: dict[str, Any] | None = None) -> CallRecord:
    from swapjudge.store import CallRecord

    probabilities = None if reply is None else reply.probabilities
    return CallRecord(
        item=call.item, first=slots_key(call.slots), second="", order_index=call.rotation, verdict=None,
        source=source, round=0, label=label, prompt_hash=prompt.prompt_hash,
        raw=None if reply is None else reply.text, input_tokens=None if reply is None else reply.input_tokens,
        output_tokens=None if reply is None else reply.output_tokens,
        latency_s=None if reply is None else reply.latency_s, cost_usd=cost, error=error,
        probabilities=None if probabilities is None else {k: float(v) for k, v in probabilities.items()},
        settings={**(settings or {}), "protocol": "listwise", "pick": pick}, attempts=attempts)


def _from_cache(call: ListwiseCallPlan, prompt: ListwisePrompt, label: str | None, cached: Any) -> CallRecord:
    from swapjudge.store import CallRecord

    return CallRecord(
        item=call.item, first=slots_key(call.slots), second="", order_index=call.rotation, verdict=None,
        source="cache", round=0, label=label, prompt_hash=prompt.prompt_hash, raw=cached.raw,
        input_tokens=cached.input_tokens, output_tokens=cached.output_tokens,
        cached_input_tokens=cached.cached_input_tokens, latency_s=cached.latency_s, cost_usd=cached.cost_usd,
        probabilities=cached.probabilities, settings=dict(cached.settings or {}))


# ---- the batch path: the pairwise batch engine, told what a best-of-N call is --------------------------------


@dataclass(frozen=True)
class ListwiseBatchCall:
    """A planned listwise call as the batch engine sees it: its store key, plan, prompt and the item's label."""

    key: tuple[int, str, str, str]
    plan: ListwiseCallPlan
    prompt: ListwisePrompt
    label: str | None


class ListwiseCalls:
    """How the batch engine makes and stores a best-of-N call: the plain completion's request body the synchronous
    path sends, its reply read by the same reader and `parse_pick`, stored as the synchronous path stores it
    (`settings.batch` names the batch path; a body not in the API's shape keeps its text, no pick)."""

    def prompt_hash(self, call: ListwiseBatchCall) -> str:
        return call.prompt.prompt_hash

    def body(self, bodies: BatchJudge, call: ListwiseBatchCall) -> dict[str, Any]:
        return bodies.completion_body(call.prompt.system, call.prompt.user, PICK_MAX_TOKENS)

    def records(self, bodies: BatchJudge, calls: Sequence[ListwiseBatchCall], body: dict[str, Any], provider: str,
                price: Price | None) -> list[CallRecord]:
        from swapjudge.runner.pricing import call_cost

        reply = bodies.completion_from_body(body)
        pick = None if reply is None else parse_pick(reply.text, len(calls[0].plan.slots))
        if reply is None:
            reply = Completion(json.dumps(body)[:2000])
        cost = call_cost(price, input_tokens=reply.input_tokens, output_tokens=reply.output_tokens)
        return [_record(c.plan, c.prompt, c.label, source="api" if i == 0 else "cache", reply=reply, pick=pick,
                        error=None, attempts=1 if i == 0 else 0, cost=cost if i == 0 else None,
                        settings={"batch": provider}) for i, c in enumerate(calls)]

    def failed(self, call: ListwiseBatchCall, error: str, attempts: int) -> CallRecord:
        return _record(call.plan, call.prompt, call.label, source="api", reply=None, pick=None, error=error,
                       attempts=attempts, cost=None)

    def usable(self, record: CallRecord) -> bool:
        return (record.settings or {}).get("pick") is not None


async def _batch_calls(setup: ListwiseSetup, store: Store, run_id: int,
                       pending: list[tuple[ListwiseCallPlan, ListwisePrompt]], counts: _Counts, *, wait: bool,
                       console: Console | None, progress: bool
                       ) -> tuple[BatchOutcome, list[tuple[ListwiseCallPlan, ListwisePrompt]]]:
    """Make the pending calls through the configured batch path (collecting what this run has in flight first);
    the outcome and the calls left to the synchronous path (`batch_fallback: sync`)."""
    from swapjudge.runner.batch.engine import BatchSetup, execute_batch_calls
    from swapjudge.runner.outcome import RunStats

    cfg, base = setup.config, setup.source.parent
    judge = resolved_judge(cfg, base)
    batch_setup = BatchSetup(judge, cfg.prices, setup.judge_hash,
                             None if judge.batch_dir is None else _resolve(base, judge.batch_dir))

    def wrap(c: ListwiseCallPlan, p: ListwisePrompt) -> ListwiseBatchCall:
        return ListwiseBatchCall(call_key(c), c, p, setup.sets[c.item].label)

    stats = RunStats()
    outcome = await execute_batch_calls(
        batch_setup, ListwiseCalls(), store, run_id, [wrap(c, p) for c, p in pending],
        [wrap(c, p) for c, p in zip(setup.calls, setup.prompts, strict=True)], stats,
        wait=wait and judge.batch != "files", console=console, progress=progress)
    counts.made += stats.made
    counts.failed += stats.failed
    counts.spend += stats.spend_usd
    counts.spend_known = counts.spend_known and stats.spend_known
    counts.warnings += [w for w in outcome.warnings if w not in counts.warnings]
    return outcome, [(c.plan, c.prompt) for c in outcome.to_sync]


# ---- the run -------------------------------------------------------------------------------------------------


@dataclass
class _Counts:
    made: int = 0
    failed: int = 0
    spend: float = 0.0
    spend_known: bool = True
    unstored: int = 0
    warnings: list[str] = field(default_factory=list)


async def _judge_calls(setup: ListwiseSetup, store: Store, run_id: int,
                       pending: list[tuple[ListwiseCallPlan, ListwisePrompt]], counts: _Counts, *,
                       console: Console | None, progress: bool) -> None:
    """Make the pending calls, committing each (and its reply to the cache) the moment it is in. Calls sharing
    one prompt share one request."""
    from swapjudge.runner.backend import build_judge
    from swapjudge.runner.execute import record_paid
    from swapjudge.runner.plan import CHARS_PER_TOKEN
    from swapjudge.runner.pricing import call_cost, price_for
    from swapjudge.runner.progress import CallProgress
    from swapjudge.runner.ratelimit import RateLimiter
    from swapjudge.runner.retry import Abandoned, Control, Pacing, RetryPolicy, call_with_retries
    from swapjudge.store.connection import StoreError, StoreFullError

    cfg = setup.config
    judge_cfg = resolved_judge(cfg, setup.source.parent)
    picker = build_judge(judge_cfg)
    assert isinstance(picker, Completer), picker
    price = price_for(judge_cfg.model, cfg.prices, backend=judge_cfg.backend)
    control = Control(stop=asyncio.Event(), console=console, max_retry_after_s=judge_cfg.max_retry_after_s)
    policy = RetryPolicy.of(judge_cfg)
    pacing = Pacing(RateLimiter(judge_cfg.requests_per_minute, judge_cfg.tokens_per_minute), control)
    gate = asyncio.Semaphore(judge_cfg.max_concurrency)
    groups: dict[str, list[tuple[ListwiseCallPlan, ListwisePrompt]]] = {}
    for call, prompt in pending:
        groups.setdefault(prompt.prompt_hash, []).append((call, prompt))
    started = time.perf_counter()
    done = 0

    async def one(group: list[tuple[ListwiseCallPlan, ListwisePrompt]], bar: CallProgress) -> None:
        nonlocal done
        head, prompt = group[0]
        n = len(head.slots)
        try:
            async with gate:
                if control.stop.is_set():
                    return
                reply, error, attempts = await call_with_retries(
                    lambda: picker.complete(prompt.system, prompt.user, max_tokens=PICK_MAX_TOKENS,
                                            prefix=PICK_PREFIX, choices=prompt.labels),
                    policy, pacing,
                    est_tokens=(len(prompt.system) + len(prompt.user)) / CHARS_PER_TOKEN + PICK_MAX_TOKENS)
        except Abandoned:
            return
        pick = None if reply is None else parse_pick(reply.text, n)
        cost = None if reply is None else call_cost(price, input_tokens=reply.input_tokens,
                                                      output_tokens=reply.output_tokens)
        error = None if error is None else redact(error)
        records = [_record(c, p, setup.sets[c.item].label, source="api" if i == 0 else "cache", reply=reply,
                           pick=pick, error=error if reply is None else None, attempts=attempts if i == 0 else 0,
                           cost=cost if i == 0 else None) for i, (c, p) in enumerate(group)]
        try:
            await record_paid(store, run_id, records, judge_hash=setup.judge_hash, control=control)
        except StoreError:
            counts.unstored += reply is not None
            raise
        counts.made += 1
        counts.failed += len(records) if reply is None else 0
        if cost is not None:
            counts.spend += cost
        elif reply is not None:
            counts.spend_known = False
        done += len(records)
        bar.update(done, counts.failed, counts.made / max(1e-9, time.perf_counter() - started),
                   counts.spend if counts.spend_known else None)

    try:
        with CallProgress(console, len(pending), progress) as bar:
            async with asyncio.TaskGroup() as tasks:
                for group in groups.values():
                    tasks.create_task(one(group, bar))
    except* StoreError as broken:
        trouble = broken.exceptions[0]
        assert isinstance(trouble, StoreError)
        if isinstance(trouble, StoreFullError):
            raise trouble.counting(counts.unstored) from None
        replies = f"{counts.unstored:,} {'reply' if counts.unstored == 1 else 'replies'}"
        raise type(trouble)(f"{trouble} ({replies} not stored)") from None
    except* (SwapjudgeError, FatalJudgeError) as failed:
        err = failed.exceptions[0]
        raise SwapjudgeError(str(err) if isinstance(err, SwapjudgeError) else
                             f"listwise run stopped: {redact(str(err))}") from None
    finally:
        await picker.aclose()


def run_listwise(path: str | Path, *, store: str | Path | None = None, wait: bool = False,
                 console: Console | None = None, progress: bool = False, retry_unparsed: bool = False,
                 answers: str | Path | None = None, batch_wait: bool = True) -> ListwiseRunResult:
    """Judge the configured answer sets in their rotations, storing every call in the run store (the
    configuration's `store`, else ./swapjudge.db; `store` overrides both). Running the same configuration again
    resumes its unfinished run and makes only the calls not stored yet; a reply to the same prompt by the same
    judge configuration is served from the store's cache. One process at a time judges a run (`wait`: wait for
    the other instead of failing); `retry_unparsed` asks again for the calls of the latest run of this
    configuration whose reply gave no usable pick (the old replies are kept in `superseded_calls`). With `output`
    configured, the run's records are exported there after it. With `judge.batch` the calls go through the batch
    engine (runner.batch) as a pairwise run's do; `batch_wait` False (and always with `batch: files`) submits or
    writes the batches and returns with them waiting (the same call later collects them)."""
    from swapjudge.runner.batch.engine import refuse_uncollected_batches
    from swapjudge.runner.lock import RunLock, lock_path
    from swapjudge.runner.provenance import open_store
    from swapjudge.runner.session import own_run
    from swapjudge.store.connection import StoreError

    setup = prepare_listwise(path, store=store, answers=answers)
    cfg = setup.config
    st = open_store(setup.store_path)
    try:
        st.raise_if_damaged()
    except BaseException:
        st.close()
        raise
    lock = RunLock(lock_path(setup.store_path, f"{setup.config_hash}:{setup.answers_digest}"))
    counts = _Counts()
    try:
        own_run(lock, wait=wait, console=console)
        run_id = st.resumable_run(setup.config_hash, setup.answers_digest)
        if retry_unparsed:
            run_id = st.latest_run_of(setup.config_hash, setup.answers_digest)
            if run_id is not None:
                st.supersede_unparsed(run_id, setup.judge_hash)
        resumed_run = run_id is not None
        if run_id is None:
            run_id = st.create_run(
                config_hash=setup.config_hash, judge_hash=setup.judge_hash, judge=cfg.judge.judge_name,
                config=setup.normalised, config_path=str(setup.source.resolve()),
                pairs_digest=setup.answers_digest, seed=str(cfg.seed), orders=f"listwise:{cfg.rotations}",
                total_calls=len(setup.calls), provenance=listwise_provenance(setup))
        else:
            st.mark_running(run_id)
        done_keys = st.done_keys(run_id)
        pending = [(c, p) for c, p in zip(setup.calls, setup.prompts, strict=True) if call_key(c) not in done_keys]
        already = len(setup.calls) - len(pending)
        cache = st.cached(setup.judge_hash, (p.prompt_hash for _, p in pending))
        hits = [(c, p) for c, p in pending if p.prompt_hash in cache]
        if hits:
            st.record_calls(run_id, [_from_cache(c, p, setup.sets[c.item].label, cache[p.prompt_hash])
                                     for c, p in hits])
        pending = [(c, p) for c, p in pending if p.prompt_hash not in cache]
        batched = cfg.judge.batch is not False
        refuse_uncollected_batches(st, run_id, batched)
        waiting = None
        try:
            if pending and batched:
                outcome, pending = asyncio.run(_batch_calls(setup, st, run_id, pending, counts, wait=batch_wait,
                                                            console=console, progress=progress))
                waiting = outcome if outcome.waiting else None
            if pending and waiting is None:
                asyncio.run(_judge_calls(setup, st, run_id, pending, counts, console=console, progress=progress))
        except BaseException:
            with contextlib.suppress(StoreError):
                st.finish_run(run_id, "incomplete")
            raise
        complete = counts.failed == 0 and len(st.done_keys(run_id)) >= len(setup.calls)
        # incomplete: the next run resumes it; waiting: batches to collect
        st.finish_run(run_id, "waiting" if waiting is not None else "done" if complete else "incomplete")
        unparsed = st.unparsed_count(run_id)
    finally:
        lock.release()
        st.close()
    output = None
    if cfg.output and waiting is None:
        from swapjudge.reading.textfiles import write_atomic

        output = _resolve(setup.source.parent, cfg.output)
        rows = listwise_run_records(setup.store_path, run_id)
        write_atomic(output, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return ListwiseRunResult(setup.store_path, run_id, resumed_run, len(setup.calls), already, len(hits),
                             counts.made, counts.failed, unparsed,
                             counts.spend if counts.spend_known else None, cfg.gates.min_self_consistency, output,
                             cfg.judge.batch,
                             0 if waiting is None else waiting.batches_in_flight,
                             0 if waiting is None else waiting.requests_in_flight, tuple(counts.warnings))


def listwise_run_records(store_path: str | Path, run_id: int) -> list[dict[str, Any]]:
    """A stored listwise run's calls as listwise records (docs/records.md), with the run's registration."""
    from swapjudge.runner.provenance import open_store
    from swapjudge.store.analysis import run_records

    with open_store(store_path, read_only=True) as st:
        return run_records(st, run_id)


# ---- dry run and check ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ListwiseEstimate:
    """What a listwise run would call and cost (`swapjudge run CONFIG --dry-run`), calling nothing and writing
    nothing: calls planned, already stored by an unfinished run, served from the store's cache, to make, their
    estimated tokens (about 4 characters a token) and cost (None: no price for the model), and the same calls'
    cost through a batch (`batch_cost_usd`: the provider's batch rates, or with `batch: files` the configured
    price; None: no batch API for this backend, or no price); `batch` is the configured `judge.batch`."""

    items: int
    answers_per_item: tuple[int, ...]
    rotations: str
    planned_calls: int
    already_stored: int
    cached: int
    calls_to_make: int
    input_tokens: int
    output_tokens: int
    model: str | None
    cost_usd: float | None
    store_cache_saving_usd: float | None
    batch: bool | str = False
    batch_cost_usd: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


EXPECTED_PICK_TOKENS = 5  # `Best answer: K`


def estimate_listwise(path: str | Path, *, store: str | Path | None = None,
                      answers: str | Path | None = None) -> ListwiseEstimate:
    """The dry run of a listwise configuration (see `ListwiseEstimate`): the store is only read."""
    from swapjudge.runner.plan import CHARS_PER_TOKEN
    from swapjudge.runner.pricing import batch_price, call_cost, price_for
    from swapjudge.runner.provenance import open_store

    setup = prepare_listwise(path, store=store, answers=answers)
    cfg = setup.config
    pending = list(zip(setup.calls, setup.prompts, strict=True))
    cached: set[str] = set()
    if setup.store_path.exists():
        with open_store(setup.store_path, read_only=True) as st:
            run_id = st.resumable_run(setup.config_hash, setup.answers_digest)
            done = st.done_keys(run_id) if run_id is not None else set()
            pending = [(c, p) for c, p in pending if call_key(c) not in done]
            cached = set(st.cached(setup.judge_hash, (p.prompt_hash for _, p in pending)))
    already = len(setup.calls) - len(pending)
    hits = [p for _, p in pending if p.prompt_hash in cached]
    to_make = list({p.prompt_hash: p for _, p in pending if p.prompt_hash not in cached}.values())

    def tokens(prompts: list[ListwisePrompt]) -> int:
        return round(sum(len(p.system) + len(p.user) for p in prompts) / CHARS_PER_TOKEN)

    out_tokens = EXPECTED_PICK_TOKENS * len(to_make)
    price = price_for(cfg.judge.model, cfg.prices, backend=cfg.judge.backend)
    cost = call_cost(price, input_tokens=tokens(to_make), output_tokens=out_tokens)
    saving = call_cost(price, input_tokens=tokens(hits), output_tokens=EXPECTED_PICK_TOKENS * len(hits))
    # What a batch call is billed at (runner.batch.engine.batch_call_price): an offline engine only at the
    # configured price, a provider's batch API at its batch rates.
    bprice = (cfg.prices.get(cfg.judge.model or "") if cfg.judge.batch == "files" else
              batch_price(price, cfg.judge.backend))
    batch_cost = call_cost(bprice, input_tokens=tokens(to_make), output_tokens=out_tokens)
    return ListwiseEstimate(len(setup.sets), tuple(sorted({len(s.answers) for s in setup.sets.values()})),
                            cfg.rotations, len(setup.calls), already, len(hits), len(to_make), tokens(to_make),
                            out_tokens, cfg.judge.model, cost, saving, cfg.judge.batch, batch_cost)


@dataclass(frozen=True)
class ListwiseCheck:
    """`swapjudge run CONFIG --check` on a listwise configuration: where the one request went, the model, the
    pick read from the reply (None: no usable pick) and how long it took. Nothing is stored."""

    url: str
    model: str
    pick: int | None
    answers: int
    latency_s: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def check_listwise(path: str | Path) -> ListwiseCheck:
    """One request, the run's first planned call, no retry: proves the server, the key, the model and that the
    reply gives a pick; stores nothing."""
    from swapjudge.judges.registry import backend_module
    from swapjudge.runner.backend import build_judge
    from swapjudge.runner.retry import Control, Pacing, RetryPolicy, call_with_retries

    setup = prepare_listwise(path)
    judge_cfg = resolved_judge(setup.config, setup.source.parent)
    call, prompt = setup.calls[0], setup.prompts[0]
    url = (redact_url(judge_cfg.base_url) if judge_cfg.base_url else
           str(getattr(backend_module(judge_cfg.backend), "DEFAULT_BASE_URL", None) or judge_cfg.model))

    async def ask() -> tuple[Completion | None, str | None]:
        picker = build_judge(judge_cfg)
        assert isinstance(picker, Completer), picker
        try:
            reply, error, _ = await call_with_retries(
                lambda: picker.complete(prompt.system, prompt.user, max_tokens=PICK_MAX_TOKENS, prefix=PICK_PREFIX,
                                        choices=prompt.labels),
                RetryPolicy(0, 0.0, 0.0, judge_cfg.timeout_s), Pacing(control=Control(stop=asyncio.Event())))
        except FatalJudgeError as err:
            raise SwapjudgeError(f"check failed: {redact(str(err))}") from None
        finally:
            await picker.aclose()
        return reply, error

    started = time.perf_counter()
    reply, error = asyncio.run(ask())
    if reply is None:
        raise SwapjudgeError(f"check failed: {url}: {redact(error or 'no reply')}")
    return ListwiseCheck(url, str(judge_cfg.model or judge_cfg.backend), parse_pick(reply.text, len(call.slots)),
                         len(call.slots), time.perf_counter() - started)
