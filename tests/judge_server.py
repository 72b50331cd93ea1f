"""A real HTTP judge server on 127.0.0.1 for tests and benchmarks, speaking the OpenAI Chat Completions and
Anthropic Messages wire formats (stdlib `http.server`, HTTP/1.1 keep-alive, one thread per connection).

It reads the prompt the way a model would: it finds the boundary code, cuts the two answers out of their
frames and decides by a policy (`first`: always the answer in slot 1; `better`: the answer containing the
word CORRECT; `first_marker`, with any policy: slot 1 whenever the task contains that text; `prefer`, with any
policy: the answer containing that text whenever only one of the two does). When the system
prompt asks for a graded verdict (A>>B ... B>>A) it answers one: "much better" when the losing answer contains
WRONG (and always under `first`/`second`), "slightly" otherwise, A=B for a tie. It counts every request per
prompt, and can inject faults per (prompt, attempt).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

Fault = str  # "429" | "500" | "timeout" | "malformed" | "garbage" | "garbage_always" | "401" | "echo400"


def frame_text(user: str, name: str) -> str | None:
    """The text between the opening and closing tags of `name` that carry the prompt's code word (taken from its
    opening task tag), or None when the frame is broken (no such tag pair, or more than one)."""
    m = re.match(r"<task (\w+)>\n", user)
    if not m:
        return None
    code = re.escape(m.group(1))
    found = re.findall(rf"<{name} {code}>\n(.*?)\n</{name} {code}>", user, re.DOTALL)
    return found[0] if len(found) == 1 else None


def frame_code(user: str) -> str | None:
    m = re.match(r"<task (\w+)>\n", user)
    return m.group(1) if m else None


def listwise_answers(user: str) -> list[str] | None:
    """The N answers of a best-of-N prompt (`<answer-K-CODE>` frames, slot 1 first), or None when it is none."""
    m = re.search(r"<instruction-(\w+)>\n", user)
    if not m:
        return None
    code = re.escape(m.group(1))
    found = re.findall(rf"<answer-(\d+)-{code}>\n(.*?)\n</answer-\1-{code}>", user, re.DOTALL)
    return [text for _, text in sorted(found, key=lambda f: int(f[0]))] or None


def frame_answers(user: str) -> tuple[str, str] | None:
    """The two answers as the frame delimits them, or None when the frame is broken."""
    first, second = frame_text(user, "answer A"), frame_text(user, "answer B")
    return None if first is None or second is None else (first, second)


class LocalServer:
    """A threaded HTTP server on 127.0.0.1 at a free port, started and stopped as a context manager; the OpenAI
    routes live under /v1, the Anthropic ones at the root."""

    httpd: ThreadingHTTPServer
    port: int
    thread: threading.Thread

    def _listen(self, server: type[ThreadingHTTPServer], handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = server(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class JudgeServer(LocalServer):
    def __init__(
        self,
        *,
        policy: str = "better",
        delay_s: float = 0.0,
        faults: Callable[[str, int], Fault | None] | None = None,
        logprobs: bool = True,
        first_marker: str | None = None,
        prefer: str | None = None,
    ) -> None:
        self.policy = policy
        self.first_marker = first_marker
        self.prefer = prefer
        self.delay_s = delay_s
        self.faults = faults
        self.logprobs = logprobs
        self.lock = threading.Lock()
        self.requests: Counter[str] = Counter()  # per prompt (the first user message), follow-ups included
        self.first_requests: Counter[str] = Counter()  # per prompt, initial requests only
        self.bodies: list[dict[str, Any]] = []
        self.keep_bodies = True
        self.total = 0
        self.replied = 0  # 200 replies written out in full: the calls a provider would bill
        self.hold: threading.Event | None = None  # when set to an Event, every request waits for it
        self.auth_headers: list[str] = []
        self.retry_after = "0.2"  # what a 429 says
        self.times: dict[str, list[float]] = {}  # per prompt: arrival of every initial request
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: with Nagle on, the body waits for the client's delayed
            # ACK (~40 ms per response on Linux), a delay of this test server, not of the client under test.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                payload = json.dumps({"total": server.total}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length))
                auth = self.headers.get("authorization") or self.headers.get("x-api-key") or ""
                status, headers, payload = server.handle(self.path, body, auth)
                if status == -1:  # timeout: hold the connection well past the client's limit
                    time.sleep(3.0)
                    status, headers, payload = 500, {}, b"{}"
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(payload)
                    self.wfile.flush()
                    if status == 200:
                        with server.lock:
                            server.replied += 1

        class Server(ThreadingHTTPServer):
            request_queue_size = 1024  # the default 5 drops SYNs when 64 clients connect at once

            def handle_error(self, request: Any, client_address: Any) -> None:
                # A client killed mid-request (the kill -9 tests) resets its connection: not a server error.
                import sys

                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self._listen(Server, Handler)

    # ---- the judge ----------------------------------------------------------------------------------------

    def decide(self, user: str, allow_tie: bool) -> str:
        if self.first_marker is not None and self.first_marker in (frame_text(user, "task") or ""):
            return "A"
        if self.prefer is not None:
            found = frame_answers(user)
            holds = [self.prefer in a for a in found] if found is not None else [False, False]
            if holds[0] != holds[1]:
                return "A" if holds[0] else "B"
        if self.policy == "first":
            return "A"
        if self.policy == "second":
            return "B"
        answers = frame_answers(user)
        if answers is None:
            return "BROKEN"
        if self.policy == "longer":
            return "A" if len(answers[0]) >= len(answers[1]) else "B"
        a_good, b_good = ("CORRECT" in a for a in answers)
        if a_good == b_good:
            return "tie" if allow_tie else "A"
        return "A" if a_good else "B"

    def graded_label(self, user: str, label: str) -> str:
        """The graded form of a slot label: much better when the other answer contains WRONG (always under the
        `first`/`second` policies), slightly otherwise."""
        if label not in ("A", "B"):
            return "A=B" if label == "tie" else label
        answers = frame_answers(user)
        loser = None if answers is None else answers[1 if label == "A" else 0]
        strong = self.policy in ("first", "second") or (loser is not None and "WRONG" in loser)
        other = "B" if label == "A" else "A"
        return f"{label}{'>>' if strong else '>'}{other}"

    def handle(self, path: str, body: dict[str, Any], auth: str) -> tuple[int, dict[str, str], bytes]:
        anthropic = path.endswith("/messages")
        messages = body["messages"]
        first_user = messages[0]["content"] if anthropic else messages[1]["content"]
        if isinstance(first_user, list):
            first_user = "".join(b.get("text", "") for b in first_user)
        key = hashlib.sha256(first_user.encode()).hexdigest()[:16]
        followup = len(messages) > (1 if anthropic else 2)
        with self.lock:
            self.total += 1
            self.requests[key] += 1
            if not followup:
                self.first_requests[key] += 1
                self.times.setdefault(key, []).append(time.monotonic())
            attempt = self.first_requests[key]
            if self.keep_bodies:
                self.bodies.append(body)
                self.auth_headers.append(auth)
        if self.hold is not None:
            self.hold.wait()
        if self.delay_s:
            time.sleep(self.delay_s)
        fault = self.faults(first_user, attempt) if self.faults and not followup else None
        if fault == "429":
            return 429, {"retry-after": self.retry_after}, b'{"error": {"message": "rate limited"}}'
        if fault == "500":
            return 500, {}, b'{"error": {"message": "server error"}}'
        if fault == "401":
            return 401, {}, b'{"error": {"message": "bad key"}}'
        if fault == "echo400":  # a server or proxy that echoes the request's credentials in its error body
            echo = {"error": {"message": f"invalid request; your key {auth.removeprefix('Bearer ')} is not "
                              "allowed for this model", "request_headers": {"Authorization": auth}}}
            return 400, {}, json.dumps(echo).encode()
        if fault == "timeout":
            return -1, {}, b""
        if fault == "malformed":
            return 200, {}, b"<html>not json"
        # Anthropic's `system` is a string or a list of text blocks (a plain completion, e.g. best of N, sends a string)
        system = (body["system"] if isinstance(body["system"], str) else body["system"][0]["text"]) if anthropic \
            else messages[0]["content"]
        several = listwise_answers(first_user)
        if several is not None:  # best of N: the slot holding CORRECT (`first`: slot 1), or no pick (`garbage`)
            pick = 1 if self.policy == "first" else next(
                (k for k, text in enumerate(several, start=1) if "CORRECT" in text), 1)
            text = "All of them have merit." if fault == "garbage" else f"Best answer: {pick}"
            return 200, {}, self._text_reply(anthropic, body, text, (len(system) + len(first_user)) // 4)
        allow_tie = "or tie" in system or '"tie"' in system
        label = self.decide(first_user, allow_tie)
        graded = ">>" in system  # the prompt asks for A>>B ... B>>A
        key_name = "verdict" if graded else "winner"
        if graded:
            label = self.graded_label(first_user, label)
        structured = ("response_format" in body or "tools" in body) and not followup
        garbage = fault in ("garbage", "garbage_always") or (
            followup and self.faults is not None and self.faults(first_user, 0) == "garbage_always"
        )
        if garbage:
            text = "I think both answers have merit. Verdict: A is my pick"
        elif followup:
            text = label
        elif structured:
            text = json.dumps({key_name: label, "reason": "picked"})
        else:
            text = f"Verdict: {label}"
        usage_in = (len(system) + len(first_user)) // 4
        if anthropic:
            content: list[dict[str, Any]]
            if structured and not garbage:
                content = [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": body["tools"][0]["name"],
                        "input": {key_name: label, "reason": "picked"},
                    }
                ]
            else:
                content = [{"type": "text", "text": text}]
            payload = {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": content,
                "stop_reason": "end_turn",
                "usage": {
                    "input_tokens": usage_in - len(system) // 4,
                    "output_tokens": 5,
                    "cache_read_input_tokens": len(system) // 4,
                    "cache_creation_input_tokens": 0,
                },
            }
        else:
            choice: dict[str, Any] = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
            if body.get("logprobs") and self.logprobs:
                choice["logprobs"] = {"content": self._logprobs(text, label)}
            payload = {
                "id": "c1",
                "object": "chat.completion",
                "created": 0,  # `created` and `model` are always sent by the real API
                "model": body.get("model", ""),
                "choices": [choice],
                "usage": {
                    "prompt_tokens": usage_in,
                    "completion_tokens": 5,
                    "total_tokens": usage_in + 5,  # always sent by the real API (some clients require it)
                    "prompt_tokens_details": {"cached_tokens": len(system) // 4},
                },
            }
        return 200, {}, json.dumps(payload).encode()

    @staticmethod
    def _text_reply(anthropic: bool, body: dict[str, Any], text: str, usage_in: int) -> bytes:
        """A plain text reply in the route's wire format, with usage."""
        if anthropic:
            return json.dumps({"id": "msg_1", "type": "message", "role": "assistant",
                               "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                               "usage": {"input_tokens": usage_in, "output_tokens": 5}}).encode()
        return json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": body.get("model", ""),
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                        "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": usage_in, "completion_tokens": 5,
                                     "total_tokens": usage_in + 5}}).encode()

    @staticmethod
    def _logprobs(text: str, label: str) -> list[dict[str, Any]]:
        # Split the text so the label is a token of its own; P(label) = 0.8, the other slot 0.2.
        idx = text.rfind(label) if label in ("A", "B", "tie") else -1
        pieces = [text] if idx < 0 else [text[:idx], label, text[idx + len(label) :]]
        other = "B" if label == "A" else "A"
        out = []
        for piece in pieces:
            if not piece:
                continue
            if piece == label:
                tops = [
                    {"token": label, "logprob": -0.2231435513},
                    {"token": other, "logprob": -1.6094379124},
                ]
                out.append({"token": piece, "logprob": -0.2231435513, "top_logprobs": tops})
            else:
                out.append({"token": piece, "logprob": 0.0, "top_logprobs": [{"token": piece, "logprob": 0.0}]})
        return out


def main() -> None:
    """Serve until killed (benchmarks run the server in its own process): prints the port on stdout."""
    import argparse
    import sys

    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--policy", default="better")
    args = parser.parse_args()
    server = JudgeServer(policy=args.policy, delay_s=args.delay)
    server.keep_bodies = False
    print(server.port, flush=True)
    sys.stdout.close()
    server.httpd.serve_forever()


if __name__ == "__main__":
    main()
