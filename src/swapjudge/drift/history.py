"""Run history: every stored run with what it was measured under, and what moved between two runs.

Position preference is a property of (judge, prompt template, task): a number measured under one setup says
nothing about another. Each run carries its setup (judge model and version, rubric and its hash, template hash,
schema, tie policy, pair set hash); `history` lists the runs with their swap figures, `compare_runs` says what
changed and how the judge's behaviour moved, with a paired test on the pairs both runs judged, and a run whose
setup was never swap-measured is flagged.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from swapjudge.core.analysis import JudgeAnalysis
from swapjudge.core.stats import Proportion, cluster_design, proportion_interval, wilson
from swapjudge.errors import SwapjudgeError
from swapjudge.probes.variants import McNemar, mcnemar
from swapjudge.reading.pairs import Outcome, PairTable, build_pairs
from swapjudge.reading.records import RecordSet
from swapjudge.store import RunInfo, Store

STALE_SWAP = "position preference last measured under another template"
NEVER_MEASURED = "position preference never measured: no run of this store judged both orders"


def _short(value: str | None) -> str | None:
    return None if value is None else value[:12]


@dataclass(frozen=True)
class Setup:
    """What a run was measured under."""

    judge: str
    judge_model: str | None
    judge_version: str | None
    judge_hash: str
    rubric_hash: str | None
    template_hash: str | None
    schema: str | None
    tie_policy: str | None
    pair_set_hash: str | None
    pairs_digest: str
    orders: str

    @classmethod
    def of(cls, info: RunInfo) -> Setup:
        return cls(info.judge, info.judge_model, info.judge_version, info.judge_hash, info.rubric_hash,
                   info.template_hash, info.schema, info.tie_policy, info.pair_set_hash, info.pairs_digest,
                   info.orders)

    @property
    def swap_key(self) -> tuple[str, str | None, str | None]:
        """What position preference depends on besides the task: the judge (its settings and version
        included), the rubric and the template (the schema is part of the template)."""
        return (self.judge_hash, self.rubric_hash, self.template_hash)

    def differences(self, other: Setup) -> list[str]:
        """Names of the swap-relevant parts that differ from `other`."""
        out = []
        if (self.judge_model, self.judge_version, self.judge_hash) != (
                other.judge_model, other.judge_version, other.judge_hash):
            out.append("judge")
        if self.rubric_hash != other.rubric_hash:
            out.append("rubric")
        if self.template_hash != other.template_hash:
            out.append("template")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "judge_model": self.judge_model, "judge_version": self.judge_version,
                "judge_hash": self.judge_hash, "rubric_hash": self.rubric_hash, "template_hash": self.template_hash,
                "schema": self.schema, "tie_policy": self.tie_policy, "pair_set_hash": self.pair_set_hash,
                "pairs_digest": self.pairs_digest, "orders": self.orders}


def _rate_dict(p: Proportion) -> dict[str, Any]:
    return {"rate": p.rate, "low": p.low, "high": p.high, "k": p.k, "n": p.n}


@dataclass(frozen=True)
class Behaviour:
    """The judge's behaviour in one run, each figure a proportion with its interval (over pairs or calls)."""

    consistency: Proportion  # consistent / complete pairs
    first_slot: Proportion  # first / (first + second) calls
    tie: Proportion  # tie / usable calls
    accuracy: Proportion | None  # right in both orders / labelled complete pairs

    def to_dict(self) -> dict[str, Any]:
        return {"consistency": _rate_dict(self.consistency), "first_slot_rate": _rate_dict(self.first_slot),
                "tie_rate": _rate_dict(self.tie),
                "accuracy": None if self.accuracy is None else _rate_dict(self.accuracy)}


def behaviour(analysis: JudgeAnalysis, confidence: float = 0.95) -> Behaviour:
    v = analysis.verdicts
    o = analysis.outcomes
    acc = analysis.accuracy
    return Behaviour(
        # the analysis' own interval: over items when pairs share one
        consistency=(Proportion(o.consistent, o.complete, c.rate, c.low, c.high)
                     if (c := analysis.consistency) is not None and c.confidence == confidence
                     else wilson(o.consistent, 0 if analysis.single_order else o.complete, confidence)),
        first_slot=wilson(v.first, v.first + v.second, confidence),
        tie=wilson(v.tie, v.first + v.second + v.tie, confidence),
        accuracy=None if acc is None else wilson(acc.right_both, acc.pairs, confidence),
    )


@dataclass(frozen=True)
class HistoryEntry:
    """One run in the history: its setup, its swap figures, its gate verdict and any flag."""

    run_id: int
    started_at: str
    status: str
    setup: Setup
    analysis: JudgeAnalysis | None
    behaviour: Behaviour | None
    flags: tuple[str, ...] = field(default_factory=tuple)
    error: str | None = None

    @property
    def measured_swap(self) -> bool:
        """Did this run measure swap-consistency (both orders, at least one complete pair)?"""
        return self.analysis is not None and self.analysis.consistency is not None \
            and self.analysis.consistency.rate is not None

    def to_dict(self) -> dict[str, Any]:
        a = self.analysis
        out: dict[str, Any] = {"run": self.run_id, "started_at": self.started_at, "status": self.status,
                               "setup": self.setup.to_dict(), "flags": list(self.flags), "error": self.error}
        if a is None:
            return out
        d = a.to_dict()
        out.update({"pairs": d["pairs"], "consistency": d["consistency"], "flip_direction": d["flip_direction"],
                    "verdicts": d["verdicts"], "gate": d["gate"], "systems": d.get("systems"),
                    "win_rate": d.get("win_rate"), "accuracy": d.get("accuracy")})
        if self.behaviour is not None:
            out["behaviour"] = self.behaviour.to_dict()
        return out


@dataclass(frozen=True)
class LoadedRun:
    info: RunInfo
    records: RecordSet | None
    analysis: JudgeAnalysis | None
    error: str | None


def load_run(store: Store, run_id: int) -> LoadedRun:
    """A stored run with its records and its analysis under the registered policy (an error kept, not raised:
    a history lists every run, including one with no calls)."""
    from swapjudge.store.analysis import analyze_run, run_record_set

    info = store.run(run_id)
    try:
        records = run_record_set(store, run_id)
        analyses = analyze_run(store, run_id, records)
    except SwapjudgeError as err:
        return LoadedRun(info, None, None, str(err))
    return LoadedRun(info, records, analyses[0] if analyses else None, None)


def _flags(setup: Setup, measured: bool, earlier: list[HistoryEntry]) -> tuple[str, ...]:
    """A run that did not measure the swap itself is flagged unless an earlier run measured it under the same
    judge, rubric and template."""
    if measured:
        return ()
    same = [e for e in earlier if e.measured_swap and e.setup.swap_key == setup.swap_key]
    if same:
        last_same = same[-1].setup
        pairs_same = (last_same.pair_set_hash or last_same.pairs_digest) == (setup.pair_set_hash or setup.pairs_digest)
        task = "" if pairs_same else "; measured on other pairs"
        return (f"position preference taken from run {same[-1].run_id} (same judge, rubric and template{task})",)
    others = [e for e in earlier if e.measured_swap]
    if not others:
        return (NEVER_MEASURED,)
    last = others[-1]
    what = ", ".join(setup.differences(last.setup)) or "setup"
    return (f"{STALE_SWAP} (run {last.run_id}; changed since: {what})",)


def run_history(store: Store) -> list[HistoryEntry]:
    """Every run of the store in order, analysed under the policy it was registered with."""
    entries: list[HistoryEntry] = []
    for info in store.runs():
        loaded = load_run(store, info.id)
        setup = Setup.of(info)
        a = loaded.analysis
        conf = float(info.config.get("confidence", 0.95))
        entry = HistoryEntry(info.id, info.started_at, info.status, setup, a,
                             None if a is None else behaviour(a, conf), error=loaded.error)
        flags = _flags(setup, entry.measured_swap, entries)
        entries.append(HistoryEntry(entry.run_id, entry.started_at, entry.status, setup, a, entry.behaviour,
                                    flags, loaded.error))
    return entries


# ---- comparing two runs --------------------------------------------------------------------------------


_PAIR_KEY = ["round", "item", "x", "y"]


def _per_pair(pairs: PairTable) -> pl.DataFrame:
    """Complete pairs with whether each was consistent and, when labelled, right in both orders."""
    f = pairs.frame.filter(pl.col("outcome") != Outcome.INCOMPLETE)
    label = pl.col("label")
    right = (pl.when(label == pl.col("x")).then(pl.col("outcome") == Outcome.X_WINS)
             .when(label == pl.col("y")).then(pl.col("outcome") == Outcome.Y_WINS)
             .when(label == "tie").then(pl.col("outcome") == Outcome.TIE)  # a consistent tie matches a tie label
             .otherwise(None))
    return f.select(*_PAIR_KEY, (pl.col("outcome") <= Outcome.TIE).alias("consistent"), right.alias("right"))


@dataclass(frozen=True)
class PairedDifference:
    """A proportion under run B minus the same under run A, on the same units (shared pairs or calls), with
    Newcombe's hybrid score interval for paired proportions (method 10 of Newcombe 1998: the two runs' Wilson
    intervals combined with the continuity-corrected correlation of the paired outcomes). When units share an item
    (calls of one pair, pairs of one question) the same construction runs on items: each run's Wilson interval on
    its effective sample size and the correlation of the two runs' item totals (`method` says which)."""

    what: str
    units: int
    both: int  # true under both runs
    only_a: int
    only_b: int
    neither: int
    rate_a: float | None
    rate_b: float | None
    difference: float | None  # rate_b - rate_a
    low: float | None
    high: float | None
    confidence: float
    method: str = "newcombe10"
    independent: str = "units"  # what the interval treats as independent: each unit, or each item
    clusters: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def newcombe_phi(both: int, only_a: int, only_b: int, neither: int) -> float:
    """Newcombe's (1998) continuity-corrected correlation of a paired 2x2 table: AD - BC is reduced by N/2 when
    above it, taken as 0 between 0 and N/2, kept when negative; 0 when a margin is empty."""
    n = both + only_a + only_b + neither
    denom = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    if denom == 0:
        return 0.0
    cross = both * neither - only_a * only_b
    corrected = cross - n / 2 if cross > n / 2 else (0.0 if cross >= 0 else cross)
    return corrected / math.sqrt(denom)


def _square_and_add(pa: float, pb: float, a: tuple[float, float], b: tuple[float, float],
                    phi: float) -> tuple[float, float, float]:
    """(difference, low, high) of pb - pa from each rate's interval (low, high) and their correlation."""
    d_low = math.sqrt(max(0.0, (pb - b[0]) ** 2 - 2 * phi * (pb - b[0]) * (a[1] - pa) + (a[1] - pa) ** 2))
    d_high = math.sqrt(max(0.0, (b[1] - pb) ** 2 - 2 * phi * (b[1] - pb) * (pa - a[0]) + (pa - a[0]) ** 2))
    diff = pb - pa
    return diff, max(-1.0, diff - d_low), min(1.0, diff + d_high)


def newcombe_paired(both: int, only_a: int, only_b: int, neither: int,
                    confidence: float = 0.95) -> tuple[float | None, float | None, float | None]:
    """(difference, low, high) for P(true under B) - P(true under A) from a paired 2x2 table: Newcombe's (1998)
    method 10, the Wilson intervals of both margins with the corrected correlation; all None when empty."""
    n = both + only_a + only_b + neither
    if n == 0:
        return None, None, None
    wa, wb = wilson(both + only_a, n, confidence), wilson(both + only_b, n, confidence)
    assert wa.low is not None and wa.high is not None and wb.low is not None and wb.high is not None
    return _square_and_add((both + only_a) / n, (both + only_b) / n, (wa.low, wa.high), (wb.low, wb.high),
                           newcombe_phi(both, only_a, only_b, neither))


def _clustered_paired(x: np.ndarray, y: np.ndarray, items: np.ndarray,
                      confidence: float) -> tuple[float, float, float, int]:
    """Method 10's construction over items: each run's Wilson interval on its effective sample size (units over
    the design effect of sharing an item) and the correlation of the two runs' residual totals per item."""
    # no floor: a pair's two calls are often negatively related (a consistent pair names slot 1 once), and the
    # difference is only as wide as the items' totals say
    ma = proportion_interval(x, confidence, items, floor=False)
    mb = proportion_interval(y, confidence, items, floor=False)
    keys = np.asarray(items)
    _, codes = np.unique(keys.astype(str) if keys.dtype == object else keys, return_inverse=True)
    g = int(codes.max()) + 1
    ta = np.bincount(codes, weights=x - x.mean(), minlength=g)
    tb = np.bincount(codes, weights=y - y.mean(), minlength=g)
    norm = math.sqrt(float(np.sum(ta**2) * np.sum(tb**2)))
    phi = 0.0 if norm == 0 else float(np.sum(ta * tb)) / norm
    assert ma.value is not None and ma.low is not None and ma.high is not None
    assert mb.value is not None and mb.low is not None and mb.high is not None
    diff, low, high = _square_and_add(ma.value, mb.value, (ma.low, ma.high), (mb.low, mb.high), phi)
    return diff, low, high, g


def paired_difference(what: str, a: np.ndarray, b: np.ndarray, confidence: float = 0.95,
                      items: np.ndarray | None = None) -> PairedDifference:
    """From two boolean vectors over the same units (run A's outcome, run B's); `items` (each unit's item) makes
    units of the same item move together when some item holds more than one unit."""
    x, y = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    both, only_a, only_b = int(np.sum(x & y)), int(np.sum(x & ~y)), int(np.sum(~x & y))
    neither = int(x.size) - both - only_a - only_b
    n = int(x.size)
    rates = (None if n == 0 else float(x.mean()), None if n == 0 else float(y.mean()))
    shared = items is not None and n > 0 and cluster_design(x.astype(float), items).units == "items"
    if shared and items is not None:
        diff, low, high, g = _clustered_paired(x.astype(float), y.astype(float), items, confidence)
        return PairedDifference(what, n, both, only_a, only_b, neither, *rates, diff, low, high, confidence,
                                "newcombe10_clustered", "items", g)
    d, lo, hi = newcombe_paired(both, only_a, only_b, neither, confidence)
    return PairedDifference(what, n, both, only_a, only_b, neither, *rates, d, lo, hi, confidence,
                            "newcombe10", "units", n)


def _first_slot_calls(records: RecordSet) -> pl.DataFrame:
    """Calls between two different systems with a first or second verdict, keyed by round, item and slots."""
    return records.frame.filter((pl.col("first") != pl.col("second")) & pl.col("verdict").is_in(["first", "second"])
                                ).select("round", "item", "first", "second",
                                         (pl.col("verdict") == "first").alias("named_first"))


def paired_differences(a: RecordSet, b: RecordSet, confidence: float = 0.95) -> tuple[PairedDifference, ...]:
    """Run B minus run A on what both runs judged: swap-consistency and accuracy (right in both orders) over the
    shared complete pairs, and the first-slot rate over the shared calls (same round, item and slots) that named
    a slot in both runs. Units that share an item (the two calls of a pair, the pairs of one question) move
    together: their intervals are over items."""
    common = _per_pair(_pairs_of(a)).join(_per_pair(_pairs_of(b)), on=_PAIR_KEY, how="inner", suffix="_b")
    items = common.get_column("item").cast(pl.String).to_numpy()
    out = [paired_difference("consistency", common.get_column("consistent").to_numpy(),
                             common.get_column("consistent_b").to_numpy(), confidence, items)]
    calls = _first_slot_calls(a).join(_first_slot_calls(b), on=["round", "item", "first", "second"], how="inner",
                                      suffix="_b")
    out.append(paired_difference("first_slot_rate", calls.get_column("named_first").to_numpy(),
                                 calls.get_column("named_first_b").to_numpy(), confidence,
                                 calls.get_column("item").cast(pl.String).to_numpy()))
    labelled = common.filter(pl.col("right").is_not_null() & pl.col("right_b").is_not_null())
    if labelled.height:
        out.append(paired_difference("accuracy", labelled.get_column("right").to_numpy(),
                                     labelled.get_column("right_b").to_numpy(), confidence,
                                     labelled.get_column("item").cast(pl.String).to_numpy()))
    return tuple(out)


def paired_tests(a: PairTable, b: PairTable) -> tuple[McNemar, McNemar | None]:
    """McNemar on per-pair consistency over the pairs both runs judged completely (same round, item, and two
    identities), and on per-pair correctness (right in both orders) over those shared pairs that carry a label."""
    common = _per_pair(a).join(_per_pair(b), on=_PAIR_KEY, how="inner", suffix="_b")
    cons = mcnemar(common.get_column("consistent").to_numpy(), common.get_column("consistent_b").to_numpy())
    labelled = common.filter(pl.col("right").is_not_null() & pl.col("right_b").is_not_null())
    acc = None
    if labelled.height:
        acc = mcnemar(labelled.get_column("right").to_numpy(), labelled.get_column("right_b").to_numpy())
    return cons, acc


@dataclass(frozen=True)
class Change:
    what: str
    before: Any
    after: Any

    def to_dict(self) -> dict[str, Any]:
        return {"what": self.what, "before": self.before, "after": self.after}


def setup_changes(a: RunInfo, b: RunInfo) -> list[Change]:
    """What differs between two runs' setups (judge, rubric, template, schema, policy, pairs, orders)."""
    pairs_a, pairs_b = (a.pair_set_hash or a.pairs_digest), (b.pair_set_hash or b.pairs_digest)
    fields = [
        ("judge", a.judge, b.judge),
        ("judge_model", a.judge_model, b.judge_model),
        ("judge_version", a.judge_version, b.judge_version),
        ("judge_settings", _short(a.judge_hash), _short(b.judge_hash)),
        ("rubric", _short(a.rubric_hash), _short(b.rubric_hash)),
        ("template", _short(a.template_hash), _short(b.template_hash)),
        ("schema", a.schema, b.schema),
        ("tie_policy", a.tie_policy, b.tie_policy),
        ("pairs", _short(pairs_a), _short(pairs_b)),
        ("orders", a.orders, b.orders),
    ]
    return [Change(name, x, y) for name, x, y in fields if x != y]


def rubric_diff(a: str | None, b: str | None) -> list[str]:
    """A unified diff of two rubric texts (empty when equal or unknown)."""
    if a is None or b is None or a == b:
        return []
    return list(difflib.unified_diff(a.splitlines(), b.splitlines(), "rubric (before)", "rubric (after)",
                                     lineterm="", n=1))


@dataclass(frozen=True)
class RunComparison:
    a: HistoryEntry
    b: HistoryEntry
    changes: tuple[Change, ...]
    rubric_diff: tuple[str, ...]
    shared_pairs: int
    consistency_test: McNemar
    accuracy_test: McNemar | None
    flags: tuple[str, ...]
    paired_differences: tuple[PairedDifference, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        ba, bb = self.a.behaviour, self.b.behaviour
        moved: dict[str, Any] = {}
        if ba is not None and bb is not None:
            da, db = ba.to_dict(), bb.to_dict()
            for name in ("consistency", "first_slot_rate", "tie_rate", "accuracy"):
                before, after = da[name], db[name]
                diff = None
                if before and after and before["rate"] is not None and after["rate"] is not None:
                    diff = after["rate"] - before["rate"]
                moved[name] = {"before": before, "after": after, "difference": diff}
        return {
            "runs": {"a": self.a.run_id, "b": self.b.run_id},
            "changes": [c.to_dict() for c in self.changes],
            "rubric_diff": list(self.rubric_diff),
            "behaviour": moved,
            "shared_pairs": self.shared_pairs,
            "paired": {"consistency": self.consistency_test.to_dict(),
                       "accuracy": None if self.accuracy_test is None else self.accuracy_test.to_dict(),
                       "differences": {d.what: d.to_dict() for d in self.paired_differences}},
            "flags": list(self.flags),
        }


def _pairs_of(records: RecordSet) -> PairTable:
    return records.pairs if records.pairs is not None else build_pairs(records.frame)


def compare_runs(store: Store, run_a: int, run_b: int) -> RunComparison:
    """What changed between two runs and how the judge's behaviour moved, with paired tests on shared pairs."""
    if run_a == run_b:
        raise SwapjudgeError("name two different runs")
    entries = {e.run_id: e for e in run_history(store)}
    for rid in (run_a, run_b):
        if rid not in entries:
            raise SwapjudgeError(f"{store.path}: no run {rid}")
    ea, eb = entries[run_a], entries[run_b]
    la, lb = load_run(store, run_a), load_run(store, run_b)
    for loaded in (la, lb):
        if loaded.records is None:
            raise SwapjudgeError(f"run {loaded.info.id}: {loaded.error}")
    assert la.records is not None and lb.records is not None
    cons, acc = paired_tests(_pairs_of(la.records), _pairs_of(lb.records))
    conf = float(lb.info.config.get("confidence", 0.95))
    diffs = paired_differences(la.records, lb.records, conf)
    flags = list(eb.flags)
    if (la.info.pair_set_hash or la.info.pairs_digest) != (lb.info.pair_set_hash or lb.info.pairs_digest):
        flags.append("the pairs differ between the runs: the paired test matches pairs by item and systems, "
                     "whose texts may have changed")
    if not eb.measured_swap and ea.measured_swap:
        what = eb.setup.differences(ea.setup)
        if what and not any(f.startswith(STALE_SWAP) for f in flags):
            flags.append(f"{STALE_SWAP} (run {run_a}; changed since: {', '.join(what)})")
    return RunComparison(ea, eb, tuple(setup_changes(la.info, lb.info)),
                         tuple(rubric_diff(la.info.rubric_text, lb.info.rubric_text)), cons.pairs, cons, acc,
                         tuple(flags), diffs)
