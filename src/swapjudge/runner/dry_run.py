"""The dry run: what a run would call and cost, without calling the judge or writing the store."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swapjudge.config import LoadedConfig
from swapjudge.core.adaptive import adaptive_skips
from swapjudge.runner.plan import (
    CHARS_PER_TOKEN,
    expected_output_tokens,
)
from swapjudge.runner.pricing import batch_price, call_cost, min_cacheable_tokens, price_for
from swapjudge.runner.provenance import open_store
from swapjudge.runner.session import prepare


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
    # The provider's minimum cacheable prefix (None: no provider prompt caching); a shorter prefix saves nothing.
    prompt_cache_min_tokens: int | None
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
    # The same calls through the provider's batch API (None: no batch API for this backend, or no price):
    # without prompt caching, and with it where the provider combines the two discounts.
    batch_cost_usd: float | None = None
    batch_cached_cost_usd: float | None = None
    # The configured attacks (`attacks:`), probed after the run: `AttackPlan.to_dict()` (None: none configured)
    attacks: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        if out["attacks"] is None:
            out.pop("attacks")  # absent unless configured: the estimate reads as it always did
        return out


def estimate(loaded: LoadedConfig, *, store_path: str | Path | None = None) -> DryRunEstimate:
    """What a run would do, without calling the judge or writing the store."""
    cfg = loaded.config
    pairs, plan = prepare(loaded)
    path = loaded.store_path(store_path)
    done: set[tuple[int, str, str, str]] = set()
    cache: dict[str, Any] = {}
    stored_firsts: list[dict[str, Any]] = []
    if path.exists():
        with open_store(path, read_only=True) as store:
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
    min_cached = min_cacheable_tokens(cfg.judge.backend, cfg.judge.model)
    cacheable = min_cached is not None and prefix >= min_cached
    if price is not None and to_make and cacheable:
        cached_price = price.cached_input if price.cached_input is not None else price.input
        saving = prefix * (len(to_make) - 1) * (price.input - cached_price) / 1_000_000
        if cost is not None:
            cost -= saving
    batch_cost = batch_cached = None
    bprice = batch_price(price, cfg.judge.backend)
    if bprice is not None:
        batch_cost = call_cost(bprice, input_tokens=in_tok, output_tokens=out_tok)
        batch_cached = batch_cost
        if batch_cost is not None and to_make and cacheable and bprice.cached_input is not None:
            batch_cached = batch_cost - prefix * (len(to_make) - 1) * (bprice.input - bprice.cached_input) / 1e6
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
        prompt_cache_min_tokens=min_cached,
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
        batch_cost_usd=batch_cost,
        batch_cached_cost_usd=batch_cached,
        attacks=_attack_plan(loaded, path, frozenset(c.request.prompt_hash for c in plan.calls)),
    )


def _attack_plan(loaded: LoadedConfig, store_path: Path, asked: frozenset[str]) -> dict[str, Any] | None:
    """The configured attacks' calls: the run's own prompts (`asked`, the placebo's) are in the cache by the time
    the probe runs, so only the others are to make."""
    cfg = loaded.config
    if cfg.attacks is None:
        return None
    from swapjudge.runner.attack_probe import dry_run_attack

    return dry_run_attack(loaded, attacks=list(cfg.attacks), sample=cfg.attack_pairs, seed=cfg.seed,
                          store_path=store_path, asked=asked).to_dict()
