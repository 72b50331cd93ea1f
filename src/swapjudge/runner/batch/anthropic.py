"""Anthropic's Message Batches: `POST /v1/messages/batches` with `requests: [{custom_id, params}]`, polled until
`processing_status` is `ended`, results streamed from `results_url` as JSONL with result types succeeded,
errored, canceled and expired. A batch carries no metadata, so the submission key is in every custom_id, and an
unknown batch is recognised only from its results."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import AsyncGenerator, Callable
from datetime import datetime
from typing import Any, BinaryIO

from swapjudge.judges._http import HttpClient, require_http_client
from swapjudge.judges.anthropic import API_VERSION
from swapjudge.runner.batch.common import WAIT, BatchState, ResultLine, fault_point, with_retries
from swapjudge.store.batches import Submission

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


class AnthropicBatches:
    name = "anthropic"
    max_requests = MAX_REQUESTS
    max_bytes = MAX_BYTES - ENVELOPE
    line_overhead = 1  # the comma between requests

    def __init__(self, *, base_url: str, api_key: str | None, timeout_s: float) -> None:
        require_http_client("anthropic")
        headers = {"anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        # uploads and downloads of whole batch files take longer than one judge call
        self._http = HttpClient(base_url=base_url, headers=headers, timeout_s=max(timeout_s, 300.0), concurrency=4)
        self._not_ours: set[str] = set()  # ended unknown batches whose results named no key of ours

    def line(self, cid: str, body: dict[str, Any]) -> bytes:
        return json.dumps({"custom_id": cid, "params": body}, separators=(",", ":")).encode()

    async def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        return await self._http.request_json(method, path, "anthropic batch", **kwargs)

    async def submit(self, sub: Submission, payload: BinaryIO, on_uploaded: Callable[[str], None]) -> str:
        fault_point("before_upload")
        content = b'{"requests":[' + b",".join(line.rstrip(b"\n") for line in payload if line.strip()) + b"]}"
        created = await self._json("POST", "v1/messages/batches", data=content,
                                   headers={"content-type": "application/json"})
        fault_point("after_create")
        return str(created["id"])

    async def find(self, sub: Submission, known: set[str]) -> str | None:
        """The batch holding this submission's requests, if one was created: among recent batches no ledger knows,
        of the submission's size, the one whose results carry its key. WAIT while such a batch is still running."""
        after: str | None = None
        waiting = False
        while True:
            params: dict[str, Any] = {"limit": 100}
            if after:
                params["after_id"] = after
            page = await with_retries(functools.partial(self._json, "GET", "v1/messages/batches", params=dict(params)))
            data = page.get("data") or []
            for b in data:
                bid = str(b["id"])
                if bid in known or bid in self._not_ours:
                    continue
                if _epoch(b.get("created_at")) < sub.planned_at - CLOCK_SLACK_S:
                    continue
                if sum(int(v) for v in (b.get("request_counts") or {}).values()) != sub.requests:
                    continue
                if b.get("processing_status") != "ended":
                    waiting = True
                    continue
                async with contextlib.aclosing(self.results(bid, BatchState(True, "ended", raw=b))) as lines:
                    async for res in lines:
                        if res.custom_id.startswith(sub.key + "-"):
                            return bid
                        break  # one line tells: every custom_id of a batch carries the same key
                self._not_ours.add(bid)
            too_old = data and _epoch(data[-1].get("created_at")) < sub.planned_at - CLOCK_SLACK_S
            if not page.get("has_more") or not data or too_old:
                return WAIT if waiting else None
            after = str(page.get("last_id") or data[-1]["id"])

    async def status(self, batch_id: str) -> BatchState:
        b = await with_retries(lambda: self._json("GET", f"v1/messages/batches/{batch_id}"))
        counts = {k: int(v) for k, v in (b.get("request_counts") or {}).items() if isinstance(v, int)}
        return BatchState(ended=b.get("processing_status") == "ended", provider_status=str(b.get("processing_status")),
                          counts=counts, raw=b)

    async def results(self, batch_id: str, state: BatchState) -> AsyncGenerator[ResultLine, None]:
        url = state.raw.get("results_url") or f"v1/messages/batches/{batch_id}/results"
        async with contextlib.aclosing(self._http.lines(str(url), "anthropic batch")) as lines:
            fault_point("download")
            async for line in lines:
                parsed = parse_result_line(line)
                if parsed is not None:
                    yield parsed

    async def aclose(self) -> None:
        await self._http.aclose()
