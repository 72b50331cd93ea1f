"""The Ray executor (`engine: ray`): the planned call groups become a Ray Dataset, Ray Data workers make the
calls, and every reply is committed to the store as it streams back to this process (the driver).

It keeps the other executors' guarantees. The session holds the run's lock around it and has already served
what the store and the cache hold, so each call group is asked once; each block of replies is committed in one
transaction the moment the driver receives it; a driver killed with `kill -9` loses only the replies in flight
(sent, not yet committed), and the next run of the command resumes with the calls still missing; every reply is
parsed by the synchronous judge's parser (`reply_from_body`, as the batch path does).

Two processors, both built with `ray.data.llm.build_processor` (Ray 2.60):
- `http`: Ray's HTTP request processor (`HttpRequestProcessorConfig`) posting each request body to the judge's
  Chat Completions endpoint, any OpenAI-compatible server or fleet behind `judge.base_url`;
- `vllm`: Ray's vLLM engine processor (`vLLMEngineProcessorConfig`), the model running on the cluster's GPUs (or,
  with `ray.resources_per_bundle: {CPU: 1}`, on its CPUs with vLLM's CPU build).
What runs on the workers is in `runner/ray_workers` (sent by value: the cluster needs no swapjudge).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any, cast

from rich.console import Console

from swapjudge.config import LoadedConfig, Price, RayConfig
from swapjudge.errors import SwapjudgeError
from swapjudge.judges import openai
from swapjudge.judges.openai import OpenAIJudge
from swapjudge.judges.registry import create_judge
from swapjudge.redact import redact
from swapjudge.runner import ray_workers
from swapjudge.runner.backend import resolved_judge_config
from swapjudge.runner.execute import record_from_reply, record_paid, stored_call
from swapjudge.runner.outcome import RunStats
from swapjudge.runner.plan import PlannedCall
from swapjudge.runner.pricing import price_for
from swapjudge.runner.progress import CallProgress
from swapjudge.runner.retry import Control
from swapjudge.store import CallRecord, Store

STAGE_CPUS = 0.25  # CPUs Ray reserves for each HTTP worker: they wait on the network, not the CPU
MAP_CPUS = 0.5  # and for each preprocess / postprocess task (a JSON load or dump per row), and vLLM's CPU stages
FATAL = (401, 403, 404)  # as on the synchronous path: a wrong key, URL or model stops the run
# Ray 2.60's HTTP stage, when a request keeps failing: "Reached maximum retries of N for input row {...}. Previous
# Exception: X. Full Traceback: ..."
RETRIES_OUTLASTED = re.compile(r"Reached maximum retries of (\d+) for input row .*?\. Previous Exception: (.*?)\. Full "
                               r"Traceback", re.DOTALL)


def install_hint() -> str:
    return "engine 'ray' needs Ray: pip install 'swapjudge[ray]'"


def endpoint(loaded: LoadedConfig) -> tuple[str, dict[str, str]]:
    """The Chat Completions URL and the headers (with the key, where one is read) of the judge's server: from the
    provider's one client factory, so the key is read and sent exactly as on the synchronous path."""
    client = openai.PROVIDER.client(resolved_judge_config(loaded))
    return client.endpoint(OpenAIJudge.path), client.headers  # the full URL: base_url is the redacted display form


def processor_config(loaded: LoadedConfig) -> Any:
    """The Ray processor configuration of a run: `HttpRequestProcessorConfig` or `vLLMEngineProcessorConfig`."""
    from ray.data.llm import HttpRequestProcessorConfig, vLLMEngineProcessorConfig

    jc, rc = loaded.config.judge, loaded.config.ray
    if rc.processor == "vllm":
        assert jc.model is not None
        light = {"num_cpus": MAP_CPUS}  # the chat template, tokenizer and detokenizer stages: a call per batch
        placement = None if rc.resources_per_bundle is None else {"bundle_per_worker": dict(rc.resources_per_bundle)}
        return vLLMEngineProcessorConfig(
            model_source=rc.model_source or jc.model, engine_kwargs=dict(rc.engine_kwargs),
            concurrency=rc.concurrency, batch_size=rc.batch_size, accelerator_type=rc.accelerator_type,
            placement_group_config=placement, chat_template_stage=light, tokenize_stage=light,
            detokenize_stage=light,
            # a row the engine fails comes back with its error instead of failing the whole job
            should_continue_on_error=True,
            # vLLM's Ray metrics logger imports ray.serve (not in ray[data]); swapjudge shows its own progress
            log_engine_metrics=False)
    url, headers = endpoint(loaded)
    qps = None if jc.requests_per_minute is None else max(1, int(jc.requests_per_minute / 60 / rc.concurrency))
    return HttpRequestProcessorConfig(
        url=url, headers=headers, batch_size=rc.batch_size, qps=qps, max_retries=jc.max_retries,
        base_retry_wait_time_in_s=jc.backoff_s, session_factory=ray_workers.session_factory(jc.timeout_s),
        http_request_stage={"concurrency": rc.concurrency, "num_cpus": STAGE_CPUS})


def build(loaded: LoadedConfig) -> Any:
    """The Ray processor of a run (`ray.data.llm.build_processor`), its rows' pre- and postprocess included."""
    import ray.cloudpickle
    from ray.data.llm import build_processor

    ray.cloudpickle.register_pickle_by_value(ray_workers)  # type: ignore[no-untyped-call]  # workers need Ray only
    config = processor_config(loaded)
    maps = {"num_cpus": MAP_CPUS}
    if loaded.config.ray.processor == "vllm":
        assert loaded.config.judge.model is not None
        try:
            return build_processor(config, preprocess=ray_workers.vllm_preprocess,
                                   postprocess=ray_workers.vllm_postprocessor(loaded.config.judge.model),
                                   preprocess_map_kwargs=maps, postprocess_map_kwargs=maps)
        except ImportError as err:
            raise SwapjudgeError(f"ray.processor vllm needs vLLM where the driver runs and on the cluster "
                                 f"({err.name or err} is missing): pip install 'ray[data,llm]==2.60.0'") from None
    return build_processor(config, preprocess=ray_workers.http_preprocess, postprocess=ray_workers.http_postprocess,
                           preprocess_map_kwargs=maps, postprocess_map_kwargs=maps)


@contextlib.contextmanager
def cluster(rc: RayConfig) -> Iterator[None]:
    """Ray, connected: a cluster already joined in this process is used as it is; else the one at `address`, or a
    local one started for the run (no dashboard) and shut down after."""
    import ray

    if ray.is_initialized():
        yield
        return
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                               "logging_level": logging.WARNING}
    try:
        if rc.address:
            ray.init(address=rc.address, **options)
        else:
            ray.init(num_cpus=rc.num_cpus, **options)
    except (ConnectionError, RuntimeError, ValueError) as err:
        where = f"the Ray cluster at {rc.address}" if rc.address else "a local Ray cluster"
        raise SwapjudgeError(f"cannot start or reach {where}: {_first_line(err)}") from None
    try:
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False  # swapjudge shows its own
        context.print_on_execution_start = False
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        yield
    finally:
        ray.shutdown()


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return redact(text[0] if text else type(err).__name__)[:300]


def _reason(err: BaseException) -> str:
    """What stopped a Ray job, in one line: Ray's retries outlasted (its message carries the whole request, prompt
    included: left out), else the innermost error line Ray reports, not its traceback."""
    text = str(err)
    outlasted = RETRIES_OUTLASTED.search(text)
    if outlasted:
        tries, last = outlasted.group(1), outlasted.group(2).strip()
        return redact(f"a request still failed after Ray's retries (Reached maximum retries of {tries}; the last "
                      f"error: {last})")[:300]
    lines = [x.strip() for x in text.splitlines() if x.strip() and not x.startswith(" ")]
    wanted = [x for x in lines if re.match(r"^[\w.]*(Error|Exception)\b", x)]
    return redact((wanted or lines or [type(err).__name__])[-1])[:300]


class _Driver:
    """Turns the rows the workers return into stored calls."""

    def __init__(self, loaded: LoadedConfig, groups: Sequence[Sequence[PlannedCall]], stats: RunStats) -> None:
        jc = loaded.config.judge
        self.loaded, self.groups, self.stats = loaded, groups, stats
        # the wire format alone (bodies, parser), from the one judge factory: no client, no key read
        self.bodies = cast(OpenAIJudge, create_judge(resolved_judge_config(loaded), wire_only=True))
        self.engine = f"ray:{loaded.config.ray.processor}"
        self.price: Price | None = (loaded.config.prices.get(jc.model or "") if loaded.config.ray.processor == "vllm"
                                    else price_for(jc.model, loaded.config.prices, backend=jc.backend))
        self.fatal: str | None = None
        self.done = 0

    def rows(self) -> list[dict[str, Any]]:
        return [{ray_workers.INDEX: i, ray_workers.BODY: json.dumps(self.bodies.request_body(g[0].request))}
                for i, g in enumerate(self.groups)]

    def records(self, row: dict[str, Any]) -> list[CallRecord]:
        group = self.groups[int(row[ray_workers.INDEX])]
        head = group[0]
        engine_error = row.get(ray_workers.ENGINE_ERROR)
        status = int(row.get(ray_workers.STATUS) or 0)
        error: str | None = None
        body: Any = None
        if engine_error:
            error = f"the vLLM engine failed: {engine_error}"
        elif status != 200:
            error = f"HTTP {status}: {str(row.get(ray_workers.REPLY) or '')[:300]}"
            if status in FATAL and self.fatal is None:
                self.fatal = f"{self.loaded.config.judge.judge_name}: {error} (wrong key, base_url or model?)"
        else:
            try:
                body = json.loads(str(row.get(ray_workers.REPLY)))
            except ValueError:
                error = "malformed reply (not JSON)"
            if body is not None and not isinstance(body, dict):
                body, error = None, "malformed reply (not a JSON object)"
        self.stats.made += 1
        self.done += len(group)
        if error is not None:
            self.stats.failed += len(group)
            return [stored_call(c, verdict=None, source="api", error=redact(error), attempts=1) for c in group]
        reply = self.bodies.reply_from_body(body, head.request)
        reply.settings["engine"] = self.engine  # a fresh dict per reply: provenance of the call
        records = [record_from_reply(head, reply, error=None, attempts=1, source="api", price=self.price)]
        records += [record_from_reply(c, reply, error=None, attempts=0, source="cache", price=self.price)
                    for c in group[1:]]
        if records[0].error is not None:
            self.stats.failed += len(group)
        elif records[0].verdict is None:
            self.stats.unparsed += len(group)
        if records[0].cost_usd is not None:
            self.stats.spend_usd += records[0].cost_usd
        elif records[0].error is None:
            self.stats.spend_known = False
        return records


async def execute_ray(loaded: LoadedConfig, store: Store, run_id: int, groups: list[list[PlannedCall]],
                      stats: RunStats, *, console: Console | None, progress: bool) -> bool:
    """Make the call groups on Ray. Returns True when a Ctrl-C stopped the run (what came back is stored; the
    calls in flight on the workers are abandoned and made by the next run)."""
    try:
        import ray
        import ray.data.llm
    except ImportError:
        raise SwapjudgeError(install_hint()) from None
    driver = _Driver(loaded, groups, stats)
    control = Control(stop=asyncio.Event(), console=console)
    total = sum(len(g) for g in groups)
    started = time.perf_counter()
    interrupted = False
    # Ray prints its workers' and its raylet's messages on stdout: stdout is for results (--format json).
    with contextlib.redirect_stdout(sys.stderr), cluster(loaded.config.ray), \
            CallProgress(console, total, progress) as bar:
        dataset = build(loaded)(ray.data.from_items(driver.rows()))
        try:
            for block in dataset.iter_batches(batch_size=None, batch_format="pyarrow"):
                records = [rec for row in block.to_pylist() for rec in driver.records(row)]
                await record_paid(store, run_id, records, judge_hash=loaded.judge_hash, control=control)
                elapsed = max(1e-9, time.perf_counter() - started)
                bar.update(driver.done, stats.failed, stats.made / elapsed,
                           stats.spend_usd if stats.spend_known else None)
                if driver.fatal is not None:
                    raise SwapjudgeError(driver.fatal)
        except KeyboardInterrupt:
            interrupted = True
        except (SwapjudgeError, asyncio.CancelledError):
            raise
        except Exception as err:  # a Ray job failure: a worker's error, a lost node
            raise SwapjudgeError(f"the Ray job stopped: {_reason(err)}; every reply that came back is stored, and "
                                 "the same command resumes with the calls still missing") from None
    return interrupted
