"""What the batch engine does the same for every provider: call identities (custom_id), submission keys,
splitting by the documented per-batch limits, and the test hook that kills the process at a step. The
providers' wire formats and the protocol they implement are in `judges/` (`batch`, `openai_batch`,
`anthropic_batch`)."""

from __future__ import annotations

import hashlib
import os
import signal
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from swapjudge.judges.batch import BatchProvider
from swapjudge.store.batches import CallKey

FAULT_ENV = "SWAPJUDGE_BATCH_FAULT"
_fault_hits: dict[str, int] = {}


def fault_point(step: str) -> None:
    """Crash tests: `SWAPJUDGE_BATCH_FAULT=step[:n]` kills this process with SIGKILL the n-th time (default the
    first) it reaches `step` (before_upload, after_upload, after_create, polling, download, storing). The engine
    places every step around the provider's calls, so the providers' wire code holds no test hook."""
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    name, _, nth = spec.partition(":")
    if name != step:
        return
    _fault_hits[step] = _fault_hits.get(step, 0) + 1
    if _fault_hits[step] == int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)


def new_submission_key() -> str:
    """A submission's key: findable at the provider (OpenAI metadata, Anthropic custom_id prefix)."""
    return "sj" + uuid.uuid4().hex[:14]


def custom_id(key: str, call: CallKey) -> str:
    """A request's identity inside a batch: the submission key and a digest of (round, item, first, second).
    Anthropic allows ^[a-zA-Z0-9_-]{1,64}$, so item names (any text) go in as a digest; the ledger maps back."""
    digest = hashlib.sha256("\x1f".join(map(str, call)).encode()).hexdigest()[:24]
    return f"{key}-{digest}"


def key_of(cid: str) -> str:
    return cid.rpartition("-")[0]


def split(entries: Iterable[tuple[CallKey, dict[str, Any]]], provider: BatchProvider,
          new_key: Callable[[], str] = new_submission_key,
          sink: Callable[[str, bytes], None] | None = None) -> list[tuple[str, list[tuple[str, int]]]]:
    """Cut (call, request body) into batches within the provider's request and byte limits: (key, [(custom_id,
    line size)]) per batch. Each batch gets its own key, and each request's custom_id carries it. Each line
    goes to `sink(key, line)` as it is placed (nothing held: a run can be 100,000 requests)."""
    out: list[tuple[str, list[tuple[str, int]]]] = []
    chunk: list[tuple[str, int]] = []
    key, size = new_key(), 0
    for call, body in entries:
        cid = custom_id(key, call)
        data = provider.line(cid, body)
        if chunk and (len(chunk) >= provider.max_requests or size + len(data) + provider.line_overhead
                      > provider.max_bytes):
            out.append((key, chunk))
            key, chunk, size = new_key(), [], 0
            cid = custom_id(key, call)
            data = provider.line(cid, body)
        if len(data) + provider.line_overhead > provider.max_bytes:
            raise ValueError(f"one request is {len(data):,} bytes, over the batch limit of {provider.max_bytes:,}")
        chunk.append((cid, len(data)))
        if sink is not None:
            sink(key, data)
        size += len(data) + provider.line_overhead
    if chunk:
        out.append((key, chunk))
    return out
