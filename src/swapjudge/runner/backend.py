"""The judge backend a command uses: its configuration checked and resolved against the configuration file, and
the backend built from it. Every command that calls a judge (run, check, the live probes, anchored scoring)
builds it here, so a configuration means the same judge whichever command reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from swapjudge.config import JudgeConfig, LoadedConfig
from swapjudge.errors import ConfigError
from swapjudge.judges.base import Judge, Verdict
from swapjudge.judges.registry import check_options, create_judge, supports_structured
from swapjudge.judges.replay import ReplayJudge, ReplayKey


def check_judge_options(loaded: LoadedConfig) -> None:
    """A key under `judge:` that neither every backend nor this one reads is an error (`judges.registry`)."""
    check_options(loaded.config.judge, loaded.source)


def resolved_judge_config(loaded: LoadedConfig) -> JudgeConfig:
    """The judge config with its file paths (replay records, local .gguf model) resolved against the config file."""
    cfg = loaded.config.judge
    updates: dict[str, Any] = {}
    if cfg.path:
        updates["path"] = str(loaded.resolve(cfg.path))
    if cfg.backend == "local" and cfg.model and cfg.model.endswith(".gguf"):
        updates["model"] = str(loaded.resolve(cfg.model))
    return cfg.model_copy(update=updates) if updates else cfg


def structured_output(judge: JudgeConfig) -> bool:
    """Whether the verdict is asked for as JSON: configured, and the backend's API can return it."""
    return judge.structured_output and supports_structured(judge.backend)


def replay_verdicts(path: str | Path, judge: str | None
                    ) -> dict[ReplayKey, tuple[Verdict | None, str | None, int | None]]:
    """The verdict table of a records file acting as the judge: (round, item, first, second) -> (verdict, raw,
    strength), of its one judge or of `judge` (`judge.replay_judge`)."""
    from swapjudge.reading.records import read_records

    frame = read_records(path).frame
    judges = sorted(set(frame["judge"].to_list()))
    if judge is None and len(judges) > 1:
        raise ConfigError(f"{path}: holds several judges ({', '.join(judges)}); set judge.replay_judge")
    if judge is not None:
        if judge not in judges:
            raise ConfigError(f"{path}: no records of judge {judge!r}")
        frame = frame.filter(frame["judge"] == judge)
    has_raw = "raw" in frame.columns
    has_strength = "strength" in frame.columns  # graded records replay their strength too
    return {(int(row["round"]), str(row["item"]), str(row["first"]), str(row["second"])):
            (cast(Verdict | None, row["verdict"]), row["raw"] if has_raw else None,
             row["strength"] if has_strength else None)
            for row in frame.iter_rows(named=True)}


def build_judge(cfg: JudgeConfig) -> Judge:
    """Build the backend for a judge configuration whose paths are already resolved."""
    if cfg.backend == "replay":
        assert cfg.path is not None
        return ReplayJudge(name=cfg.judge_name, verdicts=replay_verdicts(cfg.path, cfg.extra().get("replay_judge")))
    return create_judge(cfg)


def open_judge(loaded: LoadedConfig) -> Judge:
    """The configured judge, ready to call (close it with `aclose`)."""
    return build_judge(resolved_judge_config(loaded))
