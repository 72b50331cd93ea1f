"""OpenAI's Batch API: a JSONL file of `{custom_id, method, url, body}` lines uploaded with `purpose=batch`, a
batch created on `/v1/chat/completions` with `completion_window: 24h` and the submission key in `metadata`,
polled until it ends, then `output_file_id` and `error_file_id` downloaded. The same wire format, as files, is
what vLLM's run_batch reads and writes (runner/batch/files)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, BinaryIO

from swapjudge.judges.batch import BatchState, BatchSubmission, HttpBatches, Result, ResultLine
from swapjudge.judges.openai import PROVIDER, OpenAIJudge

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
    """One line of a batch output or error file: `{id, custom_id, response: {status_code, body}, error}`.

    A failure keeps its reason in the words the engine gave: OpenAI's error lines carry `error: {code, message}`
    and failed responses an error body; vLLM's run_batch writes failures inline with `status_code` 400 (or the
    error's own code), `body` null and `error` either a message or an error response `{"error": {message, type,
    code}}` (older versions: `{message, type, code}`)."""
    try:
        row = json.loads(line)
        cid = str(row["custom_id"])
    except (ValueError, KeyError, TypeError):
        return None
    response = row.get("response") if isinstance(row.get("response"), dict) else {}
    error = row.get("error")
    status = response.get("status_code")
    body = response.get("body")
    if status == 200 and isinstance(body, dict) and not error:
        return ResultLine(cid, body)
    message = _error_text(error) or (_error_text(body.get("error")) if isinstance(body, dict) else None)
    if isinstance(status, int):
        reason = f"HTTP {status}: {message}" if message else f"HTTP {status}"
    elif isinstance(error, dict) and isinstance(error.get("code"), str):
        reason = f"{error['code']}: {message or ''}".strip().rstrip(":")
    else:
        reason = message or "failed"
    return ResultLine(cid, None, failure=reason)


def _error_text(error: Any) -> str | None:
    """The message of an error as the engines write it: a string, `{message, ...}` or `{"error": {message}}`."""
    if isinstance(error, str):
        return error.strip() or None
    if not isinstance(error, dict):
        return None
    inner = error.get("error")
    if isinstance(inner, dict | str):
        return _error_text(inner)
    text = error.get("message") or error.get("type") or error.get("code")
    return str(text).strip() if text else None


class OpenAIBatches(HttpBatches):
    provider = PROVIDER
    judge = OpenAIJudge
    label = "openai batch"
    name = "openai"
    max_requests = MAX_REQUESTS
    max_bytes = MAX_BYTES
    line_overhead = 0

    def line(self, cid: str, body: dict[str, Any]) -> bytes:
        return chat_line(cid, body)

    async def submit(self, sub: BatchSubmission, payload: BinaryIO, on_uploaded: Callable[[str], None]) -> str:
        file_id = sub.file_id
        if file_id is None:
            import aiohttp

            form = aiohttp.FormData()
            form.add_field("purpose", "batch")
            form.add_field("file", payload, filename=f"{sub.key}.jsonl", content_type="application/jsonl")
            uploaded = await self._json("POST", "files", data=form)
            file_id = str(uploaded["id"])
            on_uploaded(file_id)
        created = await self._json("POST", "batches", json={
            "input_file_id": file_id, "endpoint": ENDPOINT, "completion_window": "24h",
            "metadata": {METADATA_KEY: sub.key}})
        return str(created["id"])

    async def find(self, sub: BatchSubmission, known: set[str]) -> str | None:
        """The batch tagged with this submission's key, if one was created (newest first, one page at a time)."""
        def too_old(b: dict[str, Any]) -> bool:
            return float(b.get("created_at") or 0) < sub.planned_at - LOOKBACK_S

        async with contextlib.aclosing(self._listing("batches", "after", too_old)) as pages:
            async for data in pages:
                for b in data:
                    if (b.get("metadata") or {}).get(METADATA_KEY) == sub.key:
                        return str(b["id"])
        return None

    async def status(self, batch_id: str) -> BatchState:
        b = await self._retry(lambda: self._json("GET", f"batches/{batch_id}"))
        counts = {k: int(v) for k, v in (b.get("request_counts") or {}).items() if isinstance(v, int)}
        return BatchState(ended=b.get("status") in ENDED, provider_status=str(b.get("status")), counts=counts, raw=b)

    async def results(self, batch_id: str, state: BatchState) -> AsyncIterator[Result]:
        for field in ("output_file_id", "error_file_id"):
            file_id = state.raw.get(field)
            if not file_id:
                continue
            async for result in self._results(f"files/{file_id}/content", parse_output_line):
                yield result
