"""The live identical-answer probe: each sampled answer of the configured pairs against itself, the same text in
both slots, sent to the configured judge. A normal run short-circuits identical answers (no call, counted as a
tie); this is how you measure what the judge would have done with them.

The calls go through the runner's retry policy and rate limiter (`runner.retry.call_with_retries`) but not through
the store: a probe is a measurement of the judge, not part of a run's results. `-o` keeps the calls as
presentation records (first == second), which `swapjudge analyze` reports under `identical`. The statistics are
`core.identical`'s.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from swapjudge.config import LoadedConfig
from swapjudge.core.identical import IdenticalRun, identical_probe
from swapjudge.errors import SwapjudgeError
from swapjudge.judges.base import FatalJudgeError, Judge, JudgeRequest
from swapjudge.judges.prompts import boundary_code, render_request
from swapjudge.reading.pairs import MISSING, VERDICT_CODES
from swapjudge.reading.pairs_file import PairsFile, load_pairs
from swapjudge.runner.backend import check_judge_options, open_judge, structured_output
from swapjudge.runner.plan import estimated_tokens, expected_output_tokens, system_pairs
from swapjudge.runner.ratelimit import RateLimiter
from swapjudge.runner.retry import Pacing, RetryPolicy, call_with_retries


@dataclass(frozen=True)
class SelfCall:
    """One planned self-pair call: `system`'s answer to `item` in both slots."""

    item: str
    system: str
    request: JudgeRequest


def plan_self_pairs(loaded: LoadedConfig, pairs: PairsFile, *, sample: int | None = None, seed: str = "",
                    structured: bool = False) -> list[SelfCall]:
    """One call per (item, configured system) answer, or a seeded sample of `sample` of them. Each is framed
    with the code word of a configured pair of its item that holds the answer (the code occurs in none of the
    pair's texts, so none of the probe's), so the probe's prompt starts as that pair's prompt with the answer in
    slot 1 does: same scaffolding, and a prefix a prompt cache or a local KV cache can share."""
    cfg = loaded.config
    combos = system_pairs(loaded, pairs)
    systems = sorted({s for combo in combos for s in combo})
    answers = [(it, s) for it in pairs.items for s in systems if s in it.answers]
    if sample is not None and sample < len(answers):
        picked = sorted(random.Random(f"identical|{pairs.digest}|{seed}").sample(range(len(answers)), sample))
        answers = [answers[i] for i in picked]
    out = []
    for it, s in answers:
        partner = next((y if x == s else x for x, y in combos if s in (x, y) and {x, y} <= set(it.answers)), None)
        code = None if partner is None else boundary_code(it.prompt, it.answers[s], it.answers[partner])
        out.append(SelfCall(it.item, s, render_request(
            task=it.prompt, first=it.answers[s], second=it.answers[s], rubric=loaded.rubric_text,
            allow_tie=cfg.allow_tie, chain_of_thought=cfg.chain_of_thought, structured=structured,
            metadata={"item": it.item, "first": s, "second": s, "round": 0}, code=code,
            graded=cfg.judge.verdict_scale == "graded")))  # the run's own prompt, scale included
    return out


class IdenticalProbeSession:
    """The live probe's calls through one judge: `after_call` (hand it to `runner.session.run_async`) makes each probe
    call right after the run's call that shows the same answer in slot 1 of the same item, while a local
    judge's KV cache still holds the task and that answer; `finish` makes the calls still to make (all of them
    without a run, or those whose run calls were already stored) and returns the probe."""

    def __init__(self, loaded: LoadedConfig, judge: Judge, *, sample: int | None = None, seed: str = "") -> None:
        cfg = loaded.config
        self.loaded, self.judge = loaded, judge
        check_judge_options(loaded)
        pairs = load_pairs(loaded.resolve(cfg.pairs.path))
        structured = structured_output(cfg.judge)
        self.calls = plan_self_pairs(loaded, pairs, sample=sample, seed=seed, structured=structured)
        self.records: dict[int, dict[str, Any]] = {}
        self._waiting = {(c.item, c.system): i for i, c in enumerate(self.calls)}
        jc = cfg.judge
        self._pacing = Pacing(RateLimiter(jc.requests_per_minute, jc.tokens_per_minute))
        self._policy = RetryPolicy.of(jc)
        self._gate = asyncio.Semaphore(max(1, jc.max_concurrency))

    async def _one(self, index: int) -> None:
        call, jc = self.calls[index], self.loaded.config.judge
        async with self._gate:
            reply, error, _ = await call_with_retries(
                lambda: self.judge.judge(call.request), self._policy, self._pacing,
                est_tokens=estimated_tokens(call.request, expected_output_tokens(call.request)))
        self.records[index] = {
            "judge": jc.judge_name, "item": call.item, "first": call.system, "second": call.system,
            "verdict": reply.verdict if reply else None, "raw": reply.raw if reply else None,
            "latency_s": reply.latency_s if reply else None, "error": error or (reply.error if reply else None),
            "prompt_hash": call.request.prompt_hash, "input_tokens": reply.input_tokens if reply else None,
            "cached_input_tokens": reply.cached_input_tokens if reply else None}
        # the slot prior on identical answers, which contextual calibration subtracts from the run's calls
        probabilities = (reply.probabilities if reply else None) or {}
        self.records[index].update({f"p_{slot}": probabilities[slot] for slot in ("first", "second", "tie")
                                    if slot in probabilities})

    async def after_call(self, call: Any) -> None:
        """A run's call was made: make the probe call that shares its prefix, if one waits for it."""
        if call.round == 0 and (index := self._waiting.pop((call.item, call.first), None)) is not None:
            await self._one(index)

    async def finish(self) -> IdenticalRun:
        self._waiting.clear()
        try:
            await asyncio.gather(*(self._one(i) for i in range(len(self.calls)) if i not in self.records))
        except FatalJudgeError as err:
            raise SwapjudgeError(f"the probe stopped: {err}") from None
        records = [self.records[i] for i in range(len(self.calls))]
        codes = np.array([VERDICT_CODES.get(r["verdict"], MISSING) for r in records], dtype=np.int64)
        failed = sum(r["error"] is not None and r["verdict"] is None for r in records)
        cfg = self.loaded.config
        return IdenticalRun(cfg.judge.judge_name, len(self.calls), failed, tuple(records),
                            identical_probe(codes, cfg.confidence))


async def run_identical_async(loaded: LoadedConfig, *, sample: int | None = None, seed: str = "",
                              judge: Judge | None = None) -> IdenticalRun:
    own = judge is None
    active = judge if judge is not None else open_judge(loaded)
    try:
        return await IdenticalProbeSession(loaded, active, sample=sample, seed=seed).finish()
    finally:
        if own:
            await active.aclose()


def run_identical(loaded: LoadedConfig, **kwargs: Any) -> IdenticalRun:
    return asyncio.run(run_identical_async(loaded, **kwargs))
