"""What `decide` reads from a store a live cascade wrote: one verdict per pair, fail closed.

A cascade stores one run per judge (each marked with its cascade, its place and its threshold). Each pair's
verdict is that of the first judge whose confidence reached its threshold (its two calls, under the judge name
`cascade`); a pair no judge settled takes people's vote where the cascade's labels file has one (two calls naming
the voted answer); every other unsettled pair counts against the candidate: two calls the incumbent wins
(`count_against`). The selection by confidence is why a rate over the settled pairs alone is never read.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from swapjudge.errors import InputError

CASCADE_JUDGE = "cascade"
PairKey = tuple[str, str, str]


def _tier_runs(store: Any, marker: dict[str, Any]) -> list[Any]:
    """The latest run of each judge of this cascade, in cascade order (a judge nothing reached has none)."""
    latest: dict[int, Any] = {}
    for info in store.runs():
        mine = (info.config or {}).get("cascade_tier")
        same = isinstance(mine, dict) and all(mine.get(k) == marker.get(k) for k in ("cascade", "thresholds"))
        if same and isinstance(mine, dict):
            latest[int(mine["index"])] = info  # runs come in id order: the last one wins
    return [latest[i] for i in sorted(latest)]


def cascade_records(store: Any, info: Any) -> tuple[Any, dict[str, Any]]:
    """The cascade's verdicts as records (see the module's docstring), with what `decide` adds for it: the pairs
    no judge and nobody settled (`cascade_unsettled`) and those people settled (`cascade_people`)."""
    from swapjudge.core.confidence import VERDICT_TIE, VERDICT_X, records_confidence
    from swapjudge.reading.records import records_from_dicts
    from swapjudge.store.analysis import run_record_set

    marker = info.config["cascade_tier"]
    runs = _tier_runs(store, marker)
    if any(r.status != "done" for r in runs):
        unfinished = next(r for r in runs if r.status != "done")
        raise InputError(f"the cascade's run {unfinished.id} (judge {unfinished.judge!r}) is {unfinished.status}: "
                         "run the cascade's configuration again to finish it before deciding", path=str(store.path))
    rows: list[dict[str, Any]] = []
    settled: set[PairKey] = set()
    order: list[PairKey] = []
    for tier_run in runs:
        threshold = tier_run.config["cascade_tier"].get("threshold")
        frame = run_record_set(store, tier_run.id).frame
        pairs, conf = records_confidence(frame)
        keys = [(str(i), str(x), str(y)) for i, x, y in pairs.frame.select("item", "x", "y").iter_rows()]
        if not order:
            order = keys
        mask = conf.settled(threshold) if threshold is not None else [False] * len(keys)
        for key, ok, verdict in zip(keys, list(mask), conf.verdict.tolist(), strict=True):
            if not ok or key in settled:
                continue
            settled.add(key)
            named = "tie" if verdict == VERDICT_TIE else key[1] if verdict == VERDICT_X else key[2]
            rows += _two_calls(key, named)
    left = [k for k in order if k not in settled]
    if left and len(runs) < len(marker.get("judges") or ()):
        raise InputError(f"the cascade's judge {marker['judges'][len(runs)]!r} has not judged the {len(left):,} "
                         "pair(s) left to it: run the cascade's configuration again to finish it before deciding",
                         path=str(store.path))
    people: dict[str, str] = {}
    if marker.get("labels"):
        from swapjudge.reading.sidefiles import load_labels

        people = load_labels(marker["labels"])
    voted = 0
    unsettled: list[PairKey] = []
    for key in order:
        if key in settled:
            continue
        vote = people.get(key[0])
        if vote in (key[1], key[2], "tie"):
            rows += _two_calls(key, str(vote))
            voted += 1
        else:
            unsettled.append(key)
    if not rows and not unsettled:
        raise InputError("the cascade's runs hold no pairs", path=str(store.path))
    if not rows:
        # nothing settled: every pair a call without a verdict, which `decide` counts as missing (keep)
        rows = [{**row, "verdict": None} for key in unsettled for row in _two_calls(key, "tie")]
        unsettled = []
    records = records_from_dicts(rows, source=f"{store.path} cascade", allow_unpaired=True)
    return records, {"store_path": store.path, "run_id": info.id, "unmade_calls": 0,
                     "order": tuple(dict.fromkeys(k[0] for k in order)), "cascade_unsettled": tuple(unsettled),
                     "cascade_people": voted}


def _two_calls(key: PairKey, named: str) -> list[dict[str, Any]]:
    """Both orders of a pair whose verdict names `named` (an identity, or tie) in each."""
    item, x, y = key

    def slot(first: str) -> str:
        return "tie" if named == "tie" else "first" if named == first else "second"

    return [{"judge": CASCADE_JUDGE, "round": 0, "item": item, "first": x, "second": y, "verdict": slot(x)},
            {"judge": CASCADE_JUDGE, "round": 0, "item": item, "first": y, "second": x, "verdict": slot(y)}]


def count_against(calls: pl.DataFrame, unsettled: tuple[PairKey, ...], candidate: str,
                  incumbent: str) -> tuple[pl.DataFrame, int]:
    """The calls with each unsettled pair of the candidate and the incumbent added as two calls the incumbent
    wins (fail closed), and how many pairs that was."""
    mine = [k for k in unsettled if {k[1], k[2]} == {candidate, incumbent}]
    if not mine:
        return calls, 0
    rows = [row for key in mine for row in _two_calls(key, incumbent)]
    extra = pl.DataFrame(rows, schema={c: calls.schema[c] for c in rows[0]})
    return pl.concat([calls, extra], how="diagonal_relaxed"), len(mine)
