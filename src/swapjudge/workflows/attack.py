"""`swapjudge probe attack`: answers built to fool the judge in both orders, on a seeded sample of the configured
pairs or of a judge card's suite, through a store's reply cache when one is given (`runner.attack_probe`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def attack(config: str | Path | Any, *, pairs: str | Path | None = None, attacks: Sequence[str] | None = None,
           n: int = 50, seed: str = "", dry_run: bool = False, suite: str | Path | None = None,
           store: str | Path | None = None, progress: Any = None, cached_only: bool = False) -> Any:
    """The attack probe, live: on a seeded sample of `n` pairs the first configured system's answer replaced or
    altered by each attack and judged against the other in both orders, beside a placebo (`AttackProbe`); with
    `dry_run` only the calls and their cost (`AttackPlan`). `suite`: a judge card's suite (`default`, `quick`, or
    a pairs file) instead of the configuration's pairs, which the configuration may then leave out, as a card's
    does. `store`: the run store whose reply cache serves the prompts it holds and keeps every reply got (a probe
    stopped resumes, and no prompt is paid twice); None: the configuration's `store` with a suite, else none.
    `progress`: a function given one line per call made (None: silent). `cached_only`: call nothing, read the
    store's cache only (a call not in it yet leaves its pair out as incomplete): what a probe still running, or
    stopped, has got so far."""
    from swapjudge.core import arguments
    from swapjudge.errors import ArgumentError
    from swapjudge.runner.attack_probe import dry_run_attack, run_attack
    from swapjudge.workflows.run import load_run_config

    n = arguments.integer(n, "n", minimum=1)
    suite = arguments.path(suite, "suite", what="a suite's name (default, quick) or a pairs file's path")
    store = arguments.path(store, "store", what="a run store's path")
    dry_run = arguments.flag(dry_run, "dry_run")
    cached_only = arguments.flag(cached_only, "cached_only")
    if progress is not None and not callable(progress):
        raise ArgumentError("{progress} must be a function of one line of text, or None", "progress")
    if suite is not None and pairs is not None:
        raise ArgumentError("{suite} and {pairs} both name the pairs to sample: give one", "suite", "pairs")
    if suite is not None:
        from swapjudge.workflows.card import card_config, load_suite

        loaded = card_config(config, load_suite(suite), store=store)
        store_path: Path | None = loaded.store_path(store)
    else:
        loaded = load_run_config(config)
        store_path = None if store is None else Path(store)
    path = None if pairs is None else str(pairs)
    names = None if attacks is None else list(attacks)
    if dry_run:
        return dry_run_attack(loaded, pairs_path=path, attacks=names, sample=n, seed=seed, store_path=store_path)
    return run_attack(loaded, pairs_path=path, attacks=names, sample=n, seed=seed, store_path=store_path,
                      progress=progress, cached_only=cached_only)
