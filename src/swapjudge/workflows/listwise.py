"""`swapjudge analyze` and `swapjudge rank` on listwise (best-of-N) records: each judge's audit (slot shares, the
slot test, winner consistency and its gate, accuracy) beside its Plackett-Luce strengths with slot effects.

A judge below the gate has its strengths withheld, as a pairwise judge's win rate is; its slot effects (what the
order shown did to its picks) are still shown. No head-to-head matrix is ever built from best-of-N picks: a pick
says which answer won among N, not how it did against each other one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swapjudge.core import arguments
from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, DEFAULT_ROUNDS
from swapjudge.core.documents import json_document
from swapjudge.core.listwise import ListwiseAudit, audit
from swapjudge.core.policy import Gate
from swapjudge.errors import ArgumentError, InputError
from swapjudge.outcome import Concluded, Ending, gates_ending
from swapjudge.ranking.plackett_luce import PlackettLuce, fit_plackett_luce
from swapjudge.reading.listwise import ListwiseRecords, load_listwise


@dataclass(frozen=True)
class ListwiseAnalysis:
    """One judge's best-of-N analysis: the audit, the fit (None when it could not be made) and the gate."""

    judge: str
    audit: ListwiseAudit
    fit: PlackettLuce | None
    fit_problem: str | None = None

    @property
    def gate(self) -> Gate:
        return self.audit.gate

    def to_dict(self) -> dict[str, Any]:
        """`swapjudge analyze --format json` for listwise records: everything under `listwise`."""
        body = self.audit.to_dict()
        withheld = not self.gate.passed
        fit = self.fit.to_dict() if self.fit is not None else None
        body["strengths"] = None if withheld or fit is None else fit["strengths"]
        body["strengths_withheld"] = self.gate.reason if withheld else None
        body["slot_effects"] = None if fit is None else fit["slot_effects"]
        body["fit"] = None if fit is None else {k: v for k, v in fit.items()
                                                if k not in ("strengths", "slot_effects")}
        body["fit_problem"] = self.fit_problem
        return {"judge": self.judge, "protocol": "listwise", "listwise": body, "gate": self.gate.to_dict()}


@dataclass(frozen=True)
class ListwiseAnalyses(Concluded):
    """One `ListwiseAnalysis` per judge, in judge-name order."""

    judges: tuple[ListwiseAnalysis, ...]
    source: str

    def __iter__(self) -> Iterator[ListwiseAnalysis]:
        return iter(self.judges)

    def __len__(self) -> int:
        return len(self.judges)

    def __getitem__(self, key: int | str) -> ListwiseAnalysis:
        if isinstance(key, str):
            for analysis in self.judges:
                if analysis.judge == key:
                    return analysis
            raise KeyError(f"no judge {key!r}; judges: " + ", ".join(repr(a.judge) for a in self.judges))
        return self.judges[key]

    @property
    def passed(self) -> bool:
        return bool(self.judges) and all(a.gate.passed for a in self.judges)

    def ending(self) -> Ending:
        """Failed (exit 1 at the CLI), one line per judge below the winner-consistency gate; ok otherwise."""
        return gates_ending((a.judge, a.gate) for a in self.judges)

    def to_dict(self) -> dict[str, Any]:
        dicts = [a.to_dict() for a in self.judges]
        document: dict[str, Any] = json_document(dicts[0] if len(dicts) == 1 else {"judges": dicts})
        return document


def _judges(records: ListwiseRecords, judge: str | None) -> list[str]:
    names = records.judges
    if judge is None:
        return names
    if judge not in names:
        raise InputError(f"no judge {judge!r} in the records; judges: " + ", ".join(repr(j) for j in names),
                         path=records.source)
    return [judge]


def analyze_judge(records: ListwiseRecords, judge: str, *, min_consistency: float, confidence: float,
                  bootstrap: int, seed: int) -> ListwiseAnalysis:
    calls = records.of_judge(judge)
    sizes = sorted({c.n for c in calls})
    if len(sizes) > 1:
        raise InputError(f"judge {judge!r} has calls of {', '.join(map(str, sizes))} answers: keep one N per "
                         "judge (or name the others as another judge)", path=records.source)
    result = audit(calls, judge=judge, min_consistency=min_consistency, confidence=confidence)
    try:
        fit = fit_plackett_luce(calls, rounds=bootstrap, seed=seed, confidence=confidence,
                                slot_effects=result.slot_audit_withheld is None)
        problem = None
    except InputError as err:  # said beside the audit, which stands without the fit
        fit, problem = None, err.message
    return ListwiseAnalysis(judge, result, fit, problem)


def analyze_listwise(source: str | Path | Any, *, judge: str | None = None,
                     min_consistency: float = DEFAULT_MIN_CONSISTENCY, confidence: float = 0.95,
                     bootstrap: int = DEFAULT_ROUNDS, seed: int = 0) -> ListwiseAnalyses:
    """Analyse best-of-N calls, one result per judge: what `swapjudge analyze` prints for listwise records."""
    judge = arguments.text(judge, "judge", what="a name (a string)")
    min_consistency = arguments.share(min_consistency, "min_consistency")
    confidence = arguments.confidence(confidence)
    bootstrap = arguments.integer(bootstrap, "bootstrap", minimum=0)
    seed = arguments.integer(seed, "seed", minimum=0)
    records = load_listwise(source)
    return ListwiseAnalyses(tuple(analyze_judge(records, name, min_consistency=min_consistency,
                                                confidence=confidence, bootstrap=bootstrap, seed=seed)
                                  for name in _judges(records, judge)), records.source)


@dataclass(frozen=True)
class ListwiseRanking(Concluded):
    """`swapjudge rank` on listwise records: one judge's Plackett-Luce strengths, or, below its gate, none
    (`fit` None, `withheld` True), as a pairwise ranking is withheld."""

    judge: str
    gate: Gate
    consistency: dict[str, Any]
    fit: PlackettLuce | None

    @property
    def withheld(self) -> bool:
        return self.fit is None

    def ending(self) -> Ending:
        return gates_ending([(self.judge, self.gate)])

    def to_dict(self) -> dict[str, Any]:
        body = {"judge": self.judge, "protocol": "listwise", "outcome": "listwise", "gate": self.gate.to_dict(),
                "consistency": self.consistency}
        if self.fit is None:
            return {**body, "withheld": self.gate.reason, "strengths": None}
        return {**body, **self.fit.to_dict()}


def rank_listwise(source: str | Path | Any, *, judge: str | None = None, bootstrap: int = DEFAULT_ROUNDS,
                  seed: int = 0, confidence: float = 0.95,
                  min_consistency: float = DEFAULT_MIN_CONSISTENCY) -> ListwiseRanking:
    """Rank systems from best-of-N calls by the Plackett-Luce fit with slot effects (the fit `analyze` shows);
    a judge below the winner-consistency gate gets no ranking: the result comes back withheld and its
    `raise_for_gate()` raises `GateError`."""
    judge = arguments.text(judge, "judge", what="a judge's name (a string)")
    bootstrap = arguments.integer(bootstrap, "bootstrap", minimum=0)
    seed = arguments.integer(seed, "seed", minimum=0)
    confidence = arguments.confidence(confidence)
    min_consistency = arguments.share(min_consistency, "min_consistency")
    records = load_listwise(source)
    names = _judges(records, judge)
    if judge is None and len(names) > 1:
        raise ArgumentError("the records hold several judges (" + ", ".join(repr(n) for n in names) +
                            "): name one with {judge}", "judge")
    name = names[0]
    calls = records.of_judge(name)
    result = audit(calls, judge=name, min_consistency=min_consistency, confidence=confidence)
    if not result.gate.passed:
        return ListwiseRanking(name, result.gate, result.consistency.to_dict(), None)
    fit = fit_plackett_luce(calls, rounds=bootstrap, seed=seed, confidence=confidence,
                            slot_effects=result.slot_audit_withheld is None)
    return ListwiseRanking(name, result.gate, result.consistency.to_dict(), fit)


def stored_listwise(path: str | Path | Any, run: int | None = None) -> list[dict[str, Any]] | None:
    """The listwise records of a stored best-of-N run (`run`, default the store's latest), or None when `path` is
    no run store or the run is pairwise: what `report` and the card read from a store."""
    from swapjudge.store.connection import is_sqlite_file

    if not isinstance(path, str | Path) or str(path) == "-" or not Path(path).is_file() or not is_sqlite_file(
            Path(path)):
        return None
    from swapjudge.runner.provenance import open_store
    from swapjudge.store.analysis import run_records
    from swapjudge.store.reader import is_listwise_run

    with open_store(path, read_only=True) as store:
        info = store.run(run) if run is not None else store.latest_run()
        return run_records(store, info.id) if is_listwise_run(info) else None
