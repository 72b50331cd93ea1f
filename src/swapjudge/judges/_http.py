"""Plumbing shared by the HTTP backends: keys from the environment, status classification, Retry-After."""

from __future__ import annotations

import email.utils
import os
import time
from typing import Any

from swapjudge.errors import ConfigError
from swapjudge.judges.base import FatalJudgeError, PermanentJudgeError, TransientJudgeError

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
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def check_response(response: httpx.Response, backend: str) -> dict[str, Any]:
    """Raise the right error class for a failed response; return the JSON body of a good one."""
    status = response.status_code
    if status == 429 or status == 408 or status == 409 or status >= 500:
        raise TransientJudgeError(f"{backend}: HTTP {status}", retry_after=retry_after(response.headers),
                                  status=status)
    if status in (401, 403):
        raise FatalJudgeError(f"{backend}: HTTP {status} (authentication refused; check the API key variable)")
    if status == 404:
        raise FatalJudgeError(f"{backend}: HTTP 404 at {response.request.url.path} (wrong base_url or model?): "
                              f"{_short(response.text)}")
    if status >= 400:
        raise PermanentJudgeError(f"{backend}: HTTP {status}: {_short(response.text)}")
    try:
        body = response.json()
    except ValueError:
        raise TransientJudgeError(f"{backend}: malformed reply (not JSON)", status=status) from None
    if not isinstance(body, dict):
        raise TransientJudgeError(f"{backend}: malformed reply (not a JSON object)", status=status)
    return body


async def post_json(client: httpx.AsyncClient, url: str, payload: dict[str, Any], backend: str
                    ) -> dict[str, Any]:
    try:
        response = await client.post(url, json=payload)
    except httpx.TimeoutException:
        raise TransientJudgeError(f"{backend}: timed out") from None
    except httpx.TransportError as err:
        raise TransientJudgeError(f"{backend}: connection failed ({type(err).__name__})") from None
    return check_response(response, backend)
