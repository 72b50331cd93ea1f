"""Plumbing shared by the HTTP backends: keys from the environment, status classification, Retry-After."""

from __future__ import annotations

import email.utils
import json
import os
import ssl
import time
from typing import Any

from swapjudge.errors import ConfigError
from swapjudge.judges.base import FatalJudgeError, PermanentJudgeError, TransientJudgeError, UnreachableJudgeError
from swapjudge.redact import redact, register_secret

try:
    import httpx
except ImportError:  # pragma: no cover - depends on the install
    httpx = None  # type: ignore[assignment]


def require_httpx(backend: str) -> None:
    if httpx is None:
        raise ConfigError(f"backend {backend!r} needs httpx: pip install 'swapjudge[{backend}]'")


def api_key(env_name: str, *, required: bool) -> str | None:
    """The key from the environment. Only the variable's *name* ever appears in a message."""
    value = os.environ.get(env_name)
    register_secret(value)
    if not value and required:
        raise ConfigError(f"set the environment variable {env_name} (the API key is read only from there)")
    return value or None


def retry_after(headers: Any) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


def _short(text: str, limit: int = 200) -> str:
    text = redact(" ".join(text.split()))  # an error body may echo the request's headers, key included
    return text if len(text) <= limit else text[:limit] + "..."


def check_response(response: httpx.Response, backend: str) -> dict[str, Any]:
    """Raise the right error class for a failed response; return the JSON body of a good one."""
    status = response.status_code
    if status == 429 or status == 408 or status == 409 or status >= 500:
        raise TransientJudgeError(f"{backend}: HTTP {status}", retry_after=retry_after(response.headers), status=status)
    if status in (401, 403):
        raise FatalJudgeError(f"{backend}: HTTP {status} (authentication refused; check the API key variable)")
    if status == 404:
        raise FatalJudgeError(
            f"{backend}: HTTP 404 at {response.request.url.path} (wrong base_url or model?): {_short(response.text)}"
        )
    if status >= 400:
        raise PermanentJudgeError(f"{backend}: HTTP {status}: {_short(response.text)}")
    try:
        body = response.json()
    except ValueError:
        raise TransientJudgeError(f"{backend}: malformed reply (not JSON)", status=status) from None
    if not isinstance(body, dict):
        raise TransientJudgeError(f"{backend}: malformed reply (not a JSON object)", status=status)
    return body


def connect_cause(err: BaseException) -> str:
    """Why a connection could not be made, in words: refused, no such host, or the library's own text. The
    OS error sits somewhere in the exception's chain (httpcore wraps it, anyio wraps it again)."""
    import errno
    import socket

    seen: list[BaseException] = []
    todo: list[BaseException | None] = [err]
    while todo:
        e = todo.pop()
        if e is None or any(e is s for s in seen):
            continue
        seen.append(e)
        if isinstance(e, socket.gaierror):
            return "DNS lookup failed"
        if isinstance(e, ConnectionRefusedError) or getattr(e, "errno", None) == errno.ECONNREFUSED:
            return "connection refused"
        todo += [e.__cause__, e.__context__, *getattr(e, "exceptions", ())]
    lowered = " ".join(str(e) for e in seen).lower()
    if "refused" in lowered:
        return "connection refused"
    if any(s in lowered for s in ("name or service", "nodename", "name resolution", "getaddrinfo", "no address")):
        return "DNS lookup failed"
    if "unreachable" in lowered:
        return "network unreachable"
    return redact(" ".join(str(err).split())) or type(err).__name__


SHARD_CONNECTIONS = 4


def _proxy_for(url: str) -> str | None:
    """The proxy the environment names for this URL (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY), as
    `AsyncClient` would use it; the transports below do not read the environment themselves."""
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme) or proxies.get("all")


class ClientPool:
    """httpx transports (connection pools) sharing the load, each request on the least busy one.

    Two costs dominate a judge call's client CPU at high concurrency, and both are avoided here: httpcore's
    pool scans every connection for every queued request (cost grows with the square of the concurrency), so
    the pool is split into shards of 4 connections; and the `AsyncClient` layer (cookie jar, auth, redirects,
    URL merging) costs about as much again per request and does nothing for a JSON POST to a fixed URL, so
    requests go straight to `httpx.AsyncHTTPTransport`.
    """

    def __init__(self, *, base_url: str, headers: dict[str, str], timeout_s: float, concurrency: int) -> None:
        shards = max(1, -(-concurrency // SHARD_CONNECTIONS))
        # Requests go to the least busy shard, so no shard ever has more than SHARD_CONNECTIONS in flight.
        per_shard = min(concurrency, SHARD_CONNECTIONS)
        limits = httpx.Limits(max_connections=per_shard, max_keepalive_connections=per_shard)
        # One TLS context for all shards: loading the CA bundle costs ~50 ms per pool.
        import certifi

        verify = ssl.create_default_context(cafile=certifi.where())
        proxy = _proxy_for(base_url)
        self._transports = [httpx.AsyncHTTPTransport(verify=verify, limits=limits, proxy=proxy) for _ in range(shards)]
        self._busy = [0] * shards
        self._base_url = base_url.rstrip("/") + "/"  # request paths are joined to it
        self._urls: dict[str, httpx.URL] = {}
        self._headers = {"content-type": "application/json", "user-agent": "swapjudge", **headers}
        self._timeout = httpx.Timeout(timeout_s).as_dict()

    async def post_json(self, path: str, payload: dict[str, Any], backend: str) -> dict[str, Any]:
        url = self._urls.get(path)
        if url is None:
            url = self._urls[path] = httpx.URL(self._base_url + path.lstrip("/"))
        request = httpx.Request(
            "POST",
            url,
            headers=self._headers,
            content=json.dumps(payload).encode(),
            extensions={"timeout": self._timeout},
        )
        i = self._busy.index(min(self._busy))
        self._busy[i] += 1
        try:
            response = await self._transports[i].handle_async_request(request)
            try:
                await response.aread()
            finally:
                await response.aclose()
        except httpx.TimeoutException:
            raise TransientJudgeError(f"{backend}: timed out") from None
        except httpx.ConnectError as err:
            raise UnreachableJudgeError(
                f"cannot reach {self._base_url.rstrip('/')} ({connect_cause(err)})",
                url=self._base_url.rstrip("/"),
            ) from None
        except httpx.TransportError as err:
            raise TransientJudgeError(f"{backend}: connection failed ({type(err).__name__})") from None
        finally:
            self._busy[i] -= 1
        response.request = request
        return check_response(response, backend)

    async def aclose(self) -> None:
        for transport in self._transports:
            await transport.aclose()
