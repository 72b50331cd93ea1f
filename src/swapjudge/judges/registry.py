"""Backend names to modules. Each backend module exposes `from_config(JudgeConfig) -> Judge` and, when its API
can return a JSON verdict, `SUPPORTS_STRUCTURED = True`. Modules are imported only when used, so a backend's
optional dependencies (aiohttp, llama-cpp-python) are needed only by the runs that use it."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import cast

from swapjudge.config import JudgeConfig
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


def supports_structured(backend: str) -> bool:
    return bool(getattr(backend_module(backend), "SUPPORTS_STRUCTURED", False))


def create_judge(cfg: JudgeConfig) -> Judge:
    """Build the backend for a judge configuration whose paths are already resolved."""
    module = backend_module(cfg.backend)
    factory = getattr(module, "from_config", None)
    if factory is None:
        raise ConfigError(f"backend module {module.__name__} has no from_config(JudgeConfig)")
    return cast(Judge, factory(cfg))
