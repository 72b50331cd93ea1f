"""The HTTP client under the API judges and the batch clients, against real servers on 127.0.0.1: the proxy the
environment names, a streamed body cut into lines across chunk boundaries, and each failure mapped to the
judge error the runner acts on."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from judge_server import JudgeServer, LocalServer
from swapjudge.judges._http import HttpClient, Reply, check_response
from swapjudge.judges.base import FatalJudgeError, TransientJudgeError, UnreachableJudgeError

PROMPT = {
    "model": "m",
    "messages": [
        {"role": "system", "content": "rubric"},
        {"role": "user", "content": "<task k>\nq\n</task k>\n\n<answer A k>\nCORRECT\n</answer A k>\n\n"
                                    "<answer B k>\nno\n</answer B k>\n\nWhich answer is better?"},
    ],
}


def _client(base_url: str, timeout_s: float = 10.0) -> HttpClient:
    return HttpClient(base_url=base_url, headers={"authorization": "Bearer sk-test"}, timeout_s=timeout_s,
                      concurrency=4)


async def _post(client: HttpClient, path: str = "chat/completions") -> dict[str, Any]:
    try:
        return await client.post_json(path, PROMPT, "openai")
    finally:
        await client.aclose()


class ForwardProxy(LocalServer):
    """A forward HTTP proxy: it receives absolute-URI requests, records them and relays them, proxy-free."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                proxy.seen.append(self.path)
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "proxy-connection")}
                request = urllib.request.Request(self.path, data=body, headers=headers, method="POST")
                opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
                with opener.open(request) as reply:
                    payload = reply.read()
                    self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._listen(ThreadingHTTPServer, Handler)


def test_requests_go_through_the_proxy_the_environment_names(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    with JudgeServer() as judge, ForwardProxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        body = asyncio.run(_post(_client(judge.openai_url)))
        assert body["choices"][0]["message"]["content"]
        assert proxy.seen == [f"{judge.openai_url}/chat/completions"]  # the absolute URI: a proxied request
        assert judge.total == 1
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # bypassed: straight to the judge
        asyncio.run(_post(_client(judge.openai_url)))
        assert len(proxy.seen) == 1 and judge.total == 2


class ChunkedServer(LocalServer):
    """Answers GET /lines with `body` in chunked transfer encoding, cut into pieces of `piece` bytes, and GET
    /status/N with that status."""

    def __init__(self, body: bytes, piece: int) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                if self.path.startswith("/status/"):
                    status = int(self.path.rsplit("/", 1)[1])
                    payload = b'{"error": "no"}'
                    self.send_response(status)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                self.send_response(200)
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for start in range(0, len(body), piece):
                    chunk = body[start:start + piece]
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

        self._listen(ThreadingHTTPServer, Handler)


async def _lines(client: HttpClient, path: str) -> list[bytes]:
    try:
        return [line async for line in client.lines(path, "openai batch")]
    finally:
        await client.aclose()


def test_streamed_lines_survive_chunk_boundaries_and_long_lines() -> None:
    long = json.dumps({"custom_id": "x", "text": "y" * 300_000}).encode()
    body = b'{"a": 1}\n\n' + long + b"\r\n" + b"   \n" + b'{"b": 2}'  # blank lines, CRLF, no final newline
    with ChunkedServer(body, piece=977) as server:
        lines = asyncio.run(_lines(_client(f"http://127.0.0.1:{server.port}"), "lines"))
    assert lines == [b'{"a": 1}', long, b'{"b": 2}']


@pytest.mark.parametrize(("status", "error"), [(404, FatalJudgeError), (500, TransientJudgeError),
                                               (429, TransientJudgeError)])
def test_a_failed_download_raises_the_judge_error_of_its_status(status: int, error: type[Exception]) -> None:
    with ChunkedServer(b"", piece=1) as server, pytest.raises(error, match=f"HTTP {status}"):
        asyncio.run(_lines(_client(f"http://127.0.0.1:{server.port}"), f"status/{status}"))


def test_a_refused_connection_is_unreachable_and_names_the_cause() -> None:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(UnreachableJudgeError, match="connection refused") as err:
        asyncio.run(_post(_client(f"http://127.0.0.1:{port}/v1")))
    assert err.value.url == f"http://127.0.0.1:{port}/v1"
    assert "sk-test" not in str(err.value)


def test_a_server_that_does_not_answer_in_time_is_a_transient_timeout() -> None:
    release = threading.Event()
    with JudgeServer() as judge:
        judge.hold = release
        try:
            with pytest.raises(TransientJudgeError, match="timed out"):
                asyncio.run(_post(_client(judge.openai_url, timeout_s=0.3)))
        finally:
            release.set()


def test_check_response_reads_status_headers_and_body() -> None:
    good = Reply(200, {}, b'{"ok": true}', "/v1/chat/completions")
    assert check_response(good, "openai") == {"ok": True}
    limited = Reply(429, {"retry-after": "2"}, b"", "/v1/chat/completions")
    with pytest.raises(TransientJudgeError) as err:
        check_response(limited, "openai")
    assert err.value.retry_after == 2.0 and err.value.status == 429
    with pytest.raises(FatalJudgeError, match="HTTP 404 at /v1/chat/completions"):
        check_response(Reply(404, {}, b"nope", "/v1/chat/completions"), "openai")
    with pytest.raises(TransientJudgeError, match="not JSON"):
        check_response(Reply(200, {}, b"<html>", "/v1/chat/completions"), "openai")


def test_a_dead_proxy_is_named_as_the_proxy_not_as_the_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP_PROXY names a proxy nothing listens at: the error says the proxy (and the variable that named it) is
    out of reach, not the judge's server, which is up."""
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    with JudgeServer() as judge:
        monkeypatch.setenv("HTTP_PROXY", f"http://user:PROXYPASS-123456@127.0.0.1:{dead}")
        with pytest.raises(UnreachableJudgeError) as err:
            asyncio.run(_post(_client(judge.openai_url)))
        assert judge.total == 0
    said = str(err.value)
    assert said.startswith(f"cannot reach the proxy http://[redacted]@127.0.0.1:{dead} (connection refused)"), said
    assert f"which HTTP_PROXY names for {judge.openai_url}" in said and "PROXYPASS" not in said
    assert "is the proxy running?" in err.value.hint and "NO_PROXY" in err.value.hint


def test_a_dead_proxy_stops_a_run_saying_so(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from runner_helpers import write_config, write_pairs
    from swapjudge.cli import app

    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    write_pairs(tmp_path, 2)
    with JudgeServer() as judge:
        write_config(tmp_path, base_url=judge.openai_url)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{dead}")
        monkeypatch.chdir(tmp_path)
        result = CliRunner().invoke(app, ["run", "run.yaml", "--no-progress"], catch_exceptions=False)
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert f"cannot reach the proxy http://127.0.0.1:{dead}" in lines[0] and "is the proxy running?" in lines[0]
    assert "is the server running?" not in lines[0]


def test_a_query_in_the_base_url_stays_after_the_endpoint_path() -> None:
    from swapjudge.judges._http import join_url

    assert join_url("http://h:1/v1?key=k", "chat/completions") == "http://h:1/v1/chat/completions?key=k"
    assert join_url("http://h/v1/?a=1", "/batches?limit=100") == "http://h/v1/batches?a=1&limit=100"
    assert join_url("http://h/v1", "files/f1/content") == "http://h/v1/files/f1/content"
    assert join_url("http://h/v1?key=k", "https://cdn.example/out.jsonl") == "https://cdn.example/out.jsonl"


def test_the_client_shows_its_base_url_redacted_and_sends_to_the_full_endpoint() -> None:
    client = _client("https://user:PASS-123456789@h.example/v1?key=KEY-123456789&api-version=2")
    assert client.base_url == "https://[redacted]@h.example/v1?key=[redacted]&api-version=2"
    assert (client.endpoint("chat/completions")
            == "https://user:PASS-123456789@h.example/v1/chat/completions?key=KEY-123456789&api-version=2")
