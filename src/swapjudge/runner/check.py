"""`swapjudge run --check`: one request proves the server, the key and the model before a long run.

The request is the run's first planned call (the real prompt, so the check also proves the prompt fits and
the verdict parses). Nothing is stored: the check costs one call (two if the reply needs the label follow-up).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from swapjudge.config import LoadedConfig
from swapjudge.errors import SwapjudgeError
from swapjudge.judges.base import FatalJudgeError
from swapjudge.judges.registry import backend_module
from swapjudge.redact import redact, redact_url
from swapjudge.runner.backend import open_judge
from swapjudge.runner.plan import estimated_tokens, expected_output_tokens
from swapjudge.runner.retry import Control, Pacing, RetryPolicy, call_with_retries
from swapjudge.runner.session import prepare


@dataclass(frozen=True)
class CheckResult:
    url: str
    model: str
    verdict: str | None
    latency_s: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def judge_url(loaded: LoadedConfig) -> str:
    """Where the judge's requests go, as the user would recognise it (a local model: its file)."""
    jc = loaded.config.judge
    if jc.base_url:
        return redact_url(jc.base_url)
    default = getattr(backend_module(jc.backend), "DEFAULT_BASE_URL", None)
    return str(default or jc.path or jc.model or jc.backend)


async def _check(loaded: LoadedConfig) -> CheckResult:
    _pairs, plan = prepare(loaded)
    calls = [c for c in plan.calls if not c.identical]
    if not calls:
        raise SwapjudgeError("check: the run plans no judge call (every pair has identical answers)")
    head = calls[0].request
    jc = loaded.config.judge
    judge = open_judge(loaded)
    started = time.perf_counter()
    try:
        # one attempt, no retry: the check proves the setup, it does not wait it out
        reply, error, _ = await call_with_retries(
            lambda: judge.judge(head), RetryPolicy(0, 0.0, 0.0, jc.timeout_s),
            Pacing(control=Control(stop=asyncio.Event())),
            est_tokens=estimated_tokens(head, expected_output_tokens(head)),
        )
    except FatalJudgeError as err:
        raise SwapjudgeError(f"check failed: {redact(str(err))}") from None
    finally:
        await judge.aclose()
    if reply is None:
        raise SwapjudgeError(f"check failed: {judge_url(loaded)}: {redact(error or 'no reply')}")
    return CheckResult(url=judge_url(loaded), model=str(jc.model or jc.backend), verdict=reply.verdict,
                       latency_s=time.perf_counter() - started)


def check_judge(loaded: LoadedConfig) -> CheckResult:
    return asyncio.run(_check(loaded))
