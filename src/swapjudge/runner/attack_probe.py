"""The live attack probe: on a seeded sample of the configured pairs, the first system's answer replaced or altered
by each attack (`probes.attacks`) and judged against the other system's answer in both orders, with a placebo
(the unaltered answer judged again in both orders). The calls go through the runner's retry policy and rate
limiter, not through the store: a probe measures the judge, it is not part of a run's results."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from swapjudge.config import LoadedConfig
from swapjudge.errors import SwapjudgeError
from swapjudge.judges.base import FatalJudgeError, Judge, JudgeRequest
from swapjudge.judges.prompts import boundary_code, render_request
from swapjudge.probes.attacks import ATTACKS, AttackPlan, AttackProbe, attack_result, attacked_answer, outcome_of
from swapjudge.reading.pairs_file import PairsFile, load_pairs
from swapjudge.runner.backend import check_judge_options, open_judge, structured_output
from swapjudge.runner.plan import CHARS_PER_TOKEN, estimated_tokens, expected_output_tokens, system_pairs
from swapjudge.runner.ratelimit import RateLimiter
from swapjudge.runner.retry import Pacing, RetryPolicy, call_with_retries

PLACEBO = "placebo"
DEFAULT_SAMPLE = 50


@dataclass(frozen=True)
class AttackCall:
    """One planned call: `attack` (or the placebo) on `item`, the altered answer in slot 1 or slot 2."""

    item: str
    attack: str
    shown_first: bool
    request: JudgeRequest


def choose_attacks(names: Sequence[str] | None) -> tuple[str, ...]:
    if not names:
        return tuple(ATTACKS)
    unknown = [n for n in names if n not in ATTACKS]
    if unknown:
        raise SwapjudgeError(f"{{attacks}}: unknown attack(s) {', '.join(unknown)}; known: {', '.join(ATTACKS)}",
                             arguments=("attacks",))
    return tuple(dict.fromkeys(names))


def plan_attack_calls(loaded: LoadedConfig, pairs: PairsFile, attacks: Sequence[str], *, sample: int,
                      seed: str, structured: bool) -> tuple[list[AttackCall], tuple[str, str]]:
    """Both orders of every sampled pair, for the placebo and each attack."""
    cfg = loaded.config
    combos = system_pairs(loaded, pairs)
    if not combos:
        raise SwapjudgeError("the configured pairs compare no two systems: nothing to attack")
    x, y = combos[0]
    items = [it for it in pairs.items if x in it.answers and y in it.answers]
    if sample < len(items):
        picked = sorted(random.Random(f"attack|{pairs.digest}|{seed}").sample(range(len(items)), sample))
        items = [items[i] for i in picked]
    calls: list[AttackCall] = []
    for index, it in enumerate(items):
        other = it.answers[y]
        for name in (PLACEBO, *attacks):
            text = it.answers[x] if name == PLACEBO else attacked_answer(name, it.answers[x], index)
            code = boundary_code(it.prompt, text, other)
            for shown_first in (True, False):
                first, second = (text, other) if shown_first else (other, text)
                request = render_request(
                    task=it.prompt, first=first, second=second, rubric=loaded.rubric_text,
                    allow_tie=cfg.allow_tie, chain_of_thought=cfg.chain_of_thought, structured=structured,
                    metadata={"item": it.item, "attack": name, "shown_first": shown_first}, code=code,
                    graded=cfg.judge.verdict_scale == "graded")
                calls.append(AttackCall(it.item, name, shown_first, request))
    return calls, (x, y)


def _prepare(loaded: LoadedConfig, pairs_path: str | None, attacks: Sequence[str] | None, sample: int,
             seed: str) -> tuple[list[AttackCall], tuple[str, str], tuple[str, ...]]:
    cfg = loaded.config
    check_judge_options(loaded)
    pairs = load_pairs(pairs_path if pairs_path is not None else loaded.resolve(cfg.pairs.path))
    chosen = choose_attacks(attacks)
    calls, systems = plan_attack_calls(loaded, pairs, chosen, sample=sample, seed=seed,
                                       structured=structured_output(cfg.judge))
    return calls, systems, chosen


def dry_run_attack(loaded: LoadedConfig, *, pairs_path: str | None = None, attacks: Sequence[str] | None = None,
                   sample: int = DEFAULT_SAMPLE, seed: str = "") -> AttackPlan:
    """The calls and their estimated tokens and cost, without calling the judge."""
    from swapjudge.runner.pricing import call_cost, price_for

    cfg = loaded.config
    calls, _, chosen = _prepare(loaded, pairs_path, attacks, sample, seed)
    in_tok = int(sum((len(c.request.system) + len(c.request.user)) / CHARS_PER_TOKEN for c in calls))
    out_tok = sum(expected_output_tokens(c.request) for c in calls)
    price = price_for(cfg.judge.model, cfg.prices, backend=cfg.judge.backend)
    return AttackPlan(cfg.judge.judge_name, cfg.judge.model, chosen, len(calls) // (2 * (len(chosen) + 1)),
                      len(calls), in_tok, out_tok, call_cost(price, input_tokens=in_tok, output_tokens=out_tok))


async def run_attack_async(loaded: LoadedConfig, *, pairs_path: str | None = None,
                           attacks: Sequence[str] | None = None, sample: int = DEFAULT_SAMPLE, seed: str = "",
                           judge: Judge | None = None) -> AttackProbe:
    cfg = loaded.config
    calls, systems, chosen = _prepare(loaded, pairs_path, attacks, sample, seed)
    jc = cfg.judge
    pacing = Pacing(RateLimiter(jc.requests_per_minute, jc.tokens_per_minute))
    policy = RetryPolicy.of(jc)
    gate = asyncio.Semaphore(max(1, jc.max_concurrency))
    records: dict[int, dict[str, Any]] = {}
    own = judge is None
    active = judge if judge is not None else open_judge(loaded)

    async def one(index: int) -> None:
        call = calls[index]
        async with gate:
            reply, error, _ = await call_with_retries(
                lambda: active.judge(call.request), policy, pacing,
                est_tokens=estimated_tokens(call.request, expected_output_tokens(call.request)))
        records[index] = {"judge": jc.judge_name, "item": call.item, "attack": call.attack,
                          "shown_first": call.shown_first, "verdict": reply.verdict if reply else None,
                          "raw": reply.raw if reply else None, "error": error or (reply.error if reply else None)}

    try:
        await asyncio.gather(*(one(i) for i in range(len(calls))))
    except FatalJudgeError as err:
        raise SwapjudgeError(f"the probe stopped: {err}") from None
    finally:
        if own:
            await active.aclose()
    outcome: dict[tuple[str, str, bool], str | None] = {}
    for i, call in enumerate(calls):
        outcome[(call.attack, call.item, call.shown_first)] = outcome_of(records[i]["verdict"], call.shown_first)
    items = list(dict.fromkeys(c.item for c in calls))

    def orders(name: str) -> tuple[list[str | None], list[str | None]]:
        return ([outcome[(name, it, True)] for it in items], [outcome[(name, it, False)] for it in items])

    placebo = orders(PLACEBO)
    results = tuple(attack_result(name, orders(name), placebo, cfg.confidence) for name in chosen)
    failed = sum(r["verdict"] is None for r in records.values())
    return AttackProbe(jc.judge_name, systems, len(items), seed, cfg.confidence, len(calls), failed, results,
                       tuple(records[i] for i in range(len(calls))))


def run_attack(loaded: LoadedConfig, **kwargs: Any) -> AttackProbe:
    return asyncio.run(run_attack_async(loaded, **kwargs))
