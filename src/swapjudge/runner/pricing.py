"""Prices per model (USD per million tokens) for cost estimates and spend; overridable in the configuration.

The built-in table is a convenience, correct when written (list prices): put the prices you pay under `prices:`
in the run configuration. A model with no price gets no cost (None), never 0. Batch prices are derived from the
list price by each provider's batch discount (`batch_price`).
"""

from __future__ import annotations

from collections.abc import Mapping

from swapjudge.config import Price

DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o-mini": Price(input=0.15, output=0.60, cached_input=0.075),
    "gpt-4o": Price(input=2.50, output=10.00, cached_input=1.25),
    "gpt-4.1": Price(input=2.00, output=8.00, cached_input=0.50),
    "gpt-4.1-mini": Price(input=0.40, output=1.60, cached_input=0.10),
    "gpt-4.1-nano": Price(input=0.10, output=0.40, cached_input=0.025),
    "claude-3-haiku": Price(input=0.25, output=1.25, cached_input=0.03, cache_write=0.30),
    "claude-3-5-haiku": Price(input=0.80, output=4.00, cached_input=0.08, cache_write=1.00),
    "claude-haiku-4-5": Price(input=1.00, output=5.00, cached_input=0.10, cache_write=1.25),
    "claude-sonnet-4": Price(input=3.00, output=15.00, cached_input=0.30, cache_write=3.75),
    "claude-sonnet-4-5": Price(input=3.00, output=15.00, cached_input=0.30, cache_write=3.75),
    "claude-opus-4-1": Price(input=15.00, output=75.00, cached_input=1.50, cache_write=18.75),
}


def min_cacheable_tokens(backend: str | None, model: str | None) -> int | None:
    """The shortest prompt prefix a provider caches (tokens): shorter prefixes are never read from its prompt
    cache, so they save nothing. None for a backend without provider prompt caching. From the providers'
    documentation: OpenAI caches prompts of 1,024 tokens or more; Anthropic's minimum is 1,024 tokens for
    Sonnet and Opus models, 2,048 for Claude 3 and 3.5 Haiku, 4,096 for Claude Haiku 4.5."""
    name = (model or "").lower()
    if backend == "openai":
        return 1024
    if backend == "anthropic":
        if "haiku" in name:
            return 4096 if "haiku-4" in name else 2048
        return 1024
    return None


# Backends that run in this process or read stored replies: nothing is paid per token.
FREE_BACKENDS = frozenset({"local", "replay"})
FREE = Price(input=0.0, output=0.0, cached_input=0.0)


def price_for(model: str | None, overrides: Mapping[str, Price] | None = None, *,
              backend: str | None = None) -> Price | None:
    """Exact name first (configuration, then built-in), then the longest built-in prefix (dated names); free for
    a backend that pays nothing per token (unless the configuration prices the model, e.g. its electricity)."""
    if model and overrides and model in overrides:
        return overrides[model]
    if backend in FREE_BACKENDS:
        return FREE
    if not model:
        return None
    if model in DEFAULT_PRICES:
        return DEFAULT_PRICES[model]
    prefixes = [name for name in DEFAULT_PRICES if model.startswith(name + "-")]
    return DEFAULT_PRICES[max(prefixes, key=len)] if prefixes else None


# Provider batch APIs bill every token class at this fraction of the synchronous price.
BATCH_DISCOUNT: dict[str, float] = {"openai": 0.5, "anthropic": 0.5}
# Whether a provider's prompt-cache discount also applies inside a batch. Anthropic documents that the two
# combine; for OpenAI a cached prompt in a batch is priced here as plain batch input (never an underestimate).
BATCH_WITH_CACHING: dict[str, bool] = {"openai": False, "anthropic": True}


def batch_price(price: Price | None, backend: str) -> Price | None:
    """The price of a call made through `backend`'s batch API: every token class at the batch discount; cache
    reads at the discounted cached price where the provider combines the two, else at the discounted input."""
    if price is None or backend not in BATCH_DISCOUNT:
        return None
    f = BATCH_DISCOUNT[backend]
    cached = price.cached_input if BATCH_WITH_CACHING[backend] else None
    write = price.cache_write if BATCH_WITH_CACHING[backend] else None
    return Price(
        input=price.input * f,
        output=price.output * f,
        cached_input=None if cached is None else cached * f,
        cache_write=None if write is None else write * f,
    )


def call_cost(
    price: Price | None,
    *,
    input_tokens: int | None,
    output_tokens: int | None,
    cached_input_tokens: int | None = None,
    cache_write_tokens: int | None = None,
) -> float | None:
    """Cost of one call. `input_tokens` is the whole prompt, cache reads and writes included."""
    if price is None or input_tokens is None or output_tokens is None:
        return None
    cached = cached_input_tokens or 0
    written = cache_write_tokens or 0
    plain = max(0, input_tokens - cached - written)
    cost = plain * price.input + output_tokens * price.output
    cost += cached * (price.cached_input if price.cached_input is not None else price.input)
    cost += written * (price.cache_write if price.cache_write is not None else price.input)
    return cost / 1_000_000
