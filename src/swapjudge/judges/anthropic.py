"""Anthropic Messages API backend. The shared prefix (rubric, instructions) is the system block with a
`cache_control` breakpoint, so every call after the first reads it from the prompt cache; a structured verdict
comes through a forced tool call whose input schema is the verdict schema."""

from __future__ import annotations

import json
import time
from typing import Any

from swapjudge.config import JudgeConfig
from swapjudge.judges._http import HttpClient, api_key, require_http_client
from swapjudge.judges.base import JudgeReply, JudgeRequest, TransientJudgeError
from swapjudge.judges.prompts import followup_prompt, parse_followup, parse_reply, verdict_schema

SUPPORTS_STRUCTURED = True
# Keys under `judge:` this backend reads beyond the common ones (JudgeConfig's fields).
OPTIONS: frozenset[str] = frozenset()
DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
TOOL_NAME = "record_verdict"


def default_max_tokens(request: JudgeRequest) -> int:
    return 1024 if request.chain_of_thought else 256


class AnthropicJudge:
    def __init__(
        self,
        *,
        name: str,
        model: str,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout_s: float = 60.0,
        max_connections: int = 64,
    ) -> None:
        require_http_client("anthropic")
        self.name = name
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        headers = {"anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        self._client = HttpClient(
            base_url=base_url,
            headers=headers,
            timeout_s=timeout_s,
            concurrency=max_connections,
        )

    @classmethod
    def from_config(cls, cfg: JudgeConfig) -> AnthropicJudge:
        base_url = cfg.base_url or DEFAULT_BASE_URL
        key = api_key(cfg.api_key_env or "ANTHROPIC_API_KEY", required=base_url == DEFAULT_BASE_URL)
        assert cfg.model is not None
        return cls(
            name=cfg.judge_name,
            model=cfg.model,
            base_url=base_url,
            api_key=key,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            timeout_s=cfg.timeout_s,
            max_connections=cfg.max_concurrency,
        )

    def settings(self, request: JudgeRequest) -> dict[str, Any]:
        return {
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens or default_max_tokens(request),
            "structured": request.structured,
        }

    def _payload(self, request: JudgeRequest, messages: list[dict[str, Any]], *, followup: bool) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "max_tokens": 8 if followup else (self.max_tokens or default_max_tokens(request)),
            "temperature": self.temperature,
            "system": [{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}],
            "messages": messages,
        }
        if request.structured and not followup:
            payload["tools"] = [
                {
                    "name": TOOL_NAME,
                    "description": "Record the verdict of this comparison.",
                    "input_schema": verdict_schema(request),
                }
            ]
            payload["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        return payload

    async def _complete(self, payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        body = await self._client.post_json("v1/messages", payload, "anthropic")
        text, usage = _text_and_usage(body)
        if text is None:
            raise TransientJudgeError("anthropic: malformed reply (no content list)")
        return text, usage

    @staticmethod
    def _tokens(usage: dict[str, Any]) -> tuple[int, int, int, int]:
        read = int(usage.get("cache_read_input_tokens") or 0)
        write = int(usage.get("cache_creation_input_tokens") or 0)
        # Anthropic's input_tokens excludes cache reads and writes; report the total prompt size.
        return (
            int(usage.get("input_tokens") or 0) + read + write,
            int(usage.get("output_tokens") or 0),
            read,
            write,
        )

    async def judge(self, request: JudgeRequest) -> JudgeReply:
        start = time.perf_counter()
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": request.user}]}]
        text, usage = await self._complete(self._payload(request, messages, followup=False))
        parsed = parse_reply(text, request)
        in_tok, out_tok, read, write = self._tokens(usage)
        raw = text
        if parsed.verdict is None:
            messages += [
                {"role": "assistant", "content": [{"type": "text", "text": text or "(no answer)"}]},
                {"role": "user", "content": [{"type": "text", "text": followup_prompt(request)}]},
            ]
            text2, usage2 = await self._complete(self._payload(request, messages, followup=True))
            parsed = parse_followup(text2, request)
            raw = f"{text}\n\n[follow-up]\n{text2}"
            i2, o2, r2, w2 = self._tokens(usage2)
            in_tok, out_tok, read, write = in_tok + i2, out_tok + o2, read + r2, write + w2
        return JudgeReply(
            verdict=parsed.verdict,
            raw=raw,
            latency_s=time.perf_counter() - start,
            input_tokens=in_tok if usage else None,
            output_tokens=out_tok if usage else None,
            cached_input_tokens=read if usage else None,
            cache_write_tokens=write if usage else None,
            settings=self.settings(request),
        )

    # ---- the batch path (runner/batch): the same request params, the same parser, one request per call ----

    def request_body(self, request: JudgeRequest) -> dict[str, Any]:
        """The Messages params of a call's first request, exactly as `judge` sends them."""
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": request.user}]}]
        return self._payload(request, messages, followup=False)

    def reply_from_body(self, body: dict[str, Any], request: JudgeRequest) -> JudgeReply:
        """A JudgeReply from a Messages response (a batch's `succeeded` result), parsed as `judge` parses it.
        A batch has no follow-up turn, so an unparsable reply keeps its raw text with verdict None."""
        text, usage = _text_and_usage(body)
        if text is None:
            return JudgeReply(verdict=None, raw=json.dumps(body)[:2000], error="anthropic: malformed batch result",
                              settings=self.settings(request))
        parsed = parse_reply(text, request)
        in_tok, out_tok, read, write = self._tokens(usage)
        return JudgeReply(
            verdict=parsed.verdict,
            raw=text,
            input_tokens=in_tok if usage else None,
            output_tokens=out_tok if usage else None,
            cached_input_tokens=read if usage else None,
            cache_write_tokens=write if usage else None,
            settings=self.settings(request),
        )

    async def aclose(self) -> None:
        await self._client.aclose()


def _text_and_usage(body: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The reply text (a forced tool call's input as JSON text) and the usage of a Messages response."""
    content = body.get("content")
    if not isinstance(content, list):
        return None, {}
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_use" and block.get("name") == TOOL_NAME:
            # The tool input is the structured verdict; keep it as JSON text so one parser reads it.
            parts.append(json.dumps(block.get("input"), ensure_ascii=False))
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    raw_usage = body.get("usage")
    return "".join(parts), raw_usage if isinstance(raw_usage, dict) else {}


def from_config(cfg: JudgeConfig) -> AnthropicJudge:
    return AnthropicJudge.from_config(cfg)
