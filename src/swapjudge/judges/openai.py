"""OpenAI Chat Completions backend, for OpenAI itself and any compatible server (`base_url`: vLLM, Ollama,
llama.cpp's server, LM Studio). JSON-schema verdicts where supported; token log-probabilities recorded as the
verdict's probabilities when the server returns them; temperature pinned (0 by default). Its batch wire format
is `openai_batch`, on a client from the same `PROVIDER`."""

from __future__ import annotations

import math
from typing import Any

from swapjudge.config import JudgeConfig
from swapjudge.judges._http import HttpClient
from swapjudge.judges.base import JudgeRequest
from swapjudge.judges.chat import ChatJudge, Provider, Read, Usage
from swapjudge.judges.prompts import ParsedVerdict, followup_prompt, verdict_schema

SUPPORTS_STRUCTURED = True
# Keys under `judge:` this backend reads beyond the common ones (JudgeConfig's fields).
OPTIONS = frozenset({"extra_body"})
DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_ENV = "OPENAI_API_KEY"  # where the key is read from unless `api_key_env` names another variable
PROVIDER = Provider("openai", DEFAULT_BASE_URL, KEY_ENV,
                    lambda key: {"Authorization": f"Bearer {key}"} if key else {})


def label_probabilities(logprobs: Any, span: tuple[int, int] | None, request: JudgeRequest) -> dict[str, float] | None:
    """P(first)/P(second)(/P(tie)) from the top log-probabilities of the token that carries the label."""
    if not span or not isinstance(logprobs, dict) or not isinstance(logprobs.get("content"), list):
        return None
    pos = 0
    for tok in logprobs["content"]:
        text = tok.get("token", "") if isinstance(tok, dict) else ""
        end = pos + len(text)
        if pos <= span[0] < end or (pos == span[0] and text):
            tops = tok.get("top_logprobs") or [{"token": text, "logprob": tok.get("logprob")}]
            probs: dict[str, float] = {"first": 0.0, "second": 0.0}
            if request.allow_tie:
                probs["tie"] = 0.0
            names = {
                request.slot_labels[0].lower(): "first",
                request.slot_labels[1].lower(): "second",
                request.tie_label.lower(): "tie",
            }
            for top in tops:
                key = names.get(str(top.get("token", "")).strip().strip('"').lower())
                lp = top.get("logprob")
                if key in probs and isinstance(lp, int | float):
                    probs[key] += math.exp(lp)
            return {k: round(v, 6) for k, v in probs.items()}
        pos = end
    return None


class OpenAIJudge(ChatJudge):
    provider = PROVIDER
    path = "chat/completions"
    malformed = "no choices[0].message.content"

    def __init__(self, cfg: JudgeConfig, client: HttpClient | None) -> None:
        super().__init__(cfg, client)
        self.logprobs = cfg.logprobs
        self.extra_body: dict[str, Any] = dict(cfg.extra().get("extra_body") or {})

    def default_max_tokens(self, request: JudgeRequest) -> int:
        if request.chain_of_thought:
            return 1024
        return 200 if request.structured else 16

    def settings(self, request: JudgeRequest) -> dict[str, Any]:
        return {**super().settings(request), "logprobs": self.logprobs}

    def opening(self, request: JudgeRequest) -> list[dict[str, Any]]:
        return [{"role": "system", "content": request.system}, {"role": "user", "content": request.user}]

    def followup(self, text: str, request: JudgeRequest) -> list[dict[str, Any]]:
        return [{"role": "assistant", "content": text}, {"role": "user", "content": followup_prompt(request)}]

    def payload(self, request: JudgeRequest, messages: list[dict[str, Any]], *, followup: bool) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": 8 if followup else (self.max_tokens or self.default_max_tokens(request)),
        }
        if request.structured and not followup:
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "strict": True, "schema": verdict_schema(request)},
            }
        if self.logprobs:
            payload["logprobs"] = True
            payload["top_logprobs"] = 5
        payload.update(self.extra_body)
        return payload

    def completion_payload(self, system: str, user: str, max_tokens: int) -> dict[str, Any]:
        return {"model": self.model, "temperature": self.temperature, "max_tokens": max_tokens,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}

    def read(self, body: dict[str, Any]) -> Read:
        try:
            choice = body["choices"][0]
            content = choice["message"].get("content") or ""
            if not isinstance(content, str):
                raise TypeError
        except (KeyError, IndexError, TypeError, AttributeError):
            return Read(None)
        usage = body.get("usage")
        if not isinstance(usage, dict) or not usage:
            return Read(content, None, choice.get("logprobs"))
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        return Read(content, Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                                   cached), choice.get("logprobs"))

    def probabilities(self, read: Read, parsed: ParsedVerdict, request: JudgeRequest) -> dict[str, float] | None:
        return label_probabilities(read.logprobs, parsed.span, request) if self.logprobs else None


def from_config(cfg: JudgeConfig, *, wire_only: bool = False) -> OpenAIJudge:
    """The judge of `cfg`, its client from the provider's one factory; `wire_only`: no client (no key read, no
    connection), for an engine that sends the bodies itself and parses the replies (Ray)."""
    return OpenAIJudge(cfg, None if wire_only else PROVIDER.client(cfg))
