"""`swapjudge history|compare|releases|adaptive|anchors`: a store's runs over time, what moved between two runs,
release over release with a pinned baseline, adaptive swapping replayed offline, and anchored scoring."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swapjudge.errors import ArgumentError, SwapjudgeError
from swapjudge.workflows.run import load_run_config, open_run_store

if TYPE_CHECKING:
    from swapjudge.drift.adaptive_replay import AdaptiveAnalysis
    from swapjudge.drift.history import HistoryEntry, RunComparison
    from swapjudge.drift.releases import ReleaseReport
    from swapjudge.runner.scoring import AnchorsRun


def history(store: str | Path | None = None) -> tuple[list[HistoryEntry], list[dict[str, Any]]]:
    """The store's pairwise runs, each with what it was measured under and its analysis, and its anchored
    scoring runs."""
    from swapjudge.drift.history import run_history

    with open_run_store(store) as st:
        return run_history(st), st.anchor_runs()


def compare(run_a: int, run_b: int, *, store: str | Path | None = None) -> RunComparison:
    """What changed between two runs and how the judge's behaviour moved, paired on what both judged."""
    from swapjudge.drift.history import compare_runs

    with open_run_store(store) as st:
        return compare_runs(st, run_a, run_b)


@dataclass(frozen=True)
class ReleaseRun:
    """The run a release report was made from, the tie policy it was registered with, and the report."""

    run_id: int
    tie_policy: str
    report: ReleaseReport


def releases(config: str | Path, *, store: str | Path | None = None, run_id: int | None = None) -> ReleaseRun:
    """A release plan's run (`run_id`, default the latest run of this configuration) release over release and
    against the pinned baseline."""
    from swapjudge.drift.releases import release_report
    from swapjudge.reading.pairs_file import load_pairs
    from swapjudge.store.analysis import run_record_set

    loaded = load_run_config(config)
    pcfg = loaded.config.pairs
    if pcfg.plan != "releases" or pcfg.releases is None or pcfg.baseline is None:
        raise SwapjudgeError(f"{config}: not a release plan (set `pairs.releases: [v1, v2, ...]`)")
    pairs = load_pairs(loaded.pairs_path)
    path = loaded.store_path(store)
    with open_run_store(path) as st:
        if run_id is None:
            mine = [r for r in st.runs() if r.config_hash == loaded.config_hash and r.pairs_digest == pairs.digest]
            if not mine:
                raise SwapjudgeError(f"{path}: no run of {config} yet: judge first with `swapjudge run {config}`")
            run_id = mine[-1].id
        records = run_record_set(st, run_id)
    cfg = loaded.config
    report = release_report(records, pairs, pcfg.releases, pcfg.baseline, tie_policy=cfg.tie_policy,
                            min_consistency=cfg.gates.min_self_consistency, confidence=cfg.confidence)
    return ReleaseRun(run_id, cfg.tie_policy, report)


def adaptive(run_id: int, thresholds: Sequence[float], *, store: str | Path | None = None) -> AdaptiveAnalysis:
    """Adaptive swapping replayed on a run judged in both orders with verdict probabilities."""
    from swapjudge.drift.adaptive_replay import adaptive_offline

    if not thresholds or any(not 0 < t <= 1 for t in thresholds):
        raise ArgumentError("{thresholds}: give numbers in (0, 1], e.g. 0.7,0.9", "thresholds")
    with open_run_store(store) as st:
        st.run(run_id)
        result = adaptive_offline(st.calls(run_id), list(thresholds))
    if result.pairs == 0:
        raise SwapjudgeError(f"run {run_id} has no pair with both orders judged")
    if result.without_confidence == result.pairs:
        raise SwapjudgeError(f"run {run_id}: no call carries verdict probabilities (use a backend that returns "
                             "them, e.g. `logprobs: true` on an OpenAI-compatible server)")
    return result


def anchors(config: str | Path, *, pinned: str | Path | None = None,
            store: str | Path | None = None) -> AnchorsRun:
    """Anchored pointwise scoring: the exemplars and the pinned reference set scored and checked."""
    from swapjudge.runner.scoring import run_anchors

    return run_anchors(config, pinned=pinned, store=store)
