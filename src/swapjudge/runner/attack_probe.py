"""The live attack probe: on a seeded sample of the configured pairs, the first system's answer replaced or altered
by each attack (`probes.attacks`) and judged against the other system's answer in both orders, with a placebo
(the unaltered answer judged again in both orders). The calls go through the runner's retry policy and rate
limiter. Given a store, its reply cache serves what the judge was already asked (a run's calls on the same pairs
included) and keeps every reply the probe gets, so a probe resumes and never pays for a prompt twice; the probe's
calls are not a run's results (no run holds them)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swapjudge.config import LoadedConfig
from swapjudge.errors import SwapjudgeError
from swapjudge.judges.base import FatalJudgeError, Judge, JudgeRequest
from swapjudge.judges.prompts import boundary_code, render_request
from swapjudge.probes.attacks import ATTACKS, AttackPlan, AttackProbe, attack_result, attacked_answer, outcome_of
from swapjudge.reading.pairs_file import PairsFile, load_pairs
from swapjudge.runner.backend import check_judge_options, open_judge, structured_output
from swapjudge.runner.plan import CHARS_PER_TOKEN, estimated_tokens, expected_output_tokens, system_pairs
from swapjudge.runner.provenance import open_store
from swapjudge.runner.ratelimit import RateLimiter
from swapjudge.runner.retry import Pacing, RetryPolicy, call_with_retries
from swapjudge.store.schema import CachedReply

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
                   sample: int = DEFAULT_SAMPLE, seed: str = "", store_path: str | Path | None = None,
                   asked: frozenset[str] = frozenset()) -> AttackPlan:
    """The calls, and the tokens and cost of those still to make (one per distinct prompt the store's cache does
    not hold, nor `asked`: prompts a run will have asked first), without calling the judge; an existing store is
    only read, a missing one is not created."""
    from swapjudge.runner.pricing import call_cost, price_for

    cfg = loaded.config
    calls, _, chosen = _prepare(loaded, pairs_path, attacks, sample, seed)
    by_prompt: dict[str, AttackCall] = {}
    for call in calls:
        by_prompt.setdefault(call.request.prompt_hash, call)
    held: set[str] = set()
    if store_path is not None and Path(store_path).exists():
        with open_store(Path(store_path), read_only=True) as store:
            held = set(store.cached(loaded.judge_hash, by_prompt))
    to_make = [c for p, c in by_prompt.items() if p not in held and p not in asked]
    in_tok = int(sum((len(c.request.system) + len(c.request.user)) / CHARS_PER_TOKEN for c in to_make))
    out_tok = sum(expected_output_tokens(c.request) for c in to_make)
    price = price_for(cfg.judge.model, cfg.prices, backend=cfg.judge.backend)
    return AttackPlan(cfg.judge.judge_name, cfg.judge.model, chosen, len(calls) // (2 * (len(chosen) + 1)),
                      len(calls), in_tok, out_tok, call_cost(price, input_tokens=in_tok, output_tokens=out_tok),
                      to_make=len(to_make), cached=len(held))


async def run_attack_async(loaded: LoadedConfig, *, pairs_path: str | None = None,
                           attacks: Sequence[str] | None = None, sample: int = DEFAULT_SAMPLE, seed: str = "",
                           judge: Judge | None = None, store_path: str | Path | None = None,
                           progress: Callable[[str], None] | None = None,
                           cached_only: bool = False) -> AttackProbe:
    """Every planned call made once per distinct prompt. With `store_path`, the store's reply cache (keyed by the
    judge's hash and the prompt's, as a run's) serves every prompt it holds, a run's calls included (the placebo's
    prompts are the run's own), and each reply got is cached the moment it is in: a probe stopped at any point
    resumes where it stopped, and no call is paid twice. `progress` is given one line per call made.
    `cached_only` (with a store): call nothing and read the store only; a call whose prompt it does not hold yet has
    no verdict, so its pair is left out as incomplete (what a probe still running has got so far)."""
    from swapjudge.runner.pricing import call_cost, price_for

    cfg = loaded.config
    calls, systems, chosen = _prepare(loaded, pairs_path, attacks, sample, seed)
    jc = cfg.judge
    pacing = Pacing(RateLimiter(jc.requests_per_minute, jc.tokens_per_minute))
    policy = RetryPolicy.of(jc)
    gate = asyncio.Semaphore(max(1, jc.max_concurrency))
    price = price_for(jc.model, cfg.prices, backend=jc.backend)
    judge_hash = loaded.judge_hash
    by_prompt: dict[str, AttackCall] = {}
    for call in calls:
        by_prompt.setdefault(call.request.prompt_hash, call)
    if cached_only and (store_path is None or not Path(store_path).exists()):
        raise SwapjudgeError("{cached_only} reads the cache of {store}: give an existing one",
                             arguments=("cached_only", "store"))
    store = open_store(Path(store_path), read_only=cached_only) if store_path is not None else None
    replies: dict[str, dict[str, Any]] = {}
    try:
        if store is not None:
            store.raise_if_damaged()
            for prompt, hit in store.cached(judge_hash, by_prompt).items():
                replies[prompt] = {"verdict": hit.verdict, "raw": hit.raw, "error": None, "source": "cache"}
        to_make = [p for p in by_prompt if p not in replies]
        if cached_only:
            for p in to_make:
                replies[p] = {"verdict": None, "raw": None, "error": "not in the store's cache yet (cached only)",
                              "source": "missing"}
            to_make = []
        done = [0]
        if progress is not None:
            progress(f"{len(calls):,} calls planned, {len(by_prompt):,} distinct prompts, {len(replies):,} served "
                     f"from the store's cache, {len(to_make):,} to make")
        own = judge is None and bool(to_make)
        active = judge if judge is not None or not to_make else open_judge(loaded)

        async def one(prompt: str) -> None:
            call = by_prompt[prompt]
            assert active is not None
            async with gate:
                reply, error, _ = await call_with_retries(
                    lambda: active.judge(call.request), policy, pacing,
                    est_tokens=estimated_tokens(call.request, expected_output_tokens(call.request)))
            failed = error or (reply.error if reply else None)
            if progress is not None:
                done[0] += 1
                progress(f"call {done[0]:,}/{len(to_make):,} made ({len(replies):,} of {len(by_prompt):,} prompts "
                         f"in before it): {call.attack} on {call.item}, shown "
                         f"{'first' if call.shown_first else 'second'}: "
                         f"{(reply.verdict if reply else None) or 'no verdict'}"
                         f"{f', {reply.latency_s:.1f} s' if reply else ''}")
            replies[prompt] = {"verdict": reply.verdict if reply else None, "raw": reply.raw if reply else None,
                               "error": failed, "source": "api"}
            if store is not None and reply is not None and failed is None:
                cost = reply.cost_usd if reply.cost_usd is not None else call_cost(
                    price, input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
                    cached_input_tokens=reply.cached_input_tokens, cache_write_tokens=reply.cache_write_tokens)
                store.cache_reply(judge_hash, prompt, CachedReply(
                    reply.verdict, reply.raw, reply.input_tokens, reply.output_tokens, reply.cached_input_tokens,
                    reply.latency_s, cost, reply.probabilities, reply.settings, reply.strength))

        try:
            await asyncio.gather(*(one(p) for p in to_make))
        except FatalJudgeError as err:
            raise SwapjudgeError(f"the probe stopped: {err}") from None
        finally:
            if own and active is not None:
                await active.aclose()
    finally:
        if store is not None:
            store.close()
    records = [{"judge": jc.judge_name, "item": call.item, "attack": call.attack, "shown_first": call.shown_first,
                **replies[call.request.prompt_hash]} for call in calls]
    outcome: dict[tuple[str, str, bool], str | None] = {}
    for call, record in zip(calls, records, strict=True):
        outcome[(call.attack, call.item, call.shown_first)] = outcome_of(record["verdict"], call.shown_first)
    items = list(dict.fromkeys(c.item for c in calls))

    def orders(name: str) -> tuple[list[str | None], list[str | None]]:
        return ([outcome[(name, it, True)] for it in items], [outcome[(name, it, False)] for it in items])

    placebo = orders(PLACEBO)
    results = tuple(attack_result(name, orders(name), placebo, cfg.confidence) for name in chosen)
    failed = sum(r["verdict"] is None for r in records)
    cached = sum(r["source"] == "cache" for r in replies.values())
    made = sum(r["source"] == "api" for r in replies.values())
    return AttackProbe(jc.judge_name, systems, len(items), seed, cfg.confidence, len(calls), failed, results,
                       tuple(records), made=made, cached=cached,
                       missing=sum(r["source"] == "missing" for r in replies.values()))


def run_attack(loaded: LoadedConfig, **kwargs: Any) -> AttackProbe:
    return asyncio.run(run_attack_async(loaded, **kwargs))
