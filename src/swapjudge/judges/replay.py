"""A records file acting as the judge: re-analysis, tests, and judgments imported from other harnesses.

Unlike the other backends it must know which identities sit in which slot, so it reads the runner's request
`metadata` (item, round, first, second); nothing is ever sent anywhere. The records are read by the runner
(`runner.backend`, through the record format's own reader) and handed in as a verdict table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from swapjudge.judges.base import JudgeReply, JudgeRequest, Verdict

SUPPORTS_STRUCTURED = False
# Keys under `judge:` this backend reads beyond the common ones (JudgeConfig's fields).
OPTIONS = frozenset({"replay_judge"})

ReplayKey = tuple[int, str, str, str]  # (round, item, first, second)
# -> (verdict, raw reply, strength of a graded verdict)
VerdictTable = Mapping[ReplayKey, tuple[Verdict | None, str | None, int | None]]


class ReplayJudge:
    def __init__(self, *, name: str, verdicts: VerdictTable) -> None:
        self.name = name
        self._verdicts = verdicts

    async def judge(self, request: JudgeRequest) -> JudgeReply:
        meta: dict[str, Any] = request.metadata
        key = (int(meta.get("round", 0)), str(meta["item"]), str(meta["first"]), str(meta["second"]))
        found = self._verdicts.get(key)
        if found is None:
            return JudgeReply(
                verdict=None,
                raw="",
                error=f"replay: no record for item {key[1]!r} with {key[2]!r} first, {key[3]!r} second",
            )
        verdict, raw, strength = found
        return JudgeReply(verdict=verdict, raw=raw or (verdict or ""), settings={"replay": True}, strength=strength)

    async def aclose(self) -> None:
        return None
