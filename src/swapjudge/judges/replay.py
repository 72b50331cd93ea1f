"""A records file acting as the judge: re-analysis, tests, and judgments imported from other harnesses.

Unlike the other backends it must know which identities sit in which slot, so it reads the runner's request
`metadata` (item, round, first, second); nothing is ever sent anywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from swapjudge.config import JudgeConfig
from swapjudge.errors import ConfigError
from swapjudge.judges.base import JudgeReply, JudgeRequest, Verdict

SUPPORTS_STRUCTURED = False
# Keys under `judge:` this backend reads beyond the common ones (JudgeConfig's fields).
OPTIONS = frozenset({"replay_judge"})


class ReplayJudge:
    def __init__(self, *, name: str, path: str | Path, judge: str | None = None) -> None:
        from swapjudge.core.records import load_records

        self.name = name
        frame = load_records(path).frame
        judges = sorted(set(frame["judge"].to_list()))
        if judge is None and len(judges) > 1:
            raise ConfigError(f"{path}: holds several judges ({', '.join(judges)}); set judge.replay_judge")
        if judge is not None:
            if judge not in judges:
                raise ConfigError(f"{path}: no records of judge {judge!r}")
            frame = frame.filter(frame["judge"] == judge)
        self._verdicts: dict[tuple[int, str, str, str], tuple[Verdict | None, str | None]] = {}
        has_raw = "raw" in frame.columns
        for row in frame.iter_rows(named=True):
            key = (int(row["round"]), str(row["item"]), str(row["first"]), str(row["second"]))
            raw = row["raw"] if has_raw else None
            self._verdicts[key] = (cast(Verdict | None, row["verdict"]), raw)

    @classmethod
    def from_config(cls, cfg: JudgeConfig) -> ReplayJudge:
        assert cfg.path is not None
        extra = cfg.extra()
        return cls(name=cfg.judge_name, path=cfg.path, judge=extra.get("replay_judge"))

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
        verdict, raw = found
        return JudgeReply(verdict=verdict, raw=raw or (verdict or ""), settings={"replay": True})

    async def aclose(self) -> None:
        return None


def from_config(cfg: JudgeConfig) -> ReplayJudge:
    return ReplayJudge.from_config(cfg)
