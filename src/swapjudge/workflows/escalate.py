"""`swapjudge escalate`: the escalation cascade offline, from records of several judges on the same pairs.

Every pair starts at the first (cheapest) judge; a judge settles the pairs whose confidence (core.confidence)
reaches its threshold, the rest go to the next judge. The thresholds are fitted by fixed-sequence testing
(core.cascade) on labelled calibration pairs, or read from a thresholds file saved by an earlier fit
(`thresholds_document`), which refuses records from another judge configuration.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from swapjudge.core import arguments
from swapjudge.core.cascade import (
    LABEL_NONE,
    LABEL_TIE,
    LABEL_X,
    LABEL_Y,
    UNSETTLED,
    CascadeTier,
    Escalation,
    TierCalibration,
    agreement_flags,
    calibrate_cascade,
    realized_agreement,
    route,
)
from swapjudge.core.confidence import REASONS, PairConfidence, records_confidence
from swapjudge.errors import ArgumentError, InputError
from swapjudge.reading.records import read_records

THRESHOLDS_FORMAT = "swapjudge-escalate-thresholds/1"
# the provenance columns that identify a judge configuration when the records carry them
CONFIGURATION_FIELDS = ("judge_hash", "judge_model", "model", "rubric_hash", "template_hash", "prompt_template",
                        "schema")
_KEY = ("round", "item", "x", "y")


def configuration_of(frame: pl.DataFrame, judge: str) -> dict[str, Any]:
    """A judge's configuration as its records show it: its name and the distinct values of the provenance
    columns they carry (CONFIGURATION_FIELDS), with the hash of both. `basis` names what was compared: only
    `judge` when the records carry no provenance."""
    calls = frame.filter(pl.col("judge") == judge)
    found: dict[str, Any] = {"judge": judge}
    for name in CONFIGURATION_FIELDS:
        if name in calls.columns:
            values = sorted({str(v) for v in calls.get_column(name).drop_nulls().to_list()})
            if values:
                found[name] = values
    digest = hashlib.sha256(json.dumps(found, sort_keys=True).encode()).hexdigest()
    return {"hash": digest, "basis": sorted(found)}


def _labels_hash(keys: list[tuple[str, ...]], labels: list[str | None]) -> str:
    rows = sorted(f"{k[1]}\t{k[2]}\t{k[3]}\t{lab}" for k, lab in zip(keys, labels, strict=True) if lab is not None)
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


class _Judged:
    """One judge's pairs and confidences, aligned to the cascade's pairs (NaN where it has no record)."""

    def __init__(self, frame: pl.DataFrame, judge: str, index: Mapping[tuple[str, ...], int], n: int) -> None:
        calls = frame.filter(pl.col("judge") == judge)
        pairs, conf = records_confidence(calls)
        rows = [index[k] for k in _keys(pairs.frame)]
        self.confidence = np.full(n, np.nan)
        self.verdict = np.full(n, -1, dtype=np.int8)
        self.reason = np.full(n, -1, dtype=np.int8)  # -1: no record of the pair
        self.swap_seen = np.ones(n, dtype=bool)
        self.confidence[rows] = conf.confidence
        self.verdict[rows] = conf.verdict
        self.reason[rows] = conf.reason
        self.swap_seen[rows] = conf.swap_seen
        self.conf: PairConfidence = conf
        self.cost = np.zeros(n)
        self.has_cost = "cost_usd" in calls.columns and calls.get_column("cost_usd").drop_nulls().len() > 0
        if self.has_cost:
            per_pair = _pair_cost(calls)
            for key, value in per_pair.items():
                if key in index:
                    self.cost[index[key]] = value


def _keys(table: pl.DataFrame) -> list[tuple[str, ...]]:
    return [tuple(str(v) for v in row) for row in table.select(_KEY).iter_rows()]


def _pair_cost(calls: pl.DataFrame) -> dict[tuple[str, ...], float]:
    """Each pair's cost: its calls' `cost_usd` summed (identical-answer probe calls left out)."""
    paired = calls.filter(pl.col("first") != pl.col("second")).with_columns(
        pl.min_horizontal("first", "second").alias("x"), pl.max_horizontal("first", "second").alias("y"),
        pl.col("cost_usd").cast(pl.Float64, strict=False).fill_null(0.0).alias("_cost"))
    summed = paired.group_by(list(_KEY)).agg(pl.col("_cost").sum())
    return {tuple(str(v) for v in row[:4]): float(row[4]) for row in summed.select(*_KEY, "_cost").iter_rows()}


def _relation(labels: list[str | None], keys: list[tuple[str, ...]]) -> np.ndarray:
    out = np.full(len(keys), LABEL_NONE, dtype=np.int8)
    for i, (label, key) in enumerate(zip(labels, keys, strict=True)):
        if label is None:
            continue
        out[i] = LABEL_X if label == key[2] else LABEL_Y if label == key[3] else LABEL_TIE if label == "tie" \
            else LABEL_NONE
    return out


def read_thresholds(path: str | Path) -> dict[str, Any]:
    """A thresholds file written from `thresholds_document`, checked."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no such file", path=str(path)) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"not a thresholds file: {err}", path=str(path)) from None
    if not isinstance(doc, dict) or doc.get("format") != THRESHOLDS_FORMAT:
        raise InputError(f"not a thresholds file (expected format {THRESHOLDS_FORMAT!r})", path=str(path),
                         field="format")
    tiers = doc.get("tiers")
    if not isinstance(tiers, list) or not tiers:
        raise InputError("must list the judges' thresholds", path=str(path), field="tiers")
    for n, tier in enumerate(tiers):
        ok = (isinstance(tier, dict) and isinstance(tier.get("judge"), str)
              and (tier.get("threshold") is None or isinstance(tier.get("threshold"), int | float))
              and isinstance(tier.get("configuration"), dict))
        if not ok:
            raise InputError("each tier needs judge, threshold (a number or null) and configuration",
                             path=str(path), field=f"tiers[{n}]")
    return doc


def escalate(source: str | Path | Any, *, judges: Sequence[str], alpha: float = 0.1, delta: float = 0.1,
             labels: str | Path | None = None, split: float | None = None, seed: int = 0,
             thresholds: str | Path | Mapping[str, Any] | None = None, confidence: float = 0.95) -> Escalation:
    """The cascade of `judges` (cheapest first) over the records' pairs.

    Without `thresholds`, each judge's threshold is fitted on the labelled pairs (the records' `label` field, or
    `labels`: a file of item and label): on all of them, or with `split` on a seeded share of the labelled items,
    the rest being the test its realized agreement is measured on. With `thresholds` (a path or the mapping
    `thresholds_document` made), those are applied; records from another judge configuration are refused."""
    judges = list(arguments.names(judges, "judges"))
    if not judges:
        raise ArgumentError("{judges} must name at least one judge, cheapest first", "judges")
    if len(set(judges)) != len(judges):
        raise ArgumentError("{judges} names a judge twice", "judges")
    alpha = arguments.number(alpha, "alpha", low=0.0, high=1.0, open_low=True, open_high=True)
    delta = arguments.number(delta, "delta", low=0.0, high=1.0, open_low=True, open_high=True)
    split = arguments.number(split, "split", low=0.0, high=1.0, open_low=True, open_high=True, optional=True)
    seed = arguments.integer(seed, "seed", minimum=0)
    confidence = arguments.confidence(confidence)
    source = arguments.records_source(source, "source")
    labels = arguments.path(labels, "labels", what="a labels file's path")
    if thresholds is not None:
        thresholds = arguments.mapping_or_path(thresholds, "thresholds", (), "a thresholds file's path or mapping")
    if split is not None and thresholds is not None:
        raise ArgumentError("{split} fits thresholds and {thresholds} applies saved ones: give one", "split",
                            "thresholds")

    records = read_records(source, allow_unpaired=True)
    frame = records.frame
    if labels is not None:
        from swapjudge.reading.sidefiles import load_labels, with_labels

        frame = with_labels(frame, load_labels(labels))
    present = set(records.judges)
    missing = [j for j in judges if j not in present]
    if missing:
        raise InputError(f"no records of judge {missing[0]!r} (the records hold: "
                         f"{', '.join(repr(j) for j in sorted(present)) or 'no judge names'})", path=records.source,
                         field="judge")
    frame = frame.filter(pl.col("judge").is_in(judges))

    # the cascade's pairs: every pair any of its judges has, the first judge's order first
    index: dict[tuple[str, ...], int] = {}
    label_of: dict[tuple[str, ...], str | None] = {}
    from swapjudge.reading.pairs import build_pairs

    for judge in judges:
        table = build_pairs(frame.filter(pl.col("judge") == judge)).frame
        for key, label in zip(_keys(table), table.get_column("label").to_list(), strict=True):
            index.setdefault(key, len(index))
            if label is not None:
                label_of.setdefault(key, str(label))
    keys = list(index)
    n = len(keys)
    if n == 0:
        raise InputError("no pairs (two different identities) among the named judges' records", path=records.source)
    label_list = [label_of.get(k) for k in keys]
    relation = _relation(label_list, keys)
    items = np.array([k[1] for k in keys], dtype=object)
    judged = [_Judged(frame, judge, index, n) for judge in judges]

    labelled = relation != LABEL_NONE
    saved = None if thresholds is None else (thresholds if isinstance(thresholds, Mapping)
                                             else read_thresholds(thresholds))
    calibrations: list[TierCalibration | None]
    if saved is not None:
        where = "thresholds" if isinstance(thresholds, Mapping) else str(thresholds)
        lams = _saved_thresholds(saved, judges, frame, judged, where)
        calibrations = [None] * len(judges)
        fitted = {str(i) for i in saved.get("fitted_items", [])}
        calib = np.zeros(n, dtype=bool)
        applied = np.ones(n, dtype=bool)
        test = labelled & ~np.isin(items, list(fitted))
        applied_to, labels_hash = "records", saved.get("labels_hash")
        # the levels the thresholds were fitted at
        alpha, delta = _saved_level(saved, "alpha", where), _saved_level(saved, "delta", where)
        calibration_items = len(fitted)
        fitted_items = set(fitted)
    else:
        if not labelled.any():
            raise InputError("no labelled pairs to calibrate on: records with a `label` naming one of the pair's "
                             "two identities (or tie), a labels file, or saved thresholds to apply",
                             path=records.source, field="label")
        labelled_items = np.array(sorted(set(items[labelled].tolist())), dtype=object)
        if split is None:
            calib_items = labelled_items
        else:
            rng = np.random.default_rng(seed)
            shuffled = labelled_items[rng.permutation(labelled_items.size)]
            take = round(split * labelled_items.size)
            if take < 1 or take >= labelled_items.size:
                raise ArgumentError(f"{{split}} {split:g} of {labelled_items.size} labelled items leaves no "
                                    "calibration or no test item", "split")
            calib_items = shuffled[:take]
        in_calib = np.isin(items, calib_items.tolist())
        calib = labelled & in_calib
        applied = ~in_calib if split is not None else np.ones(n, dtype=bool)
        test = labelled & applied if split is not None else np.zeros(n, dtype=bool)
        cal = calibrate_cascade([j.confidence[calib] for j in judged], [j.verdict[calib] for j in judged],
                                relation[calib], judges=judges, alpha=alpha, delta=delta, clusters=items[calib])
        calibrations = list(cal)
        lams = [c.threshold for c in cal]
        applied_to = "test" if split is not None else "all"
        labels_hash = _labels_hash([k for k, c in zip(keys, calib, strict=True) if c],
                                   [lab for lab, c in zip(label_list, calib, strict=True) if c])
        calibration_items = int(calib_items.size)
        fitted_items = {str(i) for i in calib_items.tolist()}

    tier = route([j.confidence[applied] for j in judged], lams)
    test_a = test[applied]
    items_a = items[applied]
    verdict = np.full(tier.size, -1, dtype=np.int8)
    for t, j in enumerate(judged):
        verdict[tier == t] = j.verdict[applied][tier == t]
    agree = agreement_flags(verdict, relation[applied])
    tiers = []
    reaching = np.ones(tier.size, dtype=bool)
    for t, (judge, j) in enumerate(zip(judges, judged, strict=True)):
        mine = tier == t
        scored = mine & test_a
        tiers.append(CascadeTier(
            judge=judge, measure=j.conf.measure_name, calibration=calibrations[t], threshold=lams[t],
            reached=int(reaching.sum()), settled=int(mine.sum()),
            agreement=realized_agreement(agree[scored], items_a[scored], confidence) if test_a.any() else None,
            cost_usd=float(j.cost[applied][reaching].sum()) if j.has_cost else None,
            no_swap_seen=int((~j.swap_seen[applied]).sum()), configuration=configuration_of(frame, judge)))
        reaching &= ~mine
    settled = tier != UNSETTLED
    scored = settled & test_a
    realized = realized_agreement(agree[scored], items_a[scored], confidence) if test_a.any() else None
    last = judged[-1]
    reason = last.reason[applied][~settled]
    by_reason: dict[str, int] = {}
    for code in reason.tolist():
        name = "no_record" if code < 0 else "below_threshold" if code == 0 else REASONS[code]
        by_reason[name] = by_reason.get(name, 0) + 1
    return Escalation(
        tiers=tuple(tiers), alpha=alpha, delta=delta, applied_to=applied_to, pairs=int(applied.sum()),
        settled=int(settled.sum()), test_pairs=int(test.sum()), realized=realized, unsettled_by_reason=by_reason,
        calibration_pairs=int(calib.sum()), calibration_items=calibration_items, split=split,
        seed=seed if split is not None else None, labels_hash=labels_hash,
        strongest_alone_usd=float(last.cost[applied].sum()) if last.has_cost else None,
        fitted_items=tuple(sorted(fitted_items)))


def _saved_level(saved: Mapping[str, Any], name: str, where: str) -> float:
    value = saved.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise InputError("must be a number strictly between 0 and 1", path=where, field=name)
    return float(value)


def _saved_thresholds(saved: Mapping[str, Any], judges: list[str], frame: pl.DataFrame, judged: list[_Judged],
                      where: str) -> list[float | None]:
    """The saved thresholds in the cascade's order, after checking each judge's configuration and measure."""
    tiers = saved.get("tiers") or []
    names = [t.get("judge") for t in tiers]
    if names != judges:
        raise InputError(f"the thresholds were fitted for the judges {names} in that order, not {judges}",
                         path=where, field="tiers")
    out: list[float | None] = []
    for tier, judge, j in zip(tiers, judges, judged, strict=True):
        now = configuration_of(frame, judge)
        then = tier.get("configuration") or {}
        if now["hash"] != then.get("hash"):
            raise InputError(f"the records of judge {judge!r} come from another judge configuration than the "
                             f"thresholds were fitted on (compared: {', '.join(then.get('basis') or ['judge'])}; "
                             f"records: {', '.join(now['basis'])})", path=where, field="configuration")
        measure = tier.get("measure")
        if measure is not None and j.conf.measure_name not in (measure, "never_settled"):
            raise InputError(f"judge {judge!r}'s thresholds were fitted on the confidence measure {measure!r}; "
                             f"these records give {j.conf.measure_name!r}", path=where, field="measure")
        value = tier.get("threshold")
        out.append(None if value is None else float(value))
    return out


def thresholds_document(result: Escalation) -> dict[str, Any]:
    """What `escalate(..., thresholds=...)` reads back: each judge's threshold with its configuration hash and
    confidence measure, the hash of the calibration labels and the items they were fitted on."""
    if result.applied_to == "records":
        raise ArgumentError("these thresholds were read from {thresholds}, not fitted: there is nothing new to save",
                            "thresholds")
    return {
        "format": THRESHOLDS_FORMAT, "alpha": result.alpha, "delta": result.delta,
        "labels_hash": result.labels_hash, "fitted_items": list(result.fitted_items),
        "guarantee": result.guarantee,
        "tiers": [{"judge": t.judge, "threshold": t.threshold, "measure": t.measure,
                   "configuration": dict(t.configuration or {}),
                   # what a live cascade's dry run prices from: the share of the pairs reaching it this judge settled
                   **({"calibration": {"reached": t.calibration.reached, "settled": t.calibration.settled}}
                      if t.calibration is not None else {})} for t in result.tiers],
    }
