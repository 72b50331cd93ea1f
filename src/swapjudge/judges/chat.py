"""What the two chat APIs' judges share, so each provider module says only what differs (its payloads, where a
reply's text and usage sit, its default URL and key variable).

- `Provider.client`: the one place a provider's HTTP client is set up from a judge configuration (base URL,
  key from the environment, auth headers, timeout, connections). The synchronous judge, the batch client and
  the plain completion all get their client here.
- `ChatJudge`: the call flow. The first request; when its reply has no parsable verdict, one follow-up asking
  only for the label; token counts summed over both. The batch path sends the same first request body and
  parses a batch result as the synchronous reply is parsed (a batch has no follow-up turn). A plain completion
  (system + user text in, text out) goes to the same endpoint with the same client.
"""

from __future__ import annotations

import dataclasses
import json
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from swapjudge.config import JudgeConfig
from swapjudge.judges._http import HttpClient, api_key, require_http_client
from swapjudge.judges.base import Completion, JudgeReply, JudgeRequest, TransientJudgeError, Verdict
from swapjudge.judges.prompts import ParsedVerdict, parse_followup, parse_reply
from swapjudge.redact import register_secret, unicode_safe, url_secrets


@dataclass(frozen=True)
class Provider:
    """A chat API: its name in messages, its default URL, the variable its key is read from by default, and the
    headers that carry a key."""

    name: str
    default_url: str
    key_env: str
    headers: Callable[[str | None], dict[str, str]]

    @property
    def host(self) -> str:
        return str(urllib.parse.urlsplit(self.default_url).hostname)

    def is_home(self, url: str) -> bool:
        """Whether `url` is the provider's own API: HTTPS to its host on the standard port."""
        parts = urllib.parse.urlsplit(url)
        return parts.scheme == "https" and parts.hostname == self.host and parts.port in (None, 443)

    def client(self, cfg: JudgeConfig, *, timeout_s: float | None = None,
               concurrency: int | None = None) -> HttpClient:
        """The HTTP client of a judge configuration (`timeout_s`, `concurrency`: instead of the configured
        ones, e.g. for whole batch files).

        The provider's own variable (OPENAI_API_KEY, ANTHROPIC_API_KEY) is sent only to the provider's own host,
        over HTTPS: a key for any other server is read from the variable `api_key_env` names, so a key meant
        for the provider never reaches a self-hosted or third-party server (or a plain-HTTP connection)."""
        base_url = cfg.base_url or self.default_url
        home = self.is_home(base_url)
        for secret in url_secrets(base_url):  # user:password or a key in the URL: kept out of every message
            register_secret(secret)
        hint = ""
        if cfg.api_key_env:
            key = api_key(cfg.api_key_env, required=home)
        elif home:
            key = api_key(self.key_env, required=True)
        else:
            # A self-hosted compatible server usually needs no key; one that does is given its own variable.
            key = None
            hint = (f"{self.key_env} is sent only to {self.host}: name the variable that holds this server's key "
                    "in judge.api_key_env")
        require_http_client(self.name)
        return HttpClient(base_url=base_url, headers=self.headers(key),
                          timeout_s=cfg.timeout_s if timeout_s is None else timeout_s,
                          concurrency=cfg.max_concurrency if concurrency is None else concurrency, auth_hint=hint)


@dataclass(frozen=True)
class Usage:
    """Token counts of a reply. `cache_write` is None for a provider that does not report cache writes."""

    input: int = 0
    output: int = 0
    cached: int = 0
    cache_write: int | None = None

    def __add__(self, other: Usage) -> Usage:
        write = None if self.cache_write is None and other.cache_write is None else (
            (self.cache_write or 0) + (other.cache_write or 0))
        return Usage(self.input + other.input, self.output + other.output, self.cached + other.cached, write)


@dataclass(frozen=True)
class Read:
    """A response body read: the reply text (None: not the shape the API documents), its usage (None: none
    reported) and the token log-probabilities when the API returns them."""

    text: str | None
    usage: Usage | None = None
    logprobs: Any = None


def _valid_text(read: Read) -> Read:
    """The reply text as it will be stored and parsed: a lone surrogate its JSON carried (`\\udced`, which no
    UTF-8 file can hold) replaced by U+FFFD, so the verdict is parsed from the very text that is stored; a reply
    that no longer parses is stored unparsed (and, on the synchronous path, asked once more for its label)."""
    if read.text is None:
        return read
    text = unicode_safe(read.text)
    return read if text is read.text else dataclasses.replace(read, text=text)


class ChatJudge:
    """The flow of a chat API judge; a provider subclass supplies the hooks below the line."""

    provider: ClassVar[Provider]
    path: ClassVar[str]  # the endpoint, relative to the base URL
    malformed: ClassVar[str]  # what a malformed reply lacks, for its message

    def __init__(self, cfg: JudgeConfig, client: HttpClient | None) -> None:
        """`client` None: the wire format alone (request bodies and the parser, for a batch), no request made and
        no key read."""
        assert cfg.model is not None
        self.name = cfg.judge_name
        self.model = cfg.model
        self.temperature = cfg.temperature
        self.max_tokens = cfg.max_tokens
        self._client = client

    def settings(self, request: JudgeRequest) -> dict[str, Any]:
        return {
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens or self.default_max_tokens(request),
            "structured": request.structured,
        }

    async def _call(self, payload: dict[str, Any]) -> Read:
        assert self._client is not None, "a judge built for its wire format alone makes no request"
        body = await self._client.post_json(self.path, payload, self.provider.name)
        read = _valid_text(self.read(body))
        if read.text is None:
            raise TransientJudgeError(f"{self.provider.name}: malformed reply ({self.malformed})")
        return read

    def _reply(self, verdict: Verdict | None, raw: str, usage: Usage | None, request: JudgeRequest, *,
               probabilities: dict[str, float] | None, latency_s: float = 0.0,
               strength: int | None = None) -> JudgeReply:
        return JudgeReply(
            verdict=verdict,
            raw=raw,
            latency_s=latency_s,
            input_tokens=usage.input if usage else None,
            output_tokens=usage.output if usage else None,
            cached_input_tokens=usage.cached if usage else None,
            cache_write_tokens=usage.cache_write if usage else None,
            probabilities=probabilities,
            settings=self.settings(request),
            strength=strength,
        )

    async def judge(self, request: JudgeRequest) -> JudgeReply:
        start = time.perf_counter()
        messages = self.opening(request)
        first = await self._call(self.payload(request, messages, followup=False))
        assert first.text is not None
        parsed: ParsedVerdict = parse_reply(first.text, request)
        raw, usage, last = first.text, first.usage, first
        if parsed.verdict is None:
            # One follow-up asking only for the label; still unparsable: verdict None, raw text kept.
            messages = messages + self.followup(first.text, request)
            last = await self._call(self.payload(request, messages, followup=True))
            assert last.text is not None
            parsed = parse_followup(last.text, request)
            raw = f"{first.text}\n\n[follow-up]\n{last.text}"
            # token counts are reported when the first reply reported them
            usage = None if usage is None else usage + (last.usage or Usage())
        return self._reply(parsed.verdict, raw, usage, request, probabilities=self.probabilities(last, parsed, request),
                           latency_s=time.perf_counter() - start, strength=parsed.strength)

    async def complete(self, system: str, user: str, *, max_tokens: int, prefix: str = "",
                       choices: Sequence[str] = ()) -> Completion:
        """A plain reply to `system` + `user` (no verdict, no follow-up); `prefix` and `choices` are not read
        here (these APIs give no probabilities over named choices)."""
        start = time.perf_counter()
        read = await self._call(self.completion_body(system, user, max_tokens))
        assert read.text is not None
        usage = read.usage
        return Completion(read.text, time.perf_counter() - start, usage.input if usage else None,
                          usage.output if usage else None)

    # ---- the batch path (runner/batch): the same request body, the same parser, one request per call ----

    def request_body(self, request: JudgeRequest) -> dict[str, Any]:
        """The body of a call's first request, exactly as `judge` sends it."""
        return self.payload(request, self.opening(request), followup=False)

    def reply_from_body(self, body: dict[str, Any], request: JudgeRequest) -> JudgeReply:
        """A JudgeReply from a response body (a batch result), parsed as `judge` parses it. A batch has no
        follow-up turn, so an unparsable reply keeps its raw text with verdict None."""
        read = _valid_text(self.read(body))
        if read.text is None:
            return JudgeReply(verdict=None, raw=json.dumps(body)[:2000],
                              error=f"{self.provider.name}: malformed batch result", settings=self.settings(request))
        parsed = parse_reply(read.text, request)
        return self._reply(parsed.verdict, read.text, read.usage, request,
                           probabilities=self.probabilities(read, parsed, request), strength=parsed.strength)

    def completion_body(self, system: str, user: str, max_tokens: int) -> dict[str, Any]:
        """The body of a plain completion's request, exactly as `complete` sends it (a configured max_tokens wins)."""
        return self.completion_payload(system, user, self.max_tokens or max_tokens)

    def completion_from_body(self, body: dict[str, Any]) -> Completion | None:
        """A plain completion from a response body (a batch result), read as `complete` reads it; None when the
        body is not the shape the API documents."""
        read = _valid_text(self.read(body))
        if read.text is None:
            return None
        usage = read.usage
        return Completion(read.text, 0.0, usage.input if usage else None, usage.output if usage else None)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    # ---- what a provider says ----------------------------------------------------------------------------

    def default_max_tokens(self, request: JudgeRequest) -> int:
        raise NotImplementedError

    def opening(self, request: JudgeRequest) -> list[dict[str, Any]]:
        """The messages of a call's first request."""
        raise NotImplementedError

    def followup(self, text: str, request: JudgeRequest) -> list[dict[str, Any]]:
        """The turns appended for the follow-up: the first reply, then the question for the label alone."""
        raise NotImplementedError

    def payload(self, request: JudgeRequest, messages: list[dict[str, Any]], *, followup: bool) -> dict[str, Any]:
        raise NotImplementedError

    def completion_payload(self, system: str, user: str, max_tokens: int) -> dict[str, Any]:
        raise NotImplementedError

    def read(self, body: dict[str, Any]) -> Read:
        raise NotImplementedError

    def probabilities(self, read: Read, parsed: ParsedVerdict, request: JudgeRequest) -> dict[str, float] | None:
        return None
