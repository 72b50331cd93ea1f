"""What every provider's batch wire format speaks in: a batch's state, one request's outcome, the submission a
batch is made for, and the protocol the batch engine (runner/batch) drives. Each provider's own wire code sits
beside its judge (`openai_batch`, `anthropic_batch`); the engine owns the ledger, the store and the retries."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO, ClassVar, Protocol, Self

from swapjudge.config import JudgeConfig
from swapjudge.judges._http import HttpClient
from swapjudge.judges.base import Completion, JudgeReply, JudgeRequest
from swapjudge.judges.chat import ChatJudge, Provider

FILE_TIMEOUT_S = 300.0  # uploads and downloads of whole batch files take longer than one judge call
WAIT = "wait"  # `find`: an unknown recent batch may be this submission; wait for it to end before deciding

# How an idempotent provider request (a poll, a listing page) is retried: the engine hands its policy in.
Retry = Callable[[Callable[[], Awaitable[dict[str, Any]]]], Awaitable[dict[str, Any]]]


async def once(make: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    """No retry: the request is made once."""
    return await make()


@dataclass(frozen=True)
class BatchState:
    ended: bool
    provider_status: str
    counts: dict[str, int] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)
    note: str | None = None  # something the user should hear about (an output path that is no regular file)


@dataclass(frozen=True)
class ResultLine:
    """One request's outcome: the response body when it succeeded, else why not (errored, expired, canceled)."""

    custom_id: str
    body: dict[str, Any] | None
    failure: str | None = None


@dataclass(frozen=True)
class UnreadableLine:
    """A line of a results file that is no result (not JSON, or no custom_id). `cut`: the file's last line, without
    its newline: a file still being written."""

    size: int
    cut: bool = False


Result = ResultLine | UnreadableLine


class BatchSubmission(Protocol):
    """What a provider reads of a planned submission (the engine's ledger row)."""

    @property
    def key(self) -> str: ...

    @property
    def requests(self) -> int: ...

    @property
    def planned_at(self) -> float: ...

    @property
    def file_id(self) -> str | None: ...


class BatchProvider(Protocol):
    name: str
    max_requests: int
    max_bytes: int
    line_overhead: int  # bytes a request adds to the batch beyond its line (separators)
    # The results may still be growing when read (an offline engine writing its output file): an ended batch is
    # collected only once every request has a line; until then what is there is stored and the rest waited for.
    grows: bool
    # The served model named in each reply must be the configured one (an offline engine serves exactly the
    # name it is given; a provider's replies name a dated snapshot of the model asked for).
    checks_model: bool

    @property
    def judge(self) -> type[ChatJudge]:
        """The judge whose request bodies its lines carry and whose parser reads its results."""
        ...

    def line(self, cid: str, body: dict[str, Any]) -> bytes: ...

    async def submit(self, sub: BatchSubmission, payload: BinaryIO, on_uploaded: Callable[[str], None]) -> str:
        """Send a batch; `payload` holds its request lines, one per line (JSONL). `on_uploaded(file_id)` is called
        once an input file is uploaded, before the batch is created on it."""
        ...

    async def find(self, sub: BatchSubmission, known: set[str]) -> str | None: ...

    async def status(self, batch_id: str) -> BatchState: ...

    def results(self, batch_id: str, state: BatchState) -> AsyncIterator[Result]: ...

    async def aclose(self) -> None: ...


class BatchJudge(Protocol):
    """A judge whose requests can go through a batch: the body of a call's request (a verdict's, or a plain
    completion's), and a batch result parsed as its synchronous reply would be."""

    def request_body(self, request: JudgeRequest) -> dict[str, Any]: ...

    def reply_from_body(self, body: dict[str, Any], request: JudgeRequest) -> JudgeReply: ...

    def completion_body(self, system: str, user: str, max_tokens: int) -> dict[str, Any]: ...

    def completion_from_body(self, body: dict[str, Any]) -> Completion | None: ...

    async def aclose(self) -> None: ...


class HttpBatches:
    """What the providers' batch clients share: a client from the provider's one factory (with the longer timeout
    of whole files), JSON requests, streamed result files, the retry the engine hands in."""

    provider: ClassVar[Provider]
    judge: ClassVar[type[ChatJudge]]
    label: ClassVar[str]  # how its messages name it ("openai batch")
    grows = False
    checks_model = False

    def __init__(self, client: HttpClient, *, retry: Retry = once) -> None:
        self._http = client
        self._retry = retry

    @classmethod
    def from_config(cls, cfg: JudgeConfig, *, retry: Retry = once) -> Self:
        return cls(cls.provider.client(cfg, timeout_s=max(cfg.timeout_s, FILE_TIMEOUT_S), concurrency=4), retry=retry)

    async def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        return await self._http.request_json(method, path, self.label, **kwargs)

    async def _listing(self, path: str, cursor: str, too_old: Callable[[dict[str, Any]], bool]
                       ) -> AsyncGenerator[list[dict[str, Any]], None]:
        """The pages of the provider's list of batches, newest first (each page request retried as the engine
        says), until the last page or one whose last batch is `too_old` to be a submission's."""
        after: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 100}
            if after:
                params[cursor] = after
            page = await self._retry(functools.partial(self._json, "GET", path, params=params))
            data = page.get("data") or []
            yield data
            if not page.get("has_more") or not data or too_old(data[-1]):
                return
            after = str(page.get("last_id") or data[-1]["id"])

    async def _results(self, path: str, parse: Callable[[bytes], ResultLine | None]) -> AsyncIterator[Result]:
        """The parsed lines of a results file, as they arrive (a line that is no result is an UnreadableLine)."""
        async with contextlib.aclosing(self._http.lines(path, self.label)) as lines:
            async for line in lines:
                parsed = parse(line)
                yield UnreadableLine(len(line)) if parsed is None else parsed

    async def aclose(self) -> None:
        await self._http.aclose()
