"""OpenAI's Batch API: a JSONL file of `{custom_id, method, url, body}` lines uploaded with `purpose=batch`, a
batch created on `/v1/chat/completions` with `completion_window: 24h` and the submission key in `metadata`,
polled until it ends, then `output_file_id` and `error_file_id` downloaded. The same wire format, as files, is
what vLLM's run_batch reads and writes (see `files`)."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, BinaryIO

from swapjudge.judges._http import HttpClient, require_http_client
from swapjudge.runner.batch.common import BatchState, ResultLine, fault_point, with_retries
from swapjudge.store.batches import Submission

ENDPOINT = "/v1/chat/completions"
METADATA_KEY = "swapjudge_submission"
MAX_REQUESTS = 50_000  # documented per-batch limits: requests per input file, and its size
MAX_BYTES = 200 * 1024 * 1024
ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
LOOKBACK_S = 6 * 3600  # adoption looks at batches created this long before the submission was planned


def chat_line(cid: str, body: dict[str, Any]) -> bytes:
    return json.dumps({"custom_id": cid, "method": "POST", "url": ENDPOINT, "body": body},
                      separators=(",", ":")).encode() + b"\n"


def parse_output_line(line: bytes | str) -> ResultLine | None:
    """One line of a batch output or error file: `{id, custom_id, response: {status_code, body}, error}`."""
    try:
        row = json.loads(line)
        cid = str(row["custom_id"])
    except (ValueError, KeyError, TypeError):
        return None
    response = row.get("response") or {}
    error = row.get("error")
    status = response.get("status_code") if isinstance(response, dict) else None
    body = response.get("body") if isinstance(response, dict) else None
    if status == 200 and isinstance(body, dict) and not error:
        return ResultLine(cid, body)
    if isinstance(error, dict):
        reason = f"{error.get('code') or 'error'}: {error.get('message') or ''}".strip()
    elif isinstance(body, dict) and isinstance(body.get("error"), dict):
        reason = f"HTTP {status}: {body['error'].get('message') or body['error'].get('type') or ''}"
    else:
        reason = f"HTTP {status}"
    return ResultLine(cid, None, failure=reason)


class OpenAIBatches:
    name = "openai"
    max_requests = MAX_REQUESTS
    max_bytes = MAX_BYTES
    line_overhead = 0

    def __init__(self, *, base_url: str, api_key: str | None, timeout_s: float) -> None:
        require_http_client("openai")
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        # uploads and downloads of whole batch files take longer than one judge call
        self._http = HttpClient(base_url=base_url, headers=headers, timeout_s=max(timeout_s, 300.0), concurrency=4)

    def line(self, cid: str, body: dict[str, Any]) -> bytes:
        return chat_line(cid, body)

    async def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        return await self._http.request_json(method, path, "openai batch", **kwargs)

    async def submit(self, sub: Submission, payload: BinaryIO, on_uploaded: Callable[[str], None]) -> str:
        file_id = sub.file_id
        if file_id is None:
            fault_point("before_upload")
            import aiohttp

            form = aiohttp.FormData()
            form.add_field("purpose", "batch")
            form.add_field("file", payload, filename=f"{sub.key}.jsonl", content_type="application/jsonl")
            uploaded = await self._json("POST", "files", data=form)
            file_id = str(uploaded["id"])
            fault_point("after_upload")
            on_uploaded(file_id)
        created = await self._json("POST", "batches", json={
            "input_file_id": file_id, "endpoint": ENDPOINT, "completion_window": "24h",
            "metadata": {METADATA_KEY: sub.key}})
        fault_point("after_create")
        return str(created["id"])

    async def find(self, sub: Submission, known: set[str]) -> str | None:
        """The batch tagged with this submission's key, if one was created (newest first, one page at a time)."""
        after: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 100}
            if after:
                params["after"] = after
            page = await with_retries(functools.partial(self._json, "GET", "batches", params=dict(params)))
            data = page.get("data") or []
            for b in data:
                if (b.get("metadata") or {}).get(METADATA_KEY) == sub.key:
                    return str(b["id"])
            too_old = data and float(data[-1].get("created_at") or 0) < sub.planned_at - LOOKBACK_S
            if not page.get("has_more") or not data or too_old:
                return None
            after = str(page.get("last_id") or data[-1]["id"])

    async def status(self, batch_id: str) -> BatchState:
        b = await with_retries(lambda: self._json("GET", f"batches/{batch_id}"))
        counts = {k: int(v) for k, v in (b.get("request_counts") or {}).items() if isinstance(v, int)}
        return BatchState(ended=b.get("status") in ENDED, provider_status=str(b.get("status")), counts=counts, raw=b)

    async def _lines(self, file_id: str) -> AsyncIterator[bytes]:
        async with contextlib.aclosing(self._http.lines(f"files/{file_id}/content", "openai batch")) as lines:
            fault_point("download")
            async for line in lines:
                yield line

    async def results(self, batch_id: str, state: BatchState) -> AsyncIterator[ResultLine]:
        for field in ("output_file_id", "error_file_id"):
            file_id = state.raw.get(field)
            if not file_id:
                continue
            async for line in self._lines(str(file_id)):
                parsed = parse_output_line(line)
                if parsed is not None:
                    yield parsed

    async def aclose(self) -> None:
        await self._http.aclose()
