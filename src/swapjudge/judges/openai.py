"""OpenAI Chat Completions backend, for OpenAI itself and any compatible server (`base_url`: vLLM, Ollama,
llama.cpp's server, LM Studio). JSON-schema verdicts where supported; token log-probabilities recorded as the
verdict's probabilities when the server returns them; temperature pinned (0 by default)."""

from __future__ import annotations

import json
import math
import time
from typing import Any

from swapjudge.config import JudgeConfig
from swapjudge.judges._http import HttpClient, api_key, require_http_client
from swapjudge.judges.base import JudgeReply, JudgeRequest, TransientJudgeError
from swapjudge.judges.prompts import ParsedVerdict, followup_prompt, parse_followup, parse_reply, verdict_schema

SUPPORTS_STRUCTURED = True
# Keys under `judge:` this backend reads beyond the common ones (JudgeConfig's fields).
OPTIONS = frozenset({"extra_body"})
DEFAULT_BASE_URL = "https://api.openai.com/v1"


def default_max_tokens(request: JudgeRequest) -> int:
    if request.chain_of_thought:
        return 1024
    return 200 if request.structured else 16


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


class OpenAIJudge:
    def __init__(
        self,
        *,
        name: str,
        model: str,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        structured: bool = True,
        logprobs: bool = False,
        timeout_s: float = 60.0,
        max_connections: int = 64,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        require_http_client("openai")
        self.name = name
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.structured = structured
        self.logprobs = logprobs
        self.extra_body = dict(extra_body or {})
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = HttpClient(
            base_url=base_url,
            headers=headers,
            timeout_s=timeout_s,
            concurrency=max_connections,
        )

    @classmethod
    def from_config(cls, cfg: JudgeConfig) -> OpenAIJudge:
        base_url = cfg.base_url or DEFAULT_BASE_URL
        # A self-hosted compatible server usually needs no key; OpenAI itself always does.
        key = api_key(cfg.api_key_env or "OPENAI_API_KEY", required=base_url == DEFAULT_BASE_URL)
        assert cfg.model is not None
        return cls(
            name=cfg.judge_name,
            model=cfg.model,
            base_url=base_url,
            api_key=key,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            structured=cfg.structured_output,
            logprobs=cfg.logprobs,
            timeout_s=cfg.timeout_s,
            max_connections=cfg.max_concurrency,
            extra_body=cfg.extra().get("extra_body"),
        )

    def settings(self, request: JudgeRequest) -> dict[str, Any]:
        return {
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens or default_max_tokens(request),
            "structured": request.structured,
            "logprobs": self.logprobs,
        }

    def _payload(self, messages: list[dict[str, str]], request: JudgeRequest, *, followup: bool) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": 8 if followup else (self.max_tokens or default_max_tokens(request)),
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

    async def _complete(self, payload: dict[str, Any]) -> tuple[str, dict[str, Any], Any]:
        body = await self._client.post_json("chat/completions", payload, "openai")
        try:
            choice = body["choices"][0]
            content = choice["message"].get("content") or ""
            if not isinstance(content, str):
                raise TypeError
        except (KeyError, IndexError, TypeError, AttributeError):
            raise TransientJudgeError("openai: malformed reply (no choices[0].message.content)") from None
        raw_usage = body.get("usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        return content, usage, choice.get("logprobs")

    async def judge(self, request: JudgeRequest) -> JudgeReply:
        start = time.perf_counter()
        messages = [{"role": "system", "content": request.system}, {"role": "user", "content": request.user}]
        text, usage, logprobs = await self._complete(self._payload(messages, request, followup=False))
        parsed: ParsedVerdict = parse_reply(text, request)
        raw = text
        in_tok = int(usage.get("prompt_tokens") or 0)
        out_tok = int(usage.get("completion_tokens") or 0)
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        if parsed.verdict is None:
            # One follow-up asking only for the label; still unparsable: verdict None, raw text kept.
            messages += [
                {"role": "assistant", "content": text},
                {"role": "user", "content": followup_prompt(request)},
            ]
            text2, usage2, logprobs = await self._complete(self._payload(messages, request, followup=True))
            parsed = parse_followup(text2, request)
            raw = f"{text}\n\n[follow-up]\n{text2}"
            in_tok += int(usage2.get("prompt_tokens") or 0)
            out_tok += int(usage2.get("completion_tokens") or 0)
            cached += int((usage2.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
            text = text2
        probs = label_probabilities(logprobs, parsed.span, request) if self.logprobs else None
        return JudgeReply(
            verdict=parsed.verdict,
            raw=raw,
            latency_s=time.perf_counter() - start,
            input_tokens=in_tok if usage else None,
            output_tokens=out_tok if usage else None,
            cached_input_tokens=cached if usage else None,
            probabilities=probs,
            settings=self.settings(request),
        )

    # ---- the batch path (runner/batch): the same request body, the same parser, one request per call ----

    def request_body(self, request: JudgeRequest) -> dict[str, Any]:
        """The Chat Completions body of a call's first request, exactly as `judge` sends it."""
        messages = [{"role": "system", "content": request.system}, {"role": "user", "content": request.user}]
        return self._payload(messages, request, followup=False)

    def reply_from_body(self, body: dict[str, Any], request: JudgeRequest) -> JudgeReply:
        """A JudgeReply from a Chat Completions response body (a batch result): parsed as `judge` parses it. A
        batch has no follow-up turn, so an unparsable reply keeps its raw text with verdict None."""
        try:
            choice = body["choices"][0]
            text = choice["message"].get("content") or ""
            if not isinstance(text, str):
                raise TypeError
        except (KeyError, IndexError, TypeError, AttributeError):
            return JudgeReply(verdict=None, raw=json.dumps(body)[:2000], error="openai: malformed batch result",
                              settings=self.settings(request))
        parsed = parse_reply(text, request)
        raw_usage = body.get("usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        probs = label_probabilities(choice.get("logprobs"), parsed.span, request) if self.logprobs else None
        return JudgeReply(
            verdict=parsed.verdict,
            raw=text,
            input_tokens=int(usage.get("prompt_tokens") or 0) if usage else None,
            output_tokens=int(usage.get("completion_tokens") or 0) if usage else None,
            cached_input_tokens=cached if usage else None,
            probabilities=probs,
            settings=self.settings(request),
        )

    async def aclose(self) -> None:
        await self._client.aclose()


def from_config(cfg: JudgeConfig) -> OpenAIJudge:
    return OpenAIJudge.from_config(cfg)
