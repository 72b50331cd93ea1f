"""Backend `local`: a GGUF model run in-process by llama.cpp (llama-cpp-python), no key, no network.

The request's system and user texts are rendered through the model's own chat template. In `logprobs` mode
(the default) the assistant's reply is started with the fixed verdict prefix ("Verdict: ") and the verdict is
read from the next-token probabilities of the slot labels after one forward pass: no sampling, so the same
prompt gives the same verdict. In `generate` mode the model writes its reply greedily; it is parsed strictly.

The KV cache keeps the previous prompt: a call evaluates only the tokens after the prefix it shares with the
previous one (the rubric and instructions across pairs; the task too between the two orders of a pair). The
model is not thread-safe and CPU-bound, so calls run one at a time on one worker thread.
"""

from __future__ import annotations

import asyncio
import functools
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np

from swapjudge.errors import ConfigError, SwapjudgeError
from swapjudge.judges.base import Completion, JudgeReply, JudgeRequest, PermanentJudgeError, Verdict
from swapjudge.judges.model_files import DEFAULT_MODEL, Progress, resolve_model

if TYPE_CHECKING:
    from llama_cpp import Llama

T = TypeVar("T")
Mode = Literal["logprobs", "generate"]
MODES: tuple[Mode, ...] = ("logprobs", "generate")
SUPPORTS_STRUCTURED = False
# Keys under `judge:` this backend reads beyond the common ones (JudgeConfig's fields).
OPTIONS = frozenset({"mode", "n_ctx", "n_threads", "n_batch", "reuse_prefix", "model_dir"})

# Placeholders for message contents while the chat template is rendered: contents are then tokenized as plain
# text, so an answer that contains "<|im_end|>" cannot close its message or open the assistant's turn.
_SENTINEL = "\x1eswapjudge-content-{}\x1e"


@dataclass(frozen=True)
class EvalStats:
    """Token counts of one forward pass: prompt tokens, and how many of them came from the KV cache."""

    prompt_tokens: int
    reused_tokens: int

    @property
    def evaluated_tokens(self) -> int:
        return self.prompt_tokens - self.reused_tokens


@dataclass(frozen=True)
class _LabelTokens:
    """The verdict prefix's tokens and, per answer option, the first token that tells the options apart."""

    context: tuple[int, ...]
    ids: dict[Verdict, int]
    # True when every label is exactly one token after the context (else its first token stands for it).
    exact: bool


def _softmax_log(logits: np.ndarray) -> np.ndarray:
    shifted = logits.astype(np.float64) - float(np.max(logits))
    return shifted - float(np.log(np.sum(np.exp(shifted))))


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.nonzero(np.asarray(a[:n], dtype=np.int64) != np.asarray(b[:n], dtype=np.int64))[0]
    return int(diff[0]) if len(diff) else n


def _last_logits(llm: Llama) -> np.ndarray:
    # With logits_all=False llama.cpp keeps only the last position's logits (llm.scores is not filled).
    pointer = llm._ctx.get_logits()  # type: ignore[no-untyped-call]
    return np.ctypeslib.as_array(pointer, shape=(llm.n_vocab(),))


class LocalJudge:
    """A judge backed by a local GGUF model. `model` is a packaged model's name or a GGUF path."""

    def __init__(self, model: str = DEFAULT_MODEL, *, name: str | None = None, mode: Mode = "logprobs",
                 n_ctx: int = 8192, n_threads: int = 2, n_batch: int = 512, max_tokens: int | None = None,
                 reuse_prefix: bool = True, model_dir: Path | None = None,
                 progress: Progress | None = None) -> None:
        if mode not in MODES:
            raise ConfigError(f"local judge: unknown mode {mode!r} (use {' or '.join(MODES)})")
        self.model = model
        self.name = name or f"local:{model}"
        self.mode: Mode = mode
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.n_batch = n_batch
        self.max_tokens = max_tokens
        self.reuse_prefix = reuse_prefix
        self.model_dir = model_dir
        self._progress = progress
        self._llm: Llama | None = None
        self._formatter: Any = None
        self._add_bos = False
        self._bos = -1
        self._labels_cache: dict[tuple[str, tuple[str, ...]], _LabelTokens] = {}
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self.model_path: Path | None = None
        self.load_s: float | None = None
        # Totals over the judge's life: prompt tokens seen and how many of them the KV cache spared.
        self.prompt_tokens_total = 0
        self.reused_tokens_total = 0

    # ---- model -----------------------------------------------------------------------------------------

    def load(self) -> None:
        """Resolve (assemble and verify if needed) and load the model; idempotent."""
        with self._lock:
            self._load_locked()

    def _load_locked(self) -> Llama:
        if self._llm is not None:
            return self._llm
        try:
            from llama_cpp import Llama
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError:
            raise SwapjudgeError(
                "the local backend needs llama-cpp-python: pip install 'swapjudge[local]' "
                "(the first install compiles llama.cpp, 5-7 minutes)"
            ) from None
        path = resolve_model(self.model, directory=self.model_dir, progress=self._progress)
        started = time.perf_counter()
        try:
            llm = Llama(model_path=str(path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                        n_threads_batch=self.n_threads, n_batch=self.n_batch, logits_all=False, seed=0,
                        verbose=False)
        except (ValueError, RuntimeError) as err:
            raise SwapjudgeError(f"cannot load model {path}: {err}") from None
        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            llm.close()
            raise SwapjudgeError(f"model {path} has no chat template in its GGUF metadata")
        model = llm._model
        eos, bos = llm.token_eos(), llm.token_bos()
        self._formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=model.token_get_text(eos) if eos != -1 else "",
            bos_token=model.token_get_text(bos) if bos != -1 else "",
            add_generation_prompt=True,
        )
        self._bos = bos
        self._add_bos = llm.metadata.get("tokenizer.ggml.add_bos_token") == "true" and bos != -1
        self._llm = llm
        self.model_path = path
        self.load_s = time.perf_counter() - started
        return llm

    def forget_cache(self) -> None:
        """Drop the KV cache: the next call evaluates its whole prompt (benchmarks use this)."""
        with self._lock:
            if self._llm is not None:
                self._llm.n_tokens = 0

    def close(self) -> None:
        with self._lock:
            if self._llm is not None:
                self._llm.close()
                self._llm = None
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    # ---- prompt ----------------------------------------------------------------------------------------

    def _tokenize(self, text: str, *, special: bool) -> list[int]:
        assert self._llm is not None
        if not text:
            return []
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=special))

    def _render(self, messages: list[dict[str, str]]) -> str:
        return str(self._formatter(messages=messages).prompt)

    def prompt_tokens(self, request: JudgeRequest) -> list[int]:
        """The chat-formatted prompt up to the start of the assistant's reply."""
        return self.chat_tokens([("system", request.system), ("user", request.user)])

    def chat_tokens(self, messages: Sequence[tuple[str, str]]) -> list[int]:
        """Messages through the model's chat template, ending with the assistant's turn opened. Template text is
        tokenized with special tokens, message contents as plain text."""
        contents = [content for _, content in messages]
        roles = [role for role, _ in messages]
        marks = [_SENTINEL.format(i) for i in range(len(contents))]
        try:
            text = self._render([{"role": r, "content": m} for r, m in zip(roles, marks, strict=True)])
        except Exception:
            text = ""
        if any(text.count(m) != 1 for m in marks) and roles and roles[0] == "system" and len(roles) > 1:
            # A template without a system role: the system text leads the first user message instead.
            contents = [f"{contents[0]}\n\n{contents[1]}", *contents[2:]]
            roles, marks = roles[1:], marks[1:]
            try:
                text = self._render([{"role": r, "content": m} for r, m in zip(roles, marks, strict=True)])
            except Exception as err:
                raise SwapjudgeError(f"the model's chat template failed to render: {err}") from None
        if any(text.count(m) != 1 for m in marks):
            raise SwapjudgeError("the model's chat template does not place each message's content once")
        tokens: list[int] = []
        for piece in re.split("(" + "|".join(re.escape(m) for m in marks) + ")", text):
            if piece in marks:
                tokens += self._tokenize(contents[marks.index(piece)], special=False)
            else:
                tokens += self._tokenize(piece, special=True)
        if self._add_bos and (not tokens or tokens[0] != self._bos):
            tokens.insert(0, self._bos)
        return tokens

    def label_tokens(self, request: JudgeRequest) -> _LabelTokens:
        """Tokenize prefix+label for each option; the options part at their first differing token."""
        options: list[tuple[Verdict, str]] = [("first", request.slot_labels[0]),
                                              ("second", request.slot_labels[1])]
        if request.allow_tie:
            options.append(("tie", request.tie_label))
        key = (request.verdict_prefix, tuple(label for _, label in options))
        cached = self._labels_cache.get(key)
        if cached is not None:
            return cached
        seqs = [self._tokenize(request.verdict_prefix + label, special=False) for _, label in options]
        k = min(_common_prefix(seqs[0], s) for s in seqs[1:])
        if any(len(s) <= k for s in seqs) or len({s[k] for s in seqs}) != len(seqs):
            raise SwapjudgeError(f"slot labels {key[1]} cannot be told apart by one token after the prefix")
        ids = {verdict: seq[k] for (verdict, _), seq in zip(options, seqs, strict=True)}
        result = _LabelTokens(context=tuple(seqs[0][:k]), ids=ids, exact=all(len(s) == k + 1 for s in seqs))
        self._labels_cache[key] = result
        return result

    # ---- evaluation ------------------------------------------------------------------------------------

    def _evaluate(self, tokens: Sequence[int]) -> tuple[np.ndarray, EvalStats]:
        """Evaluate `tokens`, reusing the KV cache for the prefix shared with what was evaluated last;
        returns the next-token logits."""
        llm = self._llm
        assert llm is not None
        reuse = 0
        if self.reuse_prefix and llm.n_tokens > 0:
            reuse = _common_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens)
        # At least two tokens are evaluated: one gives fresh logits for the last position, and a second keeps
        # llama.cpp on its batched path (a lone token takes a matrix-vector path that rounds differently: a
        # fully cached prompt then moved P(second) by 2.7% on one build).
        reuse = max(0, min(reuse, len(tokens) - 2))
        llm.n_tokens = reuse
        llm.eval(tokens[reuse:])
        logits = np.array(_last_logits(llm), dtype=np.float32)
        stats = EvalStats(prompt_tokens=len(tokens), reused_tokens=reuse)
        self.prompt_tokens_total += stats.prompt_tokens
        self.reused_tokens_total += stats.reused_tokens
        return logits, stats

    def _settings(self) -> dict[str, Any]:
        return {"backend": "local", "model": self.model, "mode": self.mode, "decoding": "greedy",
                "n_ctx": self.n_ctx, "n_threads": self.n_threads, "reuse_prefix": self.reuse_prefix}

    def judge_sync(self, request: JudgeRequest) -> JudgeReply:
        """One call, synchronously (the async `judge` runs this on the worker thread)."""
        with self._lock:
            llm = self._load_locked()
            started = time.perf_counter()
            prompt = self.prompt_tokens(request)
            labels = self.label_tokens(request) if self.mode == "logprobs" else None
            full = prompt + list(labels.context) if labels is not None else prompt
            # Room for the generated reply (and a possible follow-up turn) in generation mode.
            limit = llm.n_ctx() - (1 if labels is not None else 2 * self._max_new_tokens(request) + 96)
            if len(full) > limit:
                return JudgeReply(verdict=None, raw="", input_tokens=len(full), output_tokens=0,
                                  error=f"prompt of {len(full)} tokens does not fit the context of "
                                        f"{llm.n_ctx()} (raise judge n_ctx)", settings=self._settings())
            logits, stats = self._evaluate(full)
            if labels is not None:
                return self._reply_from_logits(request, labels, logits, stats, started)
            return self._generate(request, logits, stats, started)

    def _reply_from_logits(self, request: JudgeRequest, labels: _LabelTokens, logits: np.ndarray,
                           stats: EvalStats, started: float) -> JudgeReply:
        logp = _softmax_log(logits)
        # float() because numpy floats are not JSON-serialisable.
        probabilities: dict[str, float] = {v: float(np.exp(logp[tok])) for v, tok in labels.ids.items()}
        ranked = sorted(labels.ids.items(), key=lambda kv: float(logits[kv[1]]), reverse=True)
        best, runner_up = ranked[0], ranked[1]
        verdict: Verdict | None = best[0] if logits[best[1]] != logits[runner_up[1]] else None
        label = {"first": request.slot_labels[0], "second": request.slot_labels[1], "tie": request.tie_label}
        raw = f"{request.verdict_prefix}{label[verdict]}" if verdict is not None else ""
        return JudgeReply(
            verdict=verdict, raw=raw, latency_s=time.perf_counter() - started,
            input_tokens=stats.prompt_tokens, output_tokens=0, cached_input_tokens=stats.reused_tokens,
            cost_usd=0.0, probabilities=probabilities,
            error=None if verdict is not None else "the slot labels were exactly equally likely",
            settings={**self._settings(), "label_tokens_exact": labels.exact},
        )

    def _max_new_tokens(self, request: JudgeRequest) -> int:
        if self.max_tokens is not None:
            return self.max_tokens
        return 512 if request.chain_of_thought else 24

    def _greedy(self, logits: np.ndarray, max_new: int) -> tuple[str, int]:
        """Greedy decoding from the evaluated prompt until an end-of-generation token or `max_new` tokens."""
        import llama_cpp

        llm = self._llm
        assert llm is not None
        vocab = llm._model.vocab
        out: list[int] = []
        for _ in range(max_new):
            token = int(np.argmax(logits))
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                break
            out.append(token)
            llm.eval([token])
            logits = _last_logits(llm)
        return llm.detokenize(out).decode("utf-8", errors="replace"), len(out)

    def _generate(self, request: JudgeRequest, logits: np.ndarray, stats: EvalStats,
                  started: float) -> JudgeReply:
        from swapjudge.judges.prompts import followup_prompt, parse_followup, parse_reply

        text, n_out = self._greedy(logits, self._max_new_tokens(request))
        parsed = parse_reply(text, request)
        raw, n_in, n_cached = text, stats.prompt_tokens, stats.reused_tokens
        if parsed.verdict is None:
            # One follow-up asking only for the label (as the other backends do); still unparsable: None.
            tokens = self.chat_tokens([("system", request.system), ("user", request.user), ("assistant", text),
                                       ("user", followup_prompt(request))])
            logits2, stats2 = self._evaluate(tokens)
            text2, n_out2 = self._greedy(logits2, 8)
            parsed = parse_followup(text2, request)
            raw = f"{text}\n\n[follow-up]\n{text2}"
            n_in, n_cached, n_out = n_in + stats2.prompt_tokens, n_cached + stats2.reused_tokens, n_out + n_out2
        return JudgeReply(
            verdict=parsed.verdict, raw=raw, latency_s=time.perf_counter() - started, input_tokens=n_in,
            output_tokens=n_out, cached_input_tokens=n_cached, cost_usd=0.0, settings=self._settings(),
            strength=parsed.strength,
        )

    # ---- a plain completion (anchored pointwise scores) ------------------------------------------------

    def complete_sync(self, system: str, user: str, *, max_tokens: int, prefix: str = "",
                      choices: Sequence[str] = ()) -> Completion:
        """A reply to `system` + `user`, synchronously. In `logprobs` mode with `choices` (e.g. a scale's levels)
        the reply is `prefix` + the most likely choice, read from the next-token distribution after `prefix` as
        verdicts are, with every choice's probability; otherwise it is decoded greedily (up to `max_tokens`
        unless the configuration sets max_tokens). A prompt that does not fit the context is a PermanentJudgeError."""
        with self._lock:
            llm = self._load_locked()
            started = time.perf_counter()
            prompt = self.chat_tokens([("system", system), ("user", user)])
            if self.mode == "generate" or not choices:
                max_new = self.max_tokens or max_tokens
                if len(prompt) > llm.n_ctx() - max_new:
                    raise PermanentJudgeError(f"prompt of {len(prompt)} tokens does not fit the context of "
                                              f"{llm.n_ctx()}")
                logits, _ = self._evaluate(prompt)
                text, n_out = self._greedy(logits, max_new)
                return Completion(text, time.perf_counter() - started, len(prompt), n_out)
            seqs = [self._tokenize(prefix + choice, special=False) for choice in choices]
            k = min(_common_prefix(seqs[0], s) for s in seqs[1:])
            if any(len(s) <= k for s in seqs) or len({s[k] for s in seqs}) != len(seqs):
                raise SwapjudgeError(f"scale levels {tuple(choices)} cannot be told apart by one token after "
                                     f"{prefix!r}")
            full = prompt + seqs[0][:k]
            if len(full) > llm.n_ctx() - 1:
                raise PermanentJudgeError(f"prompt of {len(full)} tokens does not fit the context of {llm.n_ctx()}")
            logits, _ = self._evaluate(full)
            logp = _softmax_log(logits)
            probs = {choice: float(np.exp(logp[seq[k]])) for choice, seq in zip(choices, seqs, strict=True)}
            best = max(choices, key=lambda c: probs[c])
            return Completion(f"{prefix}{best}", time.perf_counter() - started, len(full), 0, probs)

    async def complete(self, system: str, user: str, *, max_tokens: int, prefix: str = "",
                       choices: Sequence[str] = ()) -> Completion:
        return await self._in_worker(functools.partial(self.complete_sync, system, user, max_tokens=max_tokens,
                                                       prefix=prefix, choices=tuple(choices)))

    # ---- Judge protocol --------------------------------------------------------------------------------

    async def _in_worker(self, work: Callable[[], T]) -> T:
        """Run `work` on the model's one worker thread (llama.cpp is not reentrant; calls queue in order)."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="swapjudge-local")
        return await asyncio.get_running_loop().run_in_executor(self._executor, work)

    async def judge(self, request: JudgeRequest) -> JudgeReply:
        return await self._in_worker(functools.partial(self.judge_sync, request))

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)


def from_config(cfg: Any) -> LocalJudge:
    """Build from the runner's JudgeConfig: `model`, `name`, `max_tokens`, and the extra keys `mode`, `n_ctx`,
    `n_threads`, `n_batch`, `reuse_prefix`, `model_dir`."""
    extra: dict[str, Any] = dict(cfg.extra()) if hasattr(cfg, "extra") else {}
    known = set(OPTIONS)
    # `version` labels the judge for run history (it enters the judge hash), it is no option of the model
    unknown = sorted(set(extra) - known - {"version"})
    if unknown:
        raise ConfigError(f"key `judge.{unknown[0]}`: not an option of the local backend "
                          f"(options: {', '.join(sorted(known))})")
    if getattr(cfg, "verdict_scale", "plain") == "graded" and extra.get("mode", "logprobs") == "logprobs":
        raise ConfigError("key `judge.verdict_scale`: a graded verdict is read from the judge's text; the local "
                          "backend's `mode: logprobs` reads one slot label's probability: set `mode: generate`")
    if getattr(cfg, "temperature", 0.0):
        raise ConfigError("key `judge.temperature`: the local backend decodes greedily; use temperature 0")
    try:
        return LocalJudge(
            cfg.model or DEFAULT_MODEL, name=getattr(cfg, "judge_name", None),
            mode=extra.get("mode", "logprobs"),
            n_ctx=int(extra.get("n_ctx", 8192)), n_threads=int(extra.get("n_threads", 2)),
            n_batch=int(extra.get("n_batch", 512)), max_tokens=getattr(cfg, "max_tokens", None),
            reuse_prefix=bool(extra.get("reuse_prefix", True)),
            model_dir=Path(extra["model_dir"]) if extra.get("model_dir") else None,
        )
    except (TypeError, ValueError) as err:
        raise ConfigError(f"key `judge`: bad local backend option: {err}") from None
