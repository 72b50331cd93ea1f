"""Plumbing shared by the HTTP backends: keys from the environment, status classification, Retry-After."""

from __future__ import annotations

import contextlib
import email.utils
import json
import os
import ssl
import time
from collections.abc import AsyncGenerator, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from swapjudge.errors import ConfigError
from swapjudge.judges.base import FatalJudgeError, PermanentJudgeError, TransientJudgeError, UnreachableJudgeError
from swapjudge.redact import redact, redact_url, register_secret

if TYPE_CHECKING:
    import aiohttp


def require_http_client(backend: str) -> None:
    """Fail with the install line when the HTTP client library is missing (it comes with the backend's extra)."""
    import importlib.util

    if importlib.util.find_spec("aiohttp") is None:
        raise ConfigError(f"backend {backend!r} needs aiohttp: pip install 'swapjudge[{backend}]'")


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


@dataclass(frozen=True)
class Reply:
    """What came back for one request: status, headers, the whole body, and the path that was asked for."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    path: str

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


def check_response(reply: Reply, backend: str, auth_hint: str = "") -> dict[str, Any]:
    """Raise the right error class for a failed reply; return the JSON body of a good one. `auth_hint` is said
    when the server refuses the key (e.g. which variable a key for this server is read from)."""
    status = reply.status
    if status == 429 or status == 408 or status == 409 or status >= 500:
        raise TransientJudgeError(f"{backend}: HTTP {status}", retry_after=retry_after(reply.headers), status=status)
    if status in (401, 403):
        hint = f"; {auth_hint}" if auth_hint else ""
        raise FatalJudgeError(f"{backend}: HTTP {status} (authentication refused; check the API key variable{hint})")
    if status == 404:
        raise FatalJudgeError(
            f"{backend}: HTTP 404 at {reply.path} (wrong base_url or model?): {_short(reply.text)}"
        )
    if status >= 400:
        raise PermanentJudgeError(f"{backend}: HTTP {status}: {_short(reply.text)}")
    try:
        body = json.loads(reply.body)
    except ValueError:
        raise TransientJudgeError(f"{backend}: malformed reply (not JSON)", status=status) from None
    if not isinstance(body, dict):
        raise TransientJudgeError(f"{backend}: malformed reply (not a JSON object)", status=status)
    return body


def connect_cause(err: BaseException) -> str:
    """Why a connection could not be made, in words: refused, no such host, or the library's own text. The
    OS error sits somewhere in the exception's chain or in its `os_error`."""
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
        todo += [e.__cause__, e.__context__, getattr(e, "os_error", None), *getattr(e, "exceptions", ())]
    lowered = " ".join(str(e) for e in seen).lower()
    if "refused" in lowered:
        return "connection refused"
    if any(s in lowered for s in ("name or service", "nodename", "name resolution", "getaddrinfo", "no address")):
        return "DNS lookup failed"
    if "unreachable" in lowered:
        return "network unreachable"
    return redact(" ".join(str(err).split())) or type(err).__name__


def _proxy_for(url: str) -> str | None:
    """The proxy the environment names for this URL (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY). Read once per
    client: asking the environment on every request would cost more than the request itself."""
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme) or proxies.get("all")


def _proxy_variable(scheme: str) -> str:
    """The environment variable that names the proxy for `scheme` (as urllib reads them: lower case first)."""
    for name in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY", "all_proxy", "ALL_PROXY"):
        if os.environ.get(name):
            return name
    return f"{scheme.upper()}_PROXY"


def join_url(base_url: str, path: str) -> str:
    """`path` (relative, possibly with its own query) under `base_url`, whose query string stays a query string:
    `http://h/v1?key=k` + `chat/completions` is `http://h/v1/chat/completions?key=k`."""
    import urllib.parse

    if path.startswith(("http://", "https://")):
        return path
    base = urllib.parse.urlsplit(base_url)
    rel_path, _, rel_query = path.partition("?")
    query = "&".join(q for q in (base.query, rel_query) if q)
    return urllib.parse.urlunsplit((base.scheme, base.netloc, base.path.rstrip("/") + "/" + rel_path.lstrip("/"),
                                    query, ""))


def _tls_context() -> ssl.SSLContext:
    """Certificates from certifi, as the providers' own SDKs verify them (loading the bundle takes ~40 ms, so
    a plain-HTTP local server goes without)."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


class HttpClient:
    """One aiohttp session per judge: a keep-alive connection pool to one base URL, JSON in and out, and the
    transport's failures mapped to the judge errors (a refused connection is `UnreachableJudgeError`, a timeout or
    a dropped connection is transient).

    aiohttp parses HTTP in C; per call it costs about a third of the CPU of the pure-Python stack it replaced,
    which matters when a run keeps 64 calls in flight on one core. The session is made on first use, inside the
    event loop that will run the requests.
    """

    def __init__(self, *, base_url: str, headers: dict[str, str], timeout_s: float, concurrency: int,
                 auth_hint: str = "") -> None:
        self._base_url = base_url.rstrip("/")  # request paths are joined to it (`join_url`)
        self._headers = {"user-agent": "swapjudge", **headers}
        self._timeout_s = timeout_s
        self._concurrency = max(1, concurrency)
        self._proxy = _proxy_for(self._base_url)
        self._auth_hint = auth_hint
        self._session: aiohttp.ClientSession | None = None

    @property
    def base_url(self) -> str:
        """The base URL as it may be shown: any credential in it redacted."""
        return redact_url(self._base_url)

    @property
    def headers(self) -> dict[str, str]:
        """The headers every request carries (the key's among them): for a client of another library (Ray's)."""
        return dict(self._headers)

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            import aiohttp

            connector = aiohttp.TCPConnector(limit=self._concurrency, limit_per_host=self._concurrency,
                                             ssl=_tls_context() if self._base_url.startswith("https:") else False)
            self._session = aiohttp.ClientSession(
                connector=connector, headers=self._headers, timeout=aiohttp.ClientTimeout(total=self._timeout_s),
                skip_auto_headers=("User-Agent",),
            )
        return self._session

    def endpoint(self, path: str) -> str:
        """The URL a request to `path` goes to, credentials and query included: for a client of another library
        (never shown: `base_url` is what may be shown)."""
        return join_url(self._base_url, path)

    def _url(self, path: str) -> str:
        return self.endpoint(path)

    @contextlib.contextmanager
    def _judge_errors(self, backend: str, step: str = "") -> Iterator[None]:
        """The transport's failures as the judge errors the runner acts on: a connection that cannot be made is
        `UnreachableJudgeError`, a timeout or a dropped connection is transient. `step` names the step ("download
        ") in the message."""
        import aiohttp

        try:
            yield
        except TimeoutError:  # aiohttp's own timeouts are TimeoutErrors too
            raise TransientJudgeError(f"{backend}: {step}timed out") from None
        except aiohttp.ClientProxyConnectionError as err:  # the proxy, not the judge's server, is out of reach
            assert self._proxy is not None
            variable = _proxy_variable(self._base_url.partition(":")[0])
            raise UnreachableJudgeError(
                f"cannot reach the proxy {redact_url(self._proxy)} ({connect_cause(err)}), which {variable} names for "
                f"{self.base_url}", url=self.base_url,
                hint=f"is the proxy running? (to reach the server without it, unset {variable} or list the host in "
                     "NO_PROXY)") from None
        except aiohttp.ClientConnectorError as err:
            raise UnreachableJudgeError(f"cannot reach {self.base_url} ({connect_cause(err)})",
                                        url=self.base_url) from None
        except aiohttp.ClientError as err:
            raise TransientJudgeError(f"{backend}: {step or 'connection '}failed ({type(err).__name__})") from None

    async def request(self, method: str, path: str, backend: str, **kwargs: Any) -> Reply:
        """One request, its whole body read. kwargs go to aiohttp (`json`, `data`, `params`, `headers`)."""
        with self._judge_errors(backend):
            async with self._open().request(method, self._url(path), proxy=self._proxy, **kwargs) as response:
                return Reply(response.status, response.headers, await response.read(), response.url.path)

    async def request_json(self, method: str, path: str, backend: str, **kwargs: Any) -> dict[str, Any]:
        """One request whose reply must be a JSON object (`check_response`)."""
        return check_response(await self.request(method, path, backend, **kwargs), backend, self._auth_hint)

    async def post_json(self, path: str, payload: dict[str, Any], backend: str) -> dict[str, Any]:
        return await self.request_json("POST", path, backend, json=payload)

    async def lines(self, path: str, backend: str) -> AsyncGenerator[bytes, None]:
        """The non-blank lines of a GET's body as they arrive (a results file can be large). Any status but 200
        raises through `check_response`."""
        with self._judge_errors(backend, "download "):
            async with self._open().get(self._url(path), proxy=self._proxy) as response:
                if response.status != 200:
                    check_response(Reply(response.status, response.headers, await response.read(),
                                         response.url.path), backend, self._auth_hint)
                pending = bytearray()  # the start of a line whose end has not arrived yet
                async for chunk in response.content.iter_any():
                    pending += chunk
                    end = pending.rfind(b"\n")
                    if end < 0:
                        continue
                    complete, pending = bytes(pending[:end]), pending[end + 1:]
                    for line in complete.split(b"\n"):
                        if line.strip():
                            yield line.rstrip(b"\r")
                if pending.strip():
                    yield bytes(pending).rstrip(b"\r")

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
