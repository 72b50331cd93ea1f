"""Client-side rate limits: token buckets for requests and tokens per minute."""

from __future__ import annotations

import asyncio
import time


class _Bucket:
    """A token bucket refilled at `per_minute / 60` per second, holding at most one second's worth (or one
    request's need). A request may take it into debt, so one large request never waits forever."""

    def __init__(self, per_minute: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.stamp = time.monotonic()


class RateLimiter:
    def __init__(self, requests_per_minute: float | None, tokens_per_minute: float | None) -> None:
        self._buckets: list[tuple[_Bucket, bool]] = []
        if requests_per_minute:
            self._buckets.append((_Bucket(requests_per_minute), False))
        if tokens_per_minute:
            self._buckets.append((_Bucket(tokens_per_minute), True))
        self._lock = asyncio.Lock()

    async def acquire(self, tokens: float) -> None:
        if not self._buckets:
            return
        async with self._lock:  # first come, first served
            while True:
                delay = 0.0
                for bucket, is_tokens in self._buckets:
                    amount = tokens if is_tokens else 1.0
                    now = time.monotonic()
                    bucket.level = min(bucket.capacity, bucket.level + (now - bucket.stamp) * bucket.rate)
                    bucket.stamp = now
                    need = min(amount, bucket.capacity)
                    if bucket.level < need:
                        delay = max(delay, (need - bucket.level) / bucket.rate)
                if delay <= 0:
                    for bucket, is_tokens in self._buckets:
                        bucket.level -= tokens if is_tokens else 1.0
                    return
                await asyncio.sleep(delay)
