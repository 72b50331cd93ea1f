"""The one small protocol every judge backend implements, and the plain completion some of them offer beside it.

A backend never learns which system sits in which slot: it gets messages that name the answers only by slot
and returns a positional verdict (`first`, `second`, `tie` or None). The runner alone maps slots to identities.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Verdict = Literal["first", "second", "tie"]
VERDICTS: tuple[Verdict, ...] = ("first", "second", "tie")


@dataclass(frozen=True)
class JudgeRequest:
    """One judge call, fully rendered.

    `system` holds everything shared by every call of a run (rubric, instructions), so provider prompt caching
    applies; `user` holds the task and the two slotted answers. `slot_labels` are the neutral names the prompt
    uses for the slots (e.g. "1", "2"); `verdict_prefix` is the text an answer begins with right before the slot
    label, for backends that read the verdict from next-token probabilities.
    """

    system: str
    user: str
    allow_tie: bool
    prompt_hash: str
    slot_labels: tuple[str, str] = ("1", "2")
    tie_label: str = "tie"
    verdict_prefix: str = "Verdict: "
    chain_of_thought: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    # The prompt asks for a JSON verdict `{"winner": label, "reason": ...}` (backends with structured output).
    structured: bool = False
    # The prompt asks for a graded verdict (A>>B, A>B, [A=B,] B>A, B>>A): the reply's strength is read too.
    graded: bool = False


@dataclass(frozen=True)
class JudgeReply:
    """What a backend returns for one call. `verdict` None means no usable verdict (raw text is kept)."""

    verdict: Verdict | None
    raw: str
    latency_s: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    # Input tokens written to a provider's prompt cache (billed above the plain input price by some).
    cache_write_tokens: int | None = None
    cost_usd: float | None = None
    # P(first), P(second) (and P(tie)) when the backend exposes token probabilities.
    probabilities: dict[str, float] | None = None
    error: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    # A graded verdict's strength: 1 slightly, 2 much better; None for a tie, an ungraded prompt or no verdict.
    strength: int | None = None


class TransientJudgeError(Exception):
    """A failure worth retrying (rate limit, server error, timeout). `retry_after` is the server's hint."""

    def __init__(self, message: str, *, retry_after: float | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


class UnreachableJudgeError(TransientJudgeError):
    """No connection could be made (refused, DNS): retried once the server has answered, fatal before."""

    def __init__(self, message: str, *, url: str, hint: str = "is the server running?") -> None:
        super().__init__(message)
        self.url = url
        self.hint = hint  # what to look at, said after the message when the run stops for it


class PermanentJudgeError(Exception):
    """A failure of this one call that retrying will not fix (e.g. a 400): recorded, the run goes on."""


class FatalJudgeError(Exception):
    """A failure that will hit every call (missing key, 401/403, unknown model): the run stops."""


@runtime_checkable
class Judge(Protocol):
    """A judge backend. `name` identifies the judge configuration (it goes into every record's `judge`)."""

    name: str

    async def judge(self, request: JudgeRequest) -> JudgeReply:
        """Make one call. Transient failures may raise; the runner retries them. Never log secrets."""
        ...

    async def aclose(self) -> None:
        """Release connections, models, threads."""
        ...


@dataclass(frozen=True)
class Completion:
    """What a plain completion returned: the reply text, what the call took, and (when the backend reads them)
    the probability of each of the `choices` the caller named."""

    text: str
    latency_s: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    probabilities: dict[str, float] | None = None


@runtime_checkable
class Completer(Protocol):
    """A judge that also answers a plain system + user prompt (the anchored pointwise scorer asks for a score
    this way). Failures raise the same error classes as `judge`, so the runner retries them the same way."""

    name: str

    async def complete(self, system: str, user: str, *, max_tokens: int, prefix: str = "",
                       choices: Sequence[str] = ()) -> Completion:
        """One reply. `max_tokens` is the limit when the configuration sets none. A backend that reads token
        probabilities may answer `prefix` + the most likely of `choices` with each one's probability; the
        others ignore both and reply freely."""
        ...

    async def aclose(self) -> None:
        ...
