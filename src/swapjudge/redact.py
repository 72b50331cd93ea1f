"""Secrets never leave the process: every error text is cleaned before it is stored, exported or printed.

A server or proxy may echo the request's headers in an error body, and with them the API key. The key values
the backends were configured with are removed verbatim, and anything shaped like a credential (a bearer
token, an `sk-...` key, an `x-api-key`/`authorization` value, the user:password or a key in a URL) is removed by
its shape, so a key this process never saw is caught too. A URL is shown by `redact_url`: its credentials
replaced, the rest as it was.

Text bound for a file is cleaned of what cannot be written as UTF-8 too (`unicode_safe`): a reply's JSON may
carry a lone surrogate (`\\udced`), which no UTF-8 encoder writes.
"""

from __future__ import annotations

import re
import urllib.parse

REDACTED = "[redacted]"
_MIN_SECRET = 8  # shorter "keys" (e.g. a dummy "x" for a local server) would blank out ordinary words

_secrets: set[str] = set()

_SHAPES = (
    # Authorization: Bearer <token>
    re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=\-]{4,}"),
    # a header or field named like a key, then its value: x-api-key: ..., "api_key": "...", authorization=...
    re.compile(r"(?i)((?:x-api-key|api[-_]?key|authorization|access[-_]?token)[\"']?\s*[:=]\s*[\"']?)"
               r"(?!bearer\s)[^\s\"',;}]{4,}"),
    # provider key formats: sk-..., sk-ant-..., sk-proj-...
    re.compile(r"()\bsk-[A-Za-z0-9_\-]{8,}"),
    # the user:password (or a token as the user) of a URL: https://user:secret@host
    re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]*://)[^\s/?#@]+(?=@)"),
    # a key in a URL's query: ?key=..., &token=...
    re.compile(r"(?i)([?&][a-z0-9_\-]*(?:key|token|secret|passw(?:or)?d|pwd|auth|sig|signature|credential|code)"
               r"[a-z0-9_\-]*=)[^&#\s\"']+"),
)
# Query parameters whose value `redact_url` treats as a secret (anything else, e.g. `api-version`, is kept).
_SECRET_PARAM = re.compile(r"(?i)key|token|secret|passw(?:or)?d|pwd|auth|sig|signature|credential|code")
_SURROGATE = re.compile("[\ud800-\udfff]")


def register_secret(value: str | None) -> None:
    """Remember a configured key so that no error text carries it."""
    if value and len(value) >= _MIN_SECRET:
        _secrets.add(value)


def redact(text: str) -> str:
    """`text` with every registered key and every credential-shaped string replaced by [redacted]."""
    for secret in sorted(_secrets, key=len, reverse=True):  # longest first: a key containing another
        text = text.replace(secret, REDACTED)
    for shape in _SHAPES:
        text = shape.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def url_secrets(url: str) -> list[str]:
    """The credentials a URL carries: its user and password, and the values of its secret-named query keys."""
    parts = urllib.parse.urlsplit(url)
    found = [v for v in (parts.username, parts.password) if v]
    found += [v for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True) if _SECRET_PARAM.search(k)]
    return [v for v in found if v]


def _secret_field(field: str) -> bool:
    name, _, value = field.partition("=")
    return bool(value) and bool(_SECRET_PARAM.search(urllib.parse.unquote_plus(name)))


def redact_url(url: str) -> str:
    """`url` as it may be shown or stored: user:password and the values of secret-named query keys replaced by
    [redacted], everything else (scheme, host, port, path, other query keys) exactly as given. A URL that
    carries no credential comes back unchanged."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = REDACTED + "@" + netloc.rpartition("@")[2]
    query = "&".join(f"{field.partition('=')[0]}={REDACTED}" if _secret_field(field) else field
                     for field in parts.query.split("&")) if parts.query else ""
    if (netloc, query) == (parts.netloc, parts.query):
        return url
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def unicode_safe(text: str) -> str:
    """`text` with every lone surrogate (a code point a UTF-8 file cannot hold) replaced by U+FFFD, the
    replacement character; any other text comes back as it is."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub("\ufffd", text)
