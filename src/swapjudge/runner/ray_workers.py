"""What runs on Ray's workers for `engine: ray`: the rows' preprocess and postprocess for each processor, and the
HTTP session the HTTP processor opens. The driver (`runner/ray_engine`) sends this module to the cluster by value,
so it imports nothing of swapjudge: a cluster needs Ray (and vLLM for `processor: vllm`), not swapjudge.

A row carries `sj_index` (which call group) and `sj_body` (the request body the synchronous judge sends, as JSON
text). What comes back is `sj_status` and `sj_reply`: the reply as the server sent it (HTTP), or a Chat Completions
body made of the vLLM engine's output, so the driver parses every reply with the one parser. Carrying the reply as
text keeps the rows of one schema, whatever each reply holds."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from typing import Any

INDEX = "sj_index"
BODY = "sj_body"
STATUS = "sj_status"
REPLY = "sj_reply"
ENGINE_ERROR = "__inference_error__"  # Ray's column for a row the vLLM engine failed (should_continue_on_error)

# Chat Completions keys that vLLM's SamplingParams takes under the same name.
SAMPLING_KEYS = ("temperature", "top_p", "top_k", "min_p", "seed", "stop", "presence_penalty", "frequency_penalty",
                 "repetition_penalty")


# ---- processor http: Ray's HTTP request stage, replies kept as sent -------------------------------------------

def http_preprocess(row: dict[str, Any]) -> dict[str, Any]:
    return {"payload": json.loads(row[BODY])}


def http_postprocess(row: dict[str, Any]) -> dict[str, Any]:
    reply = row["http_response"]
    return {INDEX: row[INDEX], STATUS: int(reply[STATUS]), REPLY: str(reply[REPLY])}


def http_session(timeout_s: float) -> Any:
    """An aiohttp session whose `response.json()` returns the status and the body's text instead of the parsed
    body: Ray's HTTP stage keeps what `.json()` returns and drops the status, and a reply that is not JSON (a
    proxy's error page) would fail the stage's whole batch."""
    import aiohttp

    class Reply(aiohttp.ClientResponse):
        async def json(self, *args: Any, **kwargs: Any) -> Any:
            text = (await self.read()).decode("utf-8", errors="replace")
            return {STATUS: self.status, REPLY: text}

    return aiohttp.ClientSession(response_class=Reply, timeout=aiohttp.ClientTimeout(total=timeout_s),
                                 trust_env=True)


def session_factory(timeout_s: float) -> Callable[[], Any]:
    return functools.partial(http_session, timeout_s)


# ---- processor vllm: Ray's vLLM engine processor ------------------------------------------------------------

def sampling_params(body: dict[str, Any]) -> dict[str, Any]:
    """vLLM's SamplingParams for a Chat Completions body: the same temperature and length, the top log-probabilities
    asked for, and a JSON-schema verdict through vLLM's current structured-outputs API
    (`structured_outputs={"json": schema}`, which Ray turns into `StructuredOutputsParams`)."""
    params: dict[str, Any] = {k: body[k] for k in SAMPLING_KEYS if body.get(k) is not None}
    params.setdefault("temperature", 0.0)
    params["max_tokens"] = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
    if body.get("logprobs"):
        params["logprobs"] = int(body.get("top_logprobs") or 1)
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        params["structured_outputs"] = {"json": fmt["json_schema"]["schema"]}
    elif isinstance(fmt, dict) and fmt.get("type") == "json_object":
        params["structured_outputs"] = {"json_object": True}
    return params


def vllm_preprocess(row: dict[str, Any]) -> dict[str, Any]:
    body = json.loads(row[BODY])
    return {"messages": body["messages"], "sampling_params": sampling_params(body)}


def _entries(mapping: Any) -> list[tuple[Any, Any]]:
    """A token's log-probability map as (token id, info) pairs: a dict, or the (key, value) list Arrow makes of one."""
    if isinstance(mapping, dict):
        return list(mapping.items())
    if isinstance(mapping, list | tuple):
        return [tuple(pair) for pair in mapping if isinstance(pair, list | tuple) and len(pair) == 2]
    return []


def chat_logprobs(tokens: Any, logprobs: Any) -> dict[str, Any] | None:
    """vLLM's per-token log-probabilities ({token id: {logprob, rank, decoded_token}} for each generated token) as
    Chat Completions' `logprobs.content`: each generated token with its top alternatives, most likely first."""
    if not isinstance(logprobs, list | tuple) or not isinstance(tokens, list | tuple) or len(tokens) != len(logprobs):
        return None
    content = []
    for token_id, position in zip(tokens, logprobs, strict=True):
        tops = []
        chosen: dict[str, Any] | None = None
        for key, info in _entries(position):
            if not isinstance(info, dict) or not isinstance(info.get("logprob"), int | float):
                continue
            logprob = float(info["logprob"])
            if not math.isfinite(logprob):
                continue
            entry: dict[str, Any] = {"token": str(info.get("decoded_token") or ""), "logprob": logprob}
            tops.append(entry)
            if str(key) == str(token_id):
                chosen = entry
        if chosen is None:
            return None
        tops.sort(key=lambda e: -float(e["logprob"]))
        content.append({**chosen, "top_logprobs": tops})
    return {"content": content}


def chat_body(row: dict[str, Any], model: str) -> dict[str, Any]:
    """A Chat Completions body of a vLLM engine output row (`generated_text`, `num_input_tokens`,
    `num_generated_tokens`, `generated_tokens`, `logprobs`), named after the configured model."""
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": str(row.get("generated_text")
                                                                                       or "")},
                              "finish_reason": "stop"}
    lp = chat_logprobs(row.get("generated_tokens"), row.get("logprobs"))
    if lp is not None:
        choice["logprobs"] = lp
    prompt, completion = int(row.get("num_input_tokens") or 0), int(row.get("num_generated_tokens") or 0)
    return {"object": "chat.completion", "model": model, "choices": [choice],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}


def vllm_postprocess(row: dict[str, Any], *, model: str) -> dict[str, Any]:
    return {INDEX: row[INDEX], STATUS: 200, REPLY: json.dumps(chat_body(row, model))}


def vllm_postprocessor(model: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return functools.partial(vllm_postprocess, model=model)
