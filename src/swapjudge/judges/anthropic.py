"""Anthropic Messages API backend. The shared prefix (rubric, instructions) is the system block with a
`cache_control` breakpoint, so every call after the first reads it from the prompt cache; a structured verdict
comes through a forced tool call whose input schema is the verdict schema. Its batch wire format is
`anthropic_batch`, on a client from the same `PROVIDER`."""

from __future__ import annotations

import json
from typing import Any

from swapjudge.config import JudgeConfig
from swapjudge.judges.base import JudgeRequest
from swapjudge.judges.chat import ChatJudge, Provider, Read, Usage
from swapjudge.judges.prompts import followup_prompt, verdict_schema

SUPPORTS_STRUCTURED = True
# Keys under `judge:` this backend reads beyond the common ones (JudgeConfig's fields).
OPTIONS: frozenset[str] = frozenset()
DEFAULT_BASE_URL = "https://api.anthropic.com"
KEY_ENV = "ANTHROPIC_API_KEY"  # where the key is read from unless `api_key_env` names another variable
API_VERSION = "2023-06-01"
TOOL_NAME = "record_verdict"
PROVIDER = Provider("anthropic", DEFAULT_BASE_URL, KEY_ENV,
                    lambda key: {"anthropic-version": API_VERSION, **({"x-api-key": key} if key else {})})


def _text(content: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}]


class AnthropicJudge(ChatJudge):
    provider = PROVIDER
    path = "v1/messages"
    malformed = "no content list"

    def default_max_tokens(self, request: JudgeRequest) -> int:
        return 1024 if request.chain_of_thought else 256

    def opening(self, request: JudgeRequest) -> list[dict[str, Any]]:
        return [{"role": "user", "content": _text(request.user)}]

    def followup(self, text: str, request: JudgeRequest) -> list[dict[str, Any]]:
        return [{"role": "assistant", "content": _text(text or "(no answer)")},
                {"role": "user", "content": _text(followup_prompt(request))}]

    def payload(self, request: JudgeRequest, messages: list[dict[str, Any]], *, followup: bool) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "max_tokens": 8 if followup else (self.max_tokens or self.default_max_tokens(request)),
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

    def completion_payload(self, system: str, user: str, max_tokens: int) -> dict[str, Any]:
        return {"model": self.model, "temperature": self.temperature, "max_tokens": max_tokens, "system": system,
                "messages": [{"role": "user", "content": user}]}

    def read(self, body: dict[str, Any]) -> Read:
        """The reply text (a forced tool call's input as JSON text) and the usage of a Messages response."""
        content = body.get("content")
        if not isinstance(content, list):
            return Read(None)
        parts: list[str] = []
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and block.get("name") == TOOL_NAME:
                # The tool input is the structured verdict; keep it as JSON text so one parser reads it.
                parts.append(json.dumps(block.get("input"), ensure_ascii=False))
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
        usage = body.get("usage")
        if not isinstance(usage, dict) or not usage:
            return Read("".join(parts))
        read = int(usage.get("cache_read_input_tokens") or 0)
        write = int(usage.get("cache_creation_input_tokens") or 0)
        # Anthropic's input_tokens excludes cache reads and writes; report the total prompt size.
        return Read("".join(parts), Usage(int(usage.get("input_tokens") or 0) + read + write,
                                          int(usage.get("output_tokens") or 0), read, write))


def from_config(cfg: JudgeConfig) -> AnthropicJudge:
    return AnthropicJudge(cfg, PROVIDER.client(cfg))
