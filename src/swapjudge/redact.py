"""Secrets never leave the process: every error text is cleaned before it is stored, exported or printed.

A server or proxy may echo the request's headers in an error body, and with them the API key. The key values
the backends were configured with are removed verbatim, and anything shaped like a credential (a bearer
token, an `sk-...` key, an `x-api-key`/`authorization` value) is removed by its shape, so a key this process
never saw is caught too.

Text bound for a file is cleaned of what cannot be written as UTF-8 too (`unicode_safe`): a reply's JSON may
carry a lone surrogate (`\\udced`), which no UTF-8 encoder writes.
"""

from __future__ import annotations

import re

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
)
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


def unicode_safe(text: str) -> str:
    """`text` with every lone surrogate (a code point a UTF-8 file cannot hold) replaced by U+FFFD, the
    replacement character; any other text comes back as it is."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub("\ufffd", text)
