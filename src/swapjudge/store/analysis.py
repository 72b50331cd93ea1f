"""The analysis of a stored run, under the policy, gate and systems it was registered with."""

from __future__ import annotations

from typing import Any

from swapjudge.core.adaptive import adaptive_skips
from swapjudge.core.analysis import adaptive_view
from swapjudge.errors import SwapjudgeError
from swapjudge.store import Store


def run_records(store: Store, run_id: int) -> list[dict[str, Any]]:
    """A run's presentation records with the run's registration (configuration hash, tie policy, the systems a and
    b it compared and, for an adaptive run, its threshold) attached, so a later analysis applies what the run was
    registered with."""
    from swapjudge.store.reader import is_listwise_run

    info = store.run(run_id)
    if is_listwise_run(info):  # best of N: the seed, rubric and gate the run was registered with
        gates = info.config.get("gates") or {}
        listwise = {"config_hash": info.config_hash, "seed": info.config.get("seed"),
                    "rubric_hash": info.rubric_hash,
                    "registered_min_consistency": gates.get("min_self_consistency", 0.70)}
        return [{**rec, **listwise} for rec in store.presentation_records(run_id)]
    extra = {"config_hash": info.config_hash, "registered_tie_policy": info.config.get("tie_policy")}
    pairs = info.config.get("pairs") or {}
    if pairs.get("a") and pairs.get("b"):
        # which system the run's win rate is of: `analyze` of the export then reads it the same way round
        extra |= {"registered_a": pairs["a"], "registered_b": pairs["b"]}
    if info.config.get("adaptive_swap") is not None:
        # the skipped swaps are part of the run: the analysis of the export accepts and counts them as `run` does
        extra["registered_adaptive_swap"] = float(info.config["adaptive_swap"])
    return [{**rec, **extra} for rec in store.presentation_records(run_id)]


def run_record_set(store: Store, run_id: int) -> Any:
    """A stored run's calls as a validated `RecordSet` (core fields and verdict probabilities). A pair with one
    usable order (an interrupted run, a failed call, a single-order run) is incomplete rather than an error."""
    from swapjudge.reading.records import records_from_dicts
    from swapjudge.store.reader import is_listwise_run

    if is_listwise_run(store.run(run_id)):
        raise SwapjudgeError(f"{store.path}: run {run_id} is a best-of-N (listwise) run: `swapjudge report` and "
                             "`export` read it; commands that compare two answers at a time do not")
    # the probabilities let the analysis show debiased verdicts, as it does for the run's export
    core = ("judge", "round", "item", "first", "second", "verdict", "label", "p_first", "p_second", "strength")
    # `inferred` rows (an older swapjudge's stand-ins for swapped calls adaptive swapping skipped) are no verdicts
    rows = [{k: rec[k] for k in core if k in rec} for rec in store.presentation_records(run_id)
            if rec["source"] != "inferred"]
    if not rows:
        raise SwapjudgeError(f"run {run_id} has no stored calls to analyse")
    return records_from_dicts(rows, source=f"{store.path} run {run_id}", allow_unpaired=True)


def analyze_run(store: Store, run_id: int, records: Any = None, **overrides: Any) -> list[Any]:
    """The analysis of a stored run under the policy, gate and systems it was registered with (`overrides`
    replaces any of analyze's keyword arguments, e.g. `a`/`b` to compare two systems of a many-system run)."""
    from swapjudge.core.analysis import analyze_records

    info = store.run(run_id)
    cfg = info.config
    if records is None:
        records = run_record_set(store, run_id)
    pairs_cfg = cfg.get("pairs") or {}
    settings: dict[str, Any] = {
        "a": pairs_cfg.get("a"),
        "b": pairs_cfg.get("b"),
        "tie_policy": cfg.get("tie_policy", "half_credit"),
        "min_consistency": (cfg.get("gates") or {}).get("min_self_consistency", 0.70),
        "confidence": cfg.get("confidence", 0.95),
    }
    analyses = analyze_records(records, **{**settings, **overrides})
    threshold = cfg.get("adaptive_swap")
    # records carrying the registered threshold got the adaptive treatment in `analyze` already
    if threshold is not None and getattr(records, "registered_adaptive_swap", None) is None:
        heads = _unswapped_calls(store, run_id, float(threshold))
        analyses = [adaptive_view(a, heads, float(threshold), {**settings, **overrides}) for a in analyses]
    return analyses


def _unswapped_calls(store: Store, run_id: int, threshold: float) -> list[dict[str, Any]]:
    """The first calls of an adaptive run's pairs whose swap was skipped (confident enough, twin not stored)."""
    calls = list(store.calls(run_id))
    skipped = adaptive_skips(calls, threshold)
    stored = {(int(c["round"]), str(c["item"]), str(c["first"]), str(c["second"])) for c in calls
              if c["source"] != "inferred"}
    twin = [(int(c["round"]), str(c["item"]), str(c["second"]), str(c["first"])) for c in calls]
    return [c for c, key in zip(calls, twin, strict=True)
            if c["order_index"] == 0 and c["source"] != "inferred" and key in skipped and key not in stored]
