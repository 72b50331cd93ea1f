"""A fake of OpenAI's Batch API and Anthropic's Message Batches on 127.0.0.1 (stdlib http.server), written from
the providers' documented wire formats, for tests and the batch benchmark.

OpenAI: `POST /v1/files` (multipart, purpose=batch) -> file object; `POST /v1/batches` {input_file_id, endpoint,
completion_window, metadata} -> batch object; `GET /v1/batches[?limit&after]` (newest first, has_more, last_id);
`GET /v1/batches/{id}` (status validating|in_progress|finalizing|completed|expired|cancelled|failed,
request_counts {total, completed, failed}, output_file_id, error_file_id); `GET /v1/files/{id}/content`.
Anthropic: `POST /v1/messages/batches` {requests: [{custom_id, params}]}; `GET /v1/messages/batches[?limit&
after_id]`; `GET /v1/messages/batches/{id}` (processing_status in_progress|canceling|ended, request_counts
{processing, succeeded, errored, canceled, expired}, results_url); `GET .../results` (JSONL, result types
succeeded | errored | canceled | expired).

Each request's reply comes from the synchronous fake judge (`JudgeServer.handle`), so verdicts are the ones a
synchronous run gets; a best-of-N prompt (`<answer-K-CODE>` frames) is answered `Best answer: K`, K the slot of
the answer that says CORRECT, as the synchronous server answers it.
A batch ends after `polls_to_end` reads of its state (status or listing).
Faults: `outcome(custom_id) -> None | "errored" | "expired" | "canceled"` per request; `end_as` ends the first
batch expired or cancelled, half of it processed (partial results); `refuse` answers every batch API request with
that HTTP status and an error body (401 a bad key, 400, 500, or 404 as a server without a batch API does).
`received` counts each call (the custom_id's part after the submission key) over every created batch; limits
reject oversized batches with a 400.

`RunBatch` is a stand-in for vLLM's offline batch runner, `python -m vllm.entrypoints.openai.run_batch`, writing
its output file the way that entry point's source does (vllm/entrypoints/openai/run_batch.py: the output file is
opened when the run starts and written in request order as requests finish, flushed every 100 lines; each line a
`BatchRequestOutput` {id, custom_id, response: {status_code, request_id, body}, error}; a request for a model it
does not serve gets `status_code` 404, body null and the error response `{"error": {message, type, param, code}}`;
any other failure `status_code` 400, body null and the error's text).
"""

from __future__ import annotations

import contextlib
import email.parser
import email.policy
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from judge_server import JudgeServer, LocalServer


def _rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


class BatchServer(LocalServer):
    def __init__(self, *, policy: str = "better", polls_to_end: int = 2,
                 outcome: Callable[[str], str | None] | None = None, end_as: str | None = None,
                 max_requests: int = 50_000, max_bytes: int = 200 * 1024 * 1024, keep_lines: bool = True,
                 refuse: int | None = None) -> None:
        self.judge = JudgeServer(policy=policy)
        self.refuse = refuse
        self.judge.keep_bodies = False
        self.polls_to_end = polls_to_end
        self.outcome = outcome
        self.end_as = end_as
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.lock = threading.Lock()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}  # id -> state (provider, requests, polls, object fields)
        self.order: list[str] = []  # creation order
        self.received: Counter[str] = Counter()  # call digest -> times it went into a created batch
        self.created = 0
        self.uploads = 0
        self.requests_seen = 0
        self.sync_calls = 0
        self.server_s = 0.0  # time spent producing replies (the simulated processing)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(self, status: int, payload: bytes, ctype: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(payload)

            def do_GET(self) -> None:
                if server.refuse is not None:
                    self._send(server.refuse, server.refusal())
                    return
                status, payload, ctype = server.get(self.path)
                self._send(status, payload, ctype)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if server.refuse is not None:
                    self._send(server.refuse, server.refusal())
                    return
                status, payload = server.post(self.path, raw, self.headers.get("content-type") or "")
                self._send(status, payload)

        class Server(ThreadingHTTPServer):
            request_queue_size = 256

            def handle_error(self, request: Any, client_address: Any) -> None:
                return  # a client killed mid-request resets its connection: expected in the crash tests

        self._listen(Server, Handler)

    def refusal(self) -> bytes:
        message = {401: "Incorrect API key provided", 400: "Invalid request", 404: "Not Found",
                   500: "The server had an error while processing your request"}.get(self.refuse or 0, "error")
        return json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()

    def paid_twice(self) -> int:
        return sum(1 for n in self.received.values() if n > 1)

    # ---- requests --------------------------------------------------------------------------------------------

    def post(self, path: str, raw: bytes, ctype: str) -> tuple[int, bytes]:
        route = urlsplit(path).path
        if route in ("/v1/chat/completions", "/v1/messages"):  # the synchronous API (batch_fallback: sync)
            with self.lock:
                self.sync_calls += 1
            _, _, payload = self.judge.handle(route, json.loads(raw), "")
            return 200, payload
        if route == "/v1/files":
            msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                b"content-type: " + ctype.encode() + b"\r\n\r\n" + raw)
            parts = {p.get_param("name", header="content-disposition"): p for p in msg.iter_parts()}
            if parts.get("purpose") is None or parts["purpose"].get_content().strip() != "batch":
                return 400, b'{"error": {"message": "purpose must be batch"}}'
            data = parts["file"].get_payload(decode=True)
            with self.lock:
                self.uploads += 1
                fid = f"file-{self.uploads:06d}"
                self.files[fid] = data
            return 200, json.dumps({"id": fid, "object": "file", "bytes": len(data), "purpose": "batch",
                                    "filename": parts["file"].get_filename(), "created_at": int(time.time())}).encode()
        if route == "/v1/batches":
            body = json.loads(raw)
            if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
                return 400, b'{"error": {"message": "bad endpoint or completion_window"}}'
            data = self.files.get(body.get("input_file_id", ""))
            if data is None:
                return 404, b'{"error": {"message": "no such file"}}'
            lines = [json.loads(x) for x in data.splitlines() if x.strip()]
            if len(lines) > self.max_requests or len(data) > self.max_bytes:
                return 400, b'{"error": {"message": "batch over the limits"}}'
            for ln in lines:
                assert ln["method"] == "POST" and ln["url"] == "/v1/chat/completions", ln
            reqs = [(str(ln["custom_id"]), ln["body"]) for ln in lines]
            return 200, json.dumps(self._create("openai", reqs, metadata=body.get("metadata") or {},
                                                input_file_id=body["input_file_id"])).encode()
        if route == "/v1/messages/batches":
            if len(raw) > self.max_bytes:
                return 413, b'{"error": {"type": "request_too_large"}}'
            body = json.loads(raw)
            reqs = [(str(r["custom_id"]), r["params"]) for r in body["requests"]]
            if len(reqs) > self.max_requests:
                return 400, b'{"error": {"type": "invalid_request_error", "message": "too many requests"}}'
            return 200, json.dumps(self._create("anthropic", reqs)).encode()
        return 404, b'{"error": {"message": "no route"}}'

    def _create(self, provider: str, reqs: list[tuple[str, dict[str, Any]]], **extra: Any) -> dict[str, Any]:
        ids = [cid for cid, _ in reqs]
        assert len(set(ids)) == len(ids), "custom_id must be unique within a batch"
        with self.lock:
            self.created += 1
            bid = (f"batch_{self.created:06d}" if provider == "openai" else f"msgbatch_{self.created:06d}")
            for cid in ids:
                self.received[cid.rpartition("-")[2]] += 1
            self.batches[bid] = {"provider": provider, "requests": reqs, "polls": 0, "created": time.time(),
                                 "ended": False,
                                 "end_as": self.end_as if self.created == 1 else None, **extra}
            self.order.append(bid)
            return self._object(bid)

    def _end(self, bid: str) -> None:
        """Process a batch: every request answered by the fake judge unless `outcome` fails it."""
        b = self.batches[bid]
        started = time.perf_counter()
        results: list[tuple[str, str, dict[str, Any] | None]] = []
        for cid, body in b["requests"]:
            kind = self.outcome(cid) if self.outcome else None
            if kind is None and b["end_as"] is not None and len(results) >= len(b["requests"]) // 2:
                kind = "expired" if b["end_as"] == "expired" else "canceled"
            if kind is not None:
                results.append((cid, kind, None))
                continue
            path = "/v1/messages" if b["provider"] == "anthropic" else "/v1/chat/completions"
            _, _, payload = self.judge.handle(path, body, "")
            results.append((cid, "succeeded", json.loads(payload)))
        b["results"] = results
        b["ended"] = True
        b["ended_at"] = time.time()
        if b["provider"] == "openai":
            ok = [r for r in results if r[1] == "succeeded"]
            bad = [r for r in results if r[1] != "succeeded"]
            out = b"".join(json.dumps({"id": f"batch_req_{i}", "custom_id": cid, "response": {
                "status_code": 200, "request_id": f"req_{i}", "body": reply}, "error": None}).encode() + b"\n"
                for i, (cid, _, reply) in enumerate(ok))
            err = b"".join(json.dumps({"id": f"batch_req_e{i}", "custom_id": cid, "response": None if kind != "errored"
                                       else {"status_code": 400, "request_id": f"req_e{i}", "body": {"error": {
                                           "message": "bad request", "type": "invalid_request_error"}}},
                                       "error": {"code": "batch_expired", "message": "expired"}
                                       if kind == "expired" else None}).encode() + b"\n"
                           for i, (cid, kind, _) in enumerate(bad))
            if ok:
                self.files[f"{bid}-output"] = out
                b["output_file_id"] = f"{bid}-output"
            if bad:
                self.files[f"{bid}-errors"] = err
                b["error_file_id"] = f"{bid}-errors"
        self.server_s += time.perf_counter() - started

    def _object(self, bid: str) -> dict[str, Any]:
        b = self.batches[bid]
        results = b.get("results") or []
        kinds = Counter(k for _, k, _ in results)
        n = len(b["requests"])
        if b["provider"] == "openai":
            status = "in_progress"
            if b["ended"]:
                status = {"expired": "expired", "canceled": "cancelled"}.get(b["end_as"] or "", "completed")
            return {"id": bid, "object": "batch", "endpoint": "/v1/chat/completions", "errors": None,
                    "input_file_id": b["input_file_id"], "completion_window": "24h", "status": status,
                    "output_file_id": b.get("output_file_id"), "error_file_id": b.get("error_file_id"),
                    "created_at": int(b["created"]), "completed_at": int(b["ended_at"]) if b["ended"] else None,
                    "request_counts": {"total": n, "completed": kinds["succeeded"],
                                       "failed": n - kinds["succeeded"] if b["ended"] else 0},
                    "metadata": b["metadata"]}
        return {"id": bid, "type": "message_batch",
                "processing_status": "ended" if b["ended"] else "in_progress",
                "request_counts": {"processing": 0 if b["ended"] else n, "succeeded": kinds["succeeded"],
                                   "errored": kinds["errored"], "canceled": kinds["canceled"],
                                   "expired": kinds["expired"]},
                "created_at": _rfc3339(b["created"]), "ended_at": _rfc3339(b["ended_at"]) if b["ended"] else None,
                "expires_at": _rfc3339(b["created"] + 86400), "cancel_initiated_at": None, "archived_at": None,
                "results_url": f"{self.anthropic_url}/v1/messages/batches/{bid}/results" if b["ended"] else None}

    def _tick(self, bid: str) -> None:
        b = self.batches[bid]
        b["polls"] += 1
        if not b["ended"] and b["polls"] >= self.polls_to_end:
            self._end(bid)

    def get(self, path: str) -> tuple[int, bytes, str]:
        parts = urlsplit(path)
        route, query = parts.path, parse_qs(parts.query)
        with self.lock:
            self.requests_seen += 1
            if route.startswith("/v1/files/") and route.endswith("/content"):
                fid = route.split("/")[3]
                if fid not in self.files:
                    return 404, b'{"error": {"message": "no such file"}}', "application/json"
                return 200, self.files[fid], "application/jsonl"
            if route in ("/v1/batches", "/v1/messages/batches"):
                provider = "openai" if route == "/v1/batches" else "anthropic"
                ids = [b for b in reversed(self.order) if self.batches[b]["provider"] == provider]
                cursor = (query.get("after") or query.get("after_id") or [None])[0]
                if cursor in ids:
                    ids = ids[ids.index(cursor) + 1:]
                limit = int((query.get("limit") or ["20"])[0])
                page = ids[:limit]
                for b in page:  # a listing reads each batch's state too: it advances like a status read
                    self._tick(b)
                data = [self._object(b) for b in page]
                return 200, json.dumps({"object": "list", "data": data, "has_more": len(ids) > limit,
                                        "first_id": page[0] if page else None,
                                        "last_id": page[-1] if page else None}).encode(), "application/json"
            segs = route.strip("/").split("/")
            if route.startswith("/v1/messages/batches/") and segs[-1] == "results":
                b = self.batches.get(segs[3])
                if b is None or not b["ended"]:
                    return 404, b'{"error": {"type": "not_found_error"}}', "application/json"
                lines = []
                for cid, kind, reply in b["results"]:
                    result: dict[str, Any] = {"type": kind}
                    if kind == "succeeded":
                        result["message"] = reply
                    elif kind == "errored":
                        result["error"] = {"type": "error", "error": {"type": "invalid_request_error",
                                                                      "message": "bad request"}}
                    lines.append(json.dumps({"custom_id": cid, "result": result}).encode() + b"\n")
                return 200, b"".join(lines), "application/binary"
            bid = segs[-1]
            if bid in self.batches:
                self._tick(bid)
                return 200, json.dumps(self._object(bid)).encode(), "application/json"
        return 404, b'{"error": {"message": "no route"}}', "application/json"


class RunBatch:
    """vLLM's run_batch over swapjudge's request files, answering through the fake judge's decision rule.

    `served_model_name` is the name it serves (`--served-model-name`, else `--model`): a request for another model
    gets the 404 line. `fail(custom_id) -> text | None` fails a request with that text (the 400 line).
    `requests` counts every request answered (the engine's work, paid in GPU time), per call digest."""

    def __init__(self, served_model_name: str = "judge-model", *,
                 fail: Callable[[str], str | None] | None = None) -> None:
        self.judge = JudgeServer()
        self.judge.keep_bodies = False
        self.served = served_model_name
        self.fail = fail
        self.requests: Counter[str] = Counter()
        self.n = 0

    def output_lines(self, request_file: Path) -> list[str]:
        """The output lines run_batch writes for a request file, in request order."""
        out = []
        for raw in request_file.read_text(encoding="utf-8").splitlines():
            if not raw.strip():
                continue
            req = json.loads(raw)
            cid, body = req["custom_id"], req["body"]
            self.requests[cid.rpartition("-")[2]] += 1
            self.n += 1
            line: dict[str, Any] = {"id": f"vllm-{self.n:032x}", "custom_id": cid}
            failure = self.fail(cid) if self.fail else None
            if body.get("model") != self.served:
                line["response"] = {"status_code": 404, "request_id": f"vllm-batch-{self.n:032x}", "body": None}
                line["error"] = {"error": {"message": f"The model `{body.get('model')}` does not exist.",
                                           "type": "NotFoundError", "param": "model", "code": 404}}
            elif failure is not None:
                line["response"] = {"status_code": 400, "request_id": f"vllm-batch-{self.n:032x}", "body": None}
                line["error"] = failure
            else:
                _, _, payload = self.judge.handle("/v1/chat/completions", body, "")
                reply = json.loads(payload)
                choice = reply["choices"][0]
                reply = {"id": f"chatcmpl-{self.n:032x}", "object": "chat.completion", "created": int(time.time()),
                         "model": self.served, "choices": [{
                             "index": 0, "message": {"role": "assistant", "content": choice["message"]["content"],
                                                     "refusal": None, "annotations": None, "audio": None,
                                                     "function_call": None, "tool_calls": [], "reasoning": None},
                             "logprobs": choice.get("logprobs"), "finish_reason": "stop", "stop_reason": None,
                             "token_ids": None}],
                         "service_tier": None, "system_fingerprint": None,
                         "usage": {"prompt_tokens": reply["usage"]["prompt_tokens"],
                                   "total_tokens": reply["usage"]["total_tokens"],
                                   "completion_tokens": reply["usage"]["completion_tokens"],
                                   "prompt_tokens_details": None},
                         "prompt_logprobs": None, "prompt_token_ids": None, "kv_transfer_params": None}
                line["response"] = {"status_code": 200, "request_id": f"vllm-batch-{self.n:032x}", "body": reply}
                line["error"] = None
            out.append(json.dumps(line, separators=(",", ":")))
        return out

    def run(self, request_file: Path, output_file: Path | None = None, *, stop_after: int | None = None,
            cut: bool = False) -> Path:
        """Write the output file as run_batch does; `stop_after`: only the first lines so far (a run still
        going, or one that died), `cut`: and half of the next one (its buffer flushed mid-line)."""
        output_file = output_file or request_file.with_name(request_file.name.replace(".requests.", ".output."))
        lines = self.output_lines(request_file)
        keep = lines if stop_after is None else lines[:stop_after]
        text = "".join(x + "\n" for x in keep)
        if cut and stop_after is not None and stop_after < len(lines):
            text += lines[stop_after][: len(lines[stop_after]) // 2]
        output_file.write_text(text, encoding="utf-8")
        return output_file


def main() -> None:
    """Serve until killed (the benchmark runs the server in its own process): prints the port on stdout."""
    import argparse
    import sys

    parser = argparse.ArgumentParser()
    parser.add_argument("--polls", type=int, default=2)
    args = parser.parse_args()
    server = BatchServer(polls_to_end=args.polls)
    print(server.port, flush=True)
    sys.stdout.close()
    server.httpd.serve_forever()


if __name__ == "__main__":
    main()
