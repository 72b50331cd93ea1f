"""Backend names to modules. Each backend module exposes `from_config(JudgeConfig) -> Judge` (the replay
backend alone is built by the runner, which reads its records), `OPTIONS` (the keys under `judge:` it reads
beyond the common ones) and, when its API can return a JSON verdict, `SUPPORTS_STRUCTURED = True`. Modules are
imported only when used, so a backend's optional dependencies (aiohttp, llama-cpp-python) are needed only by
the runs that use it."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import cast

from swapjudge.config import COMMON_JUDGE_OPTIONS, JudgeConfig, did_you_mean
from swapjudge.errors import ConfigError
from swapjudge.judges.base import Judge

BACKENDS: dict[str, str] = {
    "openai": "swapjudge.judges.openai",
    "anthropic": "swapjudge.judges.anthropic",
    "replay": "swapjudge.judges.replay",
    "local": "swapjudge.judges.local",
}


def backend_module(backend: str) -> ModuleType:
    if backend not in BACKENDS:
        raise ConfigError(f"unknown judge backend {backend!r} (known: {', '.join(sorted(BACKENDS))})")
    try:
        return importlib.import_module(BACKENDS[backend])
    except ModuleNotFoundError as err:
        extra = backend if backend in ("openai", "anthropic", "local") else "dev"
        raise ConfigError(
            f"backend {backend!r} is not available ({err.name} missing): pip install 'swapjudge[{extra}]'"
        ) from None


def backend_options(backend: str) -> frozenset[str] | None:
    """The keys under `judge:` a backend reads beyond the common ones; None when the backend cannot be loaded
    here (its own error comes when it is used) or does not declare them."""
    try:
        module = backend_module(backend)
    except ConfigError:
        return None
    options = getattr(module, "OPTIONS", None)
    return None if options is None else frozenset(options)


def check_options(judge: JudgeConfig, source: Path) -> None:
    """Every key under `judge:` is a common setting or an option its backend declares: a misspelt key is an
    error, never silently ignored. Called where a configuration is loaded for use (the runner's `prepare`)."""
    extra = set(judge.extra()) - COMMON_JUDGE_OPTIONS
    if not extra:
        return
    options = backend_options(judge.backend)
    if options is None:
        return
    unknown = sorted(extra - options)
    if unknown:
        valid = set(JudgeConfig.model_fields) | options | COMMON_JUDGE_OPTIONS
        raise ConfigError(f"{source}: key `judge.{unknown[0]}`: not a setting of the {judge.backend} backend"
                          f"{did_you_mean(unknown[0], valid)}")


def supports_structured(backend: str) -> bool:
    return bool(getattr(backend_module(backend), "SUPPORTS_STRUCTURED", False))


def create_judge(cfg: JudgeConfig, *, wire_only: bool = False) -> Judge:
    """Build the backend for a judge configuration whose paths are already resolved: the one factory of every
    judge. `wire_only`: the judge's wire format without a client (its request bodies and reply parser), for an
    engine that sends the requests itself; only a backend whose `from_config` takes `wire_only` offers it."""
    module = backend_module(cfg.backend)
    factory = getattr(module, "from_config", None)
    if factory is None:
        raise ConfigError(f"backend {cfg.backend!r} is built by swapjudge.runner.backend.build_judge, which reads "
                          "its input")
    return cast(Judge, factory(cfg, wire_only=True) if wire_only else factory(cfg))
