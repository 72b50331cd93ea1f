"""Run history: every stored run with what it was measured under, and what moved between two runs.

Position preference is a property of (judge, prompt template, task): a number measured under one setup says
nothing about another. Each run carries its setup (judge model and version, rubric and its hash, template hash,
schema, tie policy, pair set hash); `history` lists the runs with their swap figures, `compare_runs` says what
changed and how the judge's behaviour moved, with a paired test on the pairs both runs judged, and a run whose
setup was never swap-measured is flagged.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from swapjudge.analysis import JudgeAnalysis
from swapjudge.errors import SwapjudgeError
from swapjudge.pairs import Outcome, PairTable, build_pairs
from swapjudge.records import RecordSet
from swapjudge.stats import Proportion, wilson
from swapjudge.store import RunInfo, Store
from swapjudge.variants import McNemar, mcnemar

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
        consistency=wilson(o.consistent, 0 if analysis.single_order else o.complete, confidence),
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
    from swapjudge.runner import analyze_run, run_record_set

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


def history(store: Store) -> list[HistoryEntry]:
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
             .otherwise(None))
    return f.select(*_PAIR_KEY, (pl.col("outcome") <= Outcome.TIE).alias("consistent"), right.alias("right"))


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
                       "accuracy": None if self.accuracy_test is None else self.accuracy_test.to_dict()},
            "flags": list(self.flags),
        }


def _pairs_of(records: RecordSet) -> PairTable:
    return records.pairs if records.pairs is not None else build_pairs(records.frame)


def compare_runs(store: Store, run_a: int, run_b: int) -> RunComparison:
    """What changed between two runs and how the judge's behaviour moved, with paired tests on shared pairs."""
    if run_a == run_b:
        raise SwapjudgeError("name two different runs")
    entries = {e.run_id: e for e in history(store)}
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
                         tuple(flags))
