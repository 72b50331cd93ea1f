"""Anthropic's Message Batches: `POST /v1/messages/batches` with `requests: [{custom_id, params}]`, polled until
`processing_status` is `ended`, results streamed from `results_url` as JSONL with result types succeeded,
errored, canceled and expired. A batch carries no metadata, so the submission key is in every custom_id, and an
unknown batch is recognised only from its results."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, Callable
from datetime import datetime
from typing import Any, BinaryIO

from swapjudge.judges.anthropic import PROVIDER, AnthropicJudge
from swapjudge.judges.batch import WAIT, BatchState, BatchSubmission, HttpBatches, Result, ResultLine

MAX_REQUESTS = 100_000  # documented per-batch limits: requests, and the create request's size
MAX_BYTES = 256 * 1024 * 1024
ENVELOPE = len(b'{"requests":[]}')
CLOCK_SLACK_S = 600.0  # a batch created this long before the submission was planned may still be it


def parse_result_line(line: bytes | str) -> ResultLine | None:
    """One results line: `{custom_id, result: {type, message | error}}`."""
    try:
        row = json.loads(line)
        cid = str(row["custom_id"])
        result = row["result"]
        kind = result["type"]
    except (ValueError, KeyError, TypeError):
        return None
    if kind == "succeeded" and isinstance(result.get("message"), dict):
        return ResultLine(cid, result["message"])
    if kind == "errored":
        err = result.get("error") or {}
        inner: dict[str, Any] = err["error"] if isinstance(err.get("error"), dict) else err
        return ResultLine(cid, None, failure=f"errored: {inner.get('type', '')}: {inner.get('message', '')}")
    return ResultLine(cid, None, failure=str(kind))  # canceled, expired


def _epoch(stamp: Any) -> float:
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


class AnthropicBatches(HttpBatches):
    provider = PROVIDER
    judge = AnthropicJudge
    label = "anthropic batch"
    name = "anthropic"
    max_requests = MAX_REQUESTS
    max_bytes = MAX_BYTES - ENVELOPE
    line_overhead = 1  # the comma between requests

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._not_ours: set[str] = set()  # ended unknown batches whose results named no key of ours

    def line(self, cid: str, body: dict[str, Any]) -> bytes:
        return json.dumps({"custom_id": cid, "params": body}, separators=(",", ":")).encode()

    async def submit(self, sub: BatchSubmission, payload: BinaryIO, on_uploaded: Callable[[str], None]) -> str:
        content = b'{"requests":[' + b",".join(line.rstrip(b"\n") for line in payload if line.strip()) + b"]}"
        created = await self._json("POST", "v1/messages/batches", data=content,
                                   headers={"content-type": "application/json"})
        return str(created["id"])

    async def find(self, sub: BatchSubmission, known: set[str]) -> str | None:
        """The batch holding this submission's requests, if one was created: among recent batches no ledger knows,
        of the submission's size, the one whose results carry its key. WAIT while such a batch is still running."""
        def too_old(b: dict[str, Any]) -> bool:
            return _epoch(b.get("created_at")) < sub.planned_at - CLOCK_SLACK_S

        waiting = False
        async with contextlib.aclosing(self._listing("v1/messages/batches", "after_id", too_old)) as pages:
            async for data in pages:
                for b in data:
                    bid = str(b["id"])
                    if bid in known or bid in self._not_ours or too_old(b):
                        continue
                    if sum(int(v) for v in (b.get("request_counts") or {}).values()) != sub.requests:
                        continue
                    if b.get("processing_status") != "ended":
                        waiting = True
                        continue
                    async with contextlib.aclosing(self.results(bid, BatchState(True, "ended", raw=b))) as lines:
                        async for res in lines:
                            if not isinstance(res, ResultLine):
                                continue
                            if res.custom_id.startswith(sub.key + "-"):
                                return bid
                            break  # one line tells: every custom_id of a batch carries the same key
                    self._not_ours.add(bid)
        return WAIT if waiting else None

    async def status(self, batch_id: str) -> BatchState:
        b = await self._retry(lambda: self._json("GET", f"v1/messages/batches/{batch_id}"))
        counts = {k: int(v) for k, v in (b.get("request_counts") or {}).items() if isinstance(v, int)}
        return BatchState(ended=b.get("processing_status") == "ended", provider_status=str(b.get("processing_status")),
                          counts=counts, raw=b)

    async def results(self, batch_id: str, state: BatchState) -> AsyncGenerator[Result, None]:
        url = state.raw.get("results_url") or f"v1/messages/batches/{batch_id}/results"
        async for result in self._results(str(url), parse_result_line):
            yield result
