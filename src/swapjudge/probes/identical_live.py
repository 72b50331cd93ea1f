"""The live identical-answer probe: each sampled answer of the configured pairs against itself, the same text in
both slots, sent to the configured judge. A normal run short-circuits identical answers (no call, counted as a
tie); this is how you measure what the judge would have done with them.

The calls go through the runner's retry and rate-limit machinery (`runner.call_with_retries`) but not through
the store: a probe is a measurement of the judge, not part of a run's results. `-o` keeps the calls as
presentation records (first == second), which `swapjudge analyze` reports under `identical`.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from swapjudge.config import LoadedConfig
from swapjudge.errors import SwapjudgeError
from swapjudge.judges.base import FatalJudgeError, Judge, JudgeRequest
from swapjudge.judges.registry import create_judge, supports_structured
from swapjudge.pairs import MISSING, VERDICT_CODES
from swapjudge.pairs_input import PairsFile, load_pairs
from swapjudge.probes.identical import IdenticalProbe, identical_probe
from swapjudge.prompts import render_request
from swapjudge.runner import (
    RateLimiter,
    call_with_retries,
    estimated_tokens,
    expected_output_tokens,
    resolved_judge_config,
    system_pairs,
)


@dataclass(frozen=True)
class SelfCall:
    """One planned self-pair call: `system`'s answer to `item` in both slots."""

    item: str
    system: str
    request: JudgeRequest


@dataclass(frozen=True)
class IdenticalRun:
    judge: str
    planned: int
    failed: int  # calls with no reply after retries (their verdict is null)
    records: tuple[dict[str, Any], ...]
    probe: IdenticalProbe | None

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "calls": self.planned, "failed": self.failed,
                "identical": self.probe.to_dict() if self.probe else None}


def plan_self_pairs(loaded: LoadedConfig, pairs: PairsFile, *, sample: int | None = None, seed: str = "",
                    structured: bool = False) -> list[SelfCall]:
    """One call per (item, configured system) answer, or a seeded sample of `sample` of them."""
    cfg = loaded.config
    systems = sorted({s for combo in system_pairs(loaded, pairs) for s in combo})
    answers = [(it, s) for it in pairs.items for s in systems if s in it.answers]
    if sample is not None and sample < len(answers):
        picked = sorted(random.Random(f"identical|{pairs.digest}|{seed}").sample(range(len(answers)), sample))
        answers = [answers[i] for i in picked]
    return [SelfCall(it.item, s, render_request(
        task=it.prompt, first=it.answers[s], second=it.answers[s], rubric=loaded.rubric_text,
        allow_tie=cfg.allow_tie, chain_of_thought=cfg.chain_of_thought, structured=structured,
        metadata={"item": it.item, "first": s, "second": s, "round": 0})) for it, s in answers]


async def run_identical_async(loaded: LoadedConfig, *, sample: int | None = None, seed: str = "",
                              judge: Judge | None = None) -> IdenticalRun:
    cfg = loaded.config
    jc = cfg.judge
    pairs = load_pairs(loaded.resolve(cfg.pairs.path))
    structured = jc.structured_output and supports_structured(jc.backend)
    calls = plan_self_pairs(loaded, pairs, sample=sample, seed=seed, structured=structured)
    own = judge is None
    active = judge if judge is not None else create_judge(resolved_judge_config(loaded))
    limiter = RateLimiter(jc.requests_per_minute, jc.tokens_per_minute)
    gate = asyncio.Semaphore(max(1, jc.max_concurrency))

    async def one(call: SelfCall) -> dict[str, Any]:
        async with gate:
            reply, error, _ = await call_with_retries(
                active, call.request, timeout_s=jc.timeout_s, max_retries=jc.max_retries, backoff_s=jc.backoff_s,
                max_backoff_s=jc.max_backoff_s, limiter=limiter,
                est_tokens=estimated_tokens(call.request, expected_output_tokens(call.request)))
        return {"judge": jc.judge_name, "item": call.item, "first": call.system, "second": call.system,
                "verdict": reply.verdict if reply else None, "raw": reply.raw if reply else None,
                "latency_s": reply.latency_s if reply else None, "error": error or (reply.error if reply else None),
                "prompt_hash": call.request.prompt_hash}

    try:
        records = await asyncio.gather(*(one(c) for c in calls))
    except FatalJudgeError as err:
        raise SwapjudgeError(f"the probe stopped: {err}") from None
    finally:
        if own:
            await active.aclose()
    codes = np.array([VERDICT_CODES.get(r["verdict"], MISSING) for r in records], dtype=np.int64)
    failed = sum(r["error"] is not None and r["verdict"] is None for r in records)
    return IdenticalRun(jc.judge_name, len(calls), failed, tuple(records),
                        identical_probe(codes, cfg.confidence))


def run_identical(loaded: LoadedConfig, **kwargs: Any) -> IdenticalRun:
    return asyncio.run(run_identical_async(loaded, **kwargs))
