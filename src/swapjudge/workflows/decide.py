"""`decide` and `plan`, put together: the records (a file, rows, a frame, or a run in the store), the judge, the
items of the two systems, the analysis' gate and flip audit (`core.analysis.analyze_records`, reused as it is), the item
scores, the bound, the fail-closed rule, and the decisions ledger. The statistics live in the sibling modules;
this module only composes them (it is the one place here that reads files, the store and a run configuration).
"""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from swapjudge.core import arguments
from swapjudge.core.analysis import analyze_records
from swapjudge.core.display import percent
from swapjudge.decision.bounds import Bound, betting_sequence, fixed_bound
from swapjudge.decision.file import DecisionFile, load_decision
from swapjudge.decision.power import (
    DEFAULT_SIMULATIONS,
    MAX_ITEMS,
    Plan,
    PlanError,
    analytic_items,
    expected_design,
    pilot_design,
    plan_items,
    sequential_items,
)
from swapjudge.decision.scores import ItemScores, item_scores
from swapjudge.decision.verdict import INCONCLUSIVE, Counts, Verdict, rule
from swapjudge.errors import ArgumentError, InputError, SwapjudgeError
from swapjudge.reading.codes import MISSING, Outcome
from swapjudge.reading.pairs import PairTable, build_pairs
from swapjudge.reading.records import RecordSet
from swapjudge.store.connection import is_sqlite_file

_NEEDED_STREAMS = 200  # streams behind an inconclusive verdict's "items needed" (a sequential design)


@dataclass(frozen=True)
class _Source:
    """Records of one judge and the two systems, with where they came from."""

    calls: pl.DataFrame  # the judge's calls between the candidate and the incumbent
    label: str
    judge: str | None
    store_path: Path | None = None  # the run store the records came from
    run_id: int | None = None
    unmade_calls: int = 0  # a stored run's planned calls never made (an interrupted run, skipped swaps)
    adaptive: bool = False
    order: tuple[str, ...] | None = None  # the stream order of items, when the source knows it
    cascade_unsettled: tuple[tuple[str, str, str], ...] = ()  # a cascade's pairs nobody settled (item, x, y)
    cascade_people: int = 0  # a cascade's pairs people settled


def is_store(path: str | Path) -> bool:
    """Whether a path is a SQLite file (a run store) rather than a records file: `store.connection.is_sqlite_file`."""
    return is_sqlite_file(path)


def _store_source(path: Path, run: int | None) -> tuple[RecordSet, dict[str, Any]]:
    from swapjudge.store import Store
    from swapjudge.store.analysis import run_record_set
    from swapjudge.store.decisions import item_order

    with Store(path) as store:
        info = store.run(run) if run is not None else store.latest_run()
        if info.config.get("cascade_tier") is not None:  # a live cascade's run: its verdicts, fail closed
            from swapjudge.workflows.cascade_decide import cascade_records

            return cascade_records(store, info)
        records = run_record_set(store, info.id)
        order = item_order(store, info.id)
    unmade = max(0, info.total_calls - info.stored_calls - info.failed_calls)
    return records, {"store_path": path, "run_id": info.id, "unmade_calls": unmade, "order": tuple(order),
                     "adaptive": info.config.get("adaptive_swap") is not None}


def _load(records: Any, run: int | None) -> tuple[RecordSet, dict[str, Any]]:
    if isinstance(records, str | Path) and str(records) != "-" and is_store(records):
        return _store_source(Path(records), run)
    if run is not None:
        raise SwapjudgeError("{run} applies to a run store, and the records given are not one", arguments=("run",))
    from swapjudge.reading.records import read_records

    # a file is read without its provenance columns (the decision needs none): much faster on large files
    extras = {"extras": False} if isinstance(records, str | Path) else {}
    return read_records(records, allow_unpaired=True, **extras), {}


def _select(records: RecordSet, spec: DecisionFile, extra: dict[str, Any]) -> _Source:
    """The chosen judge's calls between the two systems; a missing judge or system is bad input (exit 2)."""
    frame = records.frame
    label = records.source if extra.get("run_id") is None else f"{extra['store_path']} run {extra['run_id']}"
    judges = sorted(frame.get_column("judge").unique().to_list())
    if spec.judge is not None:
        if spec.judge not in judges:
            raise InputError(f"no calls of judge {spec.judge!r}; judges in the records: "
                             + ", ".join(repr(j) for j in judges), path=label, field="judge")
        judge = spec.judge
    elif len(judges) > 1:
        raise InputError(f"the records hold {len(judges)} judges ({', '.join(repr(j) for j in judges)}): name one "
                         "under `judge` in the decision file", path=label, field="judge")
    else:
        judge = judges[0]
    frame = frame.filter(pl.col("judge") == judge)
    systems = sorted(set(frame.get_column("first").to_list()) | set(frame.get_column("second").to_list()))
    for role, name in (("candidate", spec.candidate), ("incumbent", spec.incumbent)):
        if name not in systems:
            raise InputError(f"the {role} {name!r} has no calls; systems in the records: " + ", ".join(systems),
                             path=label, field=role)
    two = [spec.candidate, spec.incumbent]
    calls = frame.filter(pl.col("first").is_in(two) & pl.col("second").is_in(two)
                         & (pl.col("first") != pl.col("second")))
    return _Source(calls, label, judge or None, **extra)


def _stream(pairs: PairTable, order: tuple[str, ...] | None) -> tuple[PairTable, list[str]]:
    """Pairs sorted into the stream order of their items, and that order (first appearance, unless the source
    knows the order its items arrived in)."""
    seen = pairs.frame.get_column("item").unique(maintain_order=True).to_list()
    if order is not None:
        rank = {item: i for i, item in enumerate(order)}
        seen = sorted(seen, key=lambda item: rank.get(item, len(rank)))
    position = pl.DataFrame({"item": seen, "_at": list(range(len(seen)))}, schema={"item": pl.String,
                                                                                    "_at": pl.Int64})
    frame = pairs.frame.join(position, on="item", how="left").sort("_at", maintain_order=True).drop("_at")
    return PairTable(frame), seen


def _scores(pairs: PairTable, candidate: str, policy: str) -> ItemScores:
    frame = pairs.frame.filter(pl.col("outcome") != Outcome.INCOMPLETE)
    return item_scores(frame.get_column("item").to_numpy(), frame.get_column("outcome").to_numpy(),
                       (frame.get_column("x") == candidate).to_numpy(), policy)


def decision_key(path: str | None, spec: DecisionFile) -> str:
    """How the ledger knows a decision file: its path (relative to the working directory when below it), or the
    question for a decision given as a mapping."""
    if path is None:
        return f"{spec.candidate} vs {spec.incumbent}"
    full = os.path.abspath(path)
    here = os.getcwd()
    return os.path.relpath(full, here) if full.startswith(here + os.sep) else full


def _needed(scores: ItemScores, spec: DecisionFile) -> tuple[int | None, int | None]:
    """Items the plan needs at the observed rates, toward the side the data lean to, and the most it looked for
    (None, None: no lean; None, cap: more than `cap`)."""
    if scores.n == 0 or scores.mean is None or scores.mean == spec.bar:
        return None, None
    design = pilot_design(scores.scores, scores.unscored)
    side = "ship" if scores.mean > spec.bar else "keep"
    if spec.monitoring == "sequential":
        cap = min(MAX_ITEMS, max(2000, 10 * scores.n))
        fixed_n = analytic_items(design, spec.bar, spec.alpha, spec.power, side=side)
        if fixed_n is None or fixed_n > cap:  # the sequence never needs fewer items than one look would
            return None, cap
        return sequential_items(design, spec.bar, spec.alpha, spec.power, side=side, streams=_NEEDED_STREAMS,
                                seed=0, max_items=cap), cap
    return analytic_items(design, spec.bar, spec.alpha, spec.power, side=side), None


def decision_argument(value: Any) -> Any:
    return arguments.mapping_or_path(value, "decision", (DecisionFile,),
                                     "a decision file's path, a mapping of its keys, or a DecisionFile")


def decide(records: Any, decision: str | Path | Mapping[str, Any] | DecisionFile, *, run: int | None = None,
           allow_missing: int = 0, store: str | Path | None = None, fragility: bool = False,
           attack_report: str | Path | Mapping[str, Any] | None = None) -> Verdict:
    """Ship, keep or inconclusive for the registered decision on these records.

    `records`: a presentation records file (JSONL/CSV), a run store (SQLite; `run` picks the run, default the
    latest), rows, a DataFrame or a RecordSet. `decision`: a decision file's path or a mapping of its keys.
    `allow_missing`: calls without a verdict (or never made) tolerated before the decision fails closed.
    `store`: the run store whose decisions ledger records this verdict (a store given as `records` is used
    itself); None with records from a file: nothing is recorded. `fragility`: also find the fewest items whose
    removal, or whose verdicts turned, change the verdict (`Verdict.fragility`). `attack_report`: the JSON of
    `swapjudge probe attack` (a path or its mapping), read when the decision names `attacks`."""
    records = arguments.records_source(records, "records")
    decision = decision_argument(decision)
    run = arguments.integer(run, "run", minimum=1, optional=True)
    allow_missing = arguments.integer(allow_missing, "allow_missing")
    store = arguments.path(store, "store", what="a run store's path")
    fragility = arguments.flag(fragility, "fragility")
    if attack_report is not None:
        attack_report = arguments.mapping_or_path(attack_report, "attack_report", (), "a path to the attack "
                                                  "probe's JSON or its mapping")
    spec, path = load_decision(decision)
    if fragility and spec.human is not None:
        raise ArgumentError("{fragility} searches the judge's items; a decision with a `human` block rests on "
                            "people's labels, which it does not search", "fragility")
    if allow_missing < 0:
        raise SwapjudgeError(f"{{allow_missing}} must be 0 or more, got {allow_missing}", arguments=("allow_missing",))
    loaded, extra = _load(records, run)
    source = _select(loaded, spec, extra)
    against = 0
    if source.cascade_unsettled:  # pairs no judge and nobody settled count against the candidate
        from swapjudge.workflows.cascade_decide import count_against

        calls_now, against = count_against(source.calls, source.cascade_unsettled, spec.candidate, spec.incumbent)
        source = dataclasses.replace(source, calls=calls_now)
    pairs, order = _stream(build_pairs(source.calls), source.order)
    available = len(order)
    calls = source.calls
    if spec.monitoring == "fixed" and spec.items is not None and available > spec.items:
        chosen = order[:spec.items]
        pairs = PairTable(pairs.frame.filter(pl.col("item").is_in(chosen)))
        calls = calls.filter(pl.col("item").is_in(chosen))
        order = chosen
    vx, vy = pairs.vx, pairs.vy
    missing = int((vx == MISSING).sum() + (vy == MISSING).sum()) + source.unmade_calls
    incomplete = int((pairs.outcome == Outcome.INCOMPLETE).sum())
    analysis = analyze_records(calls, judge=calls.get_column("judge")[0], a=spec.candidate, b=spec.incumbent,
                               tie_policy=spec.tie_policy, min_consistency=spec.min_consistency)[0]
    scores = _scores(pairs, spec.candidate, spec.tie_policy)
    bound: Bound | None
    anchored = None
    if spec.human is not None:  # people's labels decide: the corrected win rate is the bound
        from swapjudge.workflows.human_decide import human_bound

        anchored = human_bound(spec, path, calls, analysis.gate)
        bound = anchored.bound
    elif spec.monitoring == "sequential":
        bound = betting_sequence(scores.scores, spec.bar, spec.alpha)
    else:
        bound = fixed_bound(scores.scores, spec.alpha)
    # with people's labels a failed judge gate is reported, not deciding (the labels carry the decision)
    deciding_gate = analysis.gate if anchored is None else dataclasses.replace(analysis.gate, passed=True)
    ruling = rule(bound=bound, bar=spec.bar, hypothesis=spec.hypothesis, margin=spec.margin,
                  monitoring=spec.monitoring, planned_items=spec.items, items_read=len(order),
                  candidate=spec.candidate, gate=deciding_gate, consistency=analysis.consistency,
                  missing_calls=missing, allowed_missing=allow_missing)
    if anchored is not None and ruling.rate_read:
        passed = "passes" if analysis.gate.passed else "fails, reported only"
        ruling = dataclasses.replace(ruling, headline=(
            f"{ruling.headline.replace('wins', 'wins, corrected by people,', 1)}; from {anchored.labels:,} "
            f"people's labels ({anchored.design} design) and the judge's scores on every item; the judge's "
            f"gate {passed}"))
    attack_check = None
    if spec.attacks is not None and spec.max_attack_win is not None:
        from swapjudge.decision.attack_gate import attack_gate

        attack_check = attack_gate(spec.attacks, spec.max_attack_win, _attack_rows(attack_report))
        if not attack_check.passed and attack_check.reason is not None:
            head = f"Keep: {attack_check.reason} (the decision fails closed)"
            if ruling.verdict == "keep":
                ruling = dataclasses.replace(ruling, reasons=(*ruling.reasons, attack_check.reason))
            else:
                ruling = dataclasses.replace(ruling, verdict="keep", headline=head,
                                             reasons=(attack_check.reason, *ruling.reasons))
    reasons = list(ruling.reasons)
    if source.unmade_calls:
        adaptive = " (an adaptive run: swaps it skipped by design have no order-cancelled outcome)" \
            if source.adaptive else ""
        reasons.append(f"{source.unmade_calls:,} planned call(s) of the run were never made{adaptive}")
    needed = more = None
    if ruling.verdict == INCONCLUSIVE and ruling.rate_read and anchored is None:  # labels: plan --human
        needed, cap = _needed(scores, spec)
        if spec.monitoring == "fixed" and spec.items is not None and (needed is not None or len(order) < spec.items):
            needed = max(needed or 0, spec.items)  # a fixed design reads nothing before its planned items
        if needed is not None:
            more = max(0, needed - len(order))
            reasons.append(f"at the observed rates the plan needs about {needed:,} items: {more:,} more"
                           if more else f"at the observed rates about {needed:,} items decide")
        elif cap is not None:
            reasons.append(f"at the observed rates the sequence needs more than {cap:,} items to decide")
        else:
            reasons.append("at the observed rates no number of items decides (the win rate sits at the bar)")
    notes: list[str] = []
    if incomplete and missing <= allow_missing:
        notes.append(f"{incomplete:,} incomplete pair(s) (tolerated: --allow-missing {allow_missing}) are left out "
                     "of the scores")
    if spec.monitoring == "fixed" and spec.items is not None and available > spec.items:
        notes.append(f"the fixed design read the first {spec.items:,} of {available:,} items (in record order), as "
                     "registered; the rest are not read")
    if spec.monitoring == "fixed" and spec.items is None:
        notes.append(f"no planned number of items is registered: the fixed interval was read over the {available:,} "
                     "items given; reading it again after more items come in is a second look (register `items`, "
                     "or use monitoring: sequential)")
    if against or source.cascade_people:
        notes.append(f"a cascade run: {against:,} pair(s) no judge settled counted as losses of the candidate (fail "
                     f"closed), {source.cascade_people:,} settled by people's votes")
    if scores.unscored:
        notes.append(f"{scores.unscored:,} item(s) of split pairs only have no score under the exclude policy")
    if anchored is not None:
        notes.extend(anchored.notes)
    verdict = Verdict(
        verdict=ruling.verdict, headline=ruling.headline, reasons=tuple(reasons), candidate=spec.candidate,
        incumbent=spec.incumbent, hypothesis=spec.hypothesis, bar=spec.bar, margin=spec.margin,
        tie_policy=str(spec.tie_policy), monitoring=spec.monitoring, alpha=spec.alpha, planned_items=spec.items,
        bound=bound if ruling.rate_read else None,
        counts=Counts(len(order), available, scores.n, scores.pairs, scores.wins, scores.losses, scores.splits,
                      incomplete, missing, allow_missing),
        gate=analysis.gate, consistency=analysis.consistency, flip_direction=analysis.flip_direction,
        judge=source.judge, source=source.label, decision=spec.to_dict(), decision_hash=spec.content_hash,
        decision_path=path, needed_items=needed, more_items=more, notes=tuple(notes),
        human=None if anchored is None else anchored.to_dict(), attack_gate=attack_check)
    if fragility:
        from swapjudge.workflows.fragility import decision_fragility

        early = spec.monitoring == "fixed" and spec.items is not None and len(order) < spec.items
        found = decision_fragility(
            pairs, calls, spec.model_copy(update={"attacks": None, "max_attack_win": None}), early=early,
            allow_missing=allow_missing, unmade_calls=source.unmade_calls, decide=decide)
        if attack_check is not None and not attack_check.passed:
            found = dataclasses.replace(found, notes=(
                *found.notes, "the attack gate keeps whatever the items say: these figures are of the verdict the "
                "items alone give"))
        verdict = dataclasses.replace(verdict, fragility=found)
    ledger = source.store_path or (Path(store) if store is not None else None)
    return verdict if ledger is None else _record(verdict, ledger, decision_key(path, spec), source.run_id)


def _attack_rows(report: Any) -> list[dict[str, Any]] | None:
    """The `attacks` rows of an attack report (a path to its JSON, or the mapping); None: none given."""
    if report is None:
        return None
    label = "attack report"
    if isinstance(report, str | Path):
        import json

        label = str(report)
        try:
            report = json.loads(Path(report).read_text(encoding="utf-8"))
        except OSError as err:
            raise InputError(f"cannot read the attack report: {err.strerror}", path=label) from None
        except ValueError:
            raise InputError("the attack report is not JSON (the attack probe's JSON document is)",
                             path=label) from None
    rows = report.get("attacks") if isinstance(report, Mapping) else None
    if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
        raise InputError("the attack report has no `attacks` list (the attack probe's JSON document has one)",
                         path=label, field="attacks")
    return [dict(r) for r in rows]


def _record(verdict: Verdict, ledger: Path, key: str, run_id: int | None) -> Verdict:
    """Record the verdict in the ledger, first saying so when the pre-registration changed under this key."""
    from swapjudge.store import Store
    from swapjudge.store.decisions import record_decision, registration_history

    with Store(ledger) as store:
        history = registration_history(store, key, verdict.decision_hash)
        if history.changed:
            note = (f"the pre-registration changed after {history.other_hash:,} decision(s): they were recorded "
                    f"under another version of {key} (hash {', '.join(h[:12] for h in history.other_hashes)}, the "
                    f"last on {history.last_other_at}); this one is under {verdict.decision_hash[:12]}")
            verdict = dataclasses.replace(verdict, registration_changed_after=history.other_hash,
                                          notes=(note, *verdict.notes))
        record_decision(store, key=key, decision_hash=verdict.decision_hash, decision=verdict.decision,
                        source=verdict.source, run_id=run_id, verdict=verdict.verdict,
                        items=verdict.counts.items_read, result=verdict.to_dict())
    return verdict


def plan_source_rules(pilot: Any, expect: float | None, splits: float | None) -> None:
    """What a plan is made from, the one rule (the CLI's flags included): a pilot, or an expected win rate with the
    expected share of split pairs; never both."""
    if pilot is None and expect is None:
        raise PlanError("give {pilot} (records or a run store), or {expect} (a win rate) with {splits} (a share)",
                        arguments=("pilot", "expect", "splits"))
    if pilot is not None and (expect is not None or splits is not None):
        raise PlanError("give {pilot} or {expect} with {splits}, not both", arguments=("pilot", "expect", "splits"))
    if pilot is None and splits is None:
        raise PlanError("{expect} needs {splits} (the expected share of split pairs; 0 for none)",
                        arguments=("expect", "splits"))


def plan(decision: str | Path | Mapping[str, Any] | DecisionFile, *, pilot: Any = None,
         expect: float | None = None, splits: float | None = None, config: str | Path | None = None,
         run: int | None = None, simulations: int = DEFAULT_SIMULATIONS, seed: int = 0) -> Plan:
    """The items the registered power needs, from a pilot (`pilot`: records or a run store, as `decide` reads)
    or from expected rates (`expect`: the candidate's win rate under the registered tie policy; `splits`: the
    share of split pairs); the power promised is simulated again at those items. `config`: a run configuration
    whose dry-run pricing gives the cost of the planned calls."""
    decision = decision_argument(decision)
    pilot = arguments.records_source(pilot, "pilot", optional=True)
    expect = arguments.share(expect, "expect", optional=True)
    splits = arguments.share(splits, "splits", optional=True)
    config = arguments.path(config, "config", what="a run configuration's path")
    run = arguments.integer(run, "run", minimum=1, optional=True)
    simulations = arguments.integer(simulations, "simulations")
    seed = arguments.integer(seed, "seed", minimum=0)
    spec, _ = load_decision(decision)
    plan_source_rules(pilot, expect, splits)
    if simulations < 100:
        raise PlanError(f"{{simulations}} must be at least 100, got {simulations}", arguments=("simulations",))
    pairs_per_item = 1.0
    notes: list[str] = []
    if pilot is not None:
        loaded, extra = _load(pilot, run)
        source = _select(loaded, spec, extra)
        pairs, _ = _stream(build_pairs(source.calls), source.order)
        scores = _scores(pairs, spec.candidate, spec.tie_policy)
        share = scores.splits / scores.pairs if scores.pairs else None
        design = pilot_design(scores.scores, scores.unscored, share)
        pairs_per_item = scores.pairs / max(1, scores.n + scores.unscored)
        notes.append(f"planned from the pilot's {scores.n + scores.unscored:,} items ({source.label}): its item "
                     f"scores resampled, win rate {percent(design.rate)}")
    else:
        assert expect is not None and splits is not None
        design = expected_design(expect, splits, spec.tie_policy)
    result = plan_items(design, bar=spec.bar, alpha=spec.alpha, power=spec.power, monitoring=spec.monitoring,
                        hypothesis=spec.hypothesis, tie_policy=str(spec.tie_policy), simulations=simulations,
                        seed=seed, registered_items=spec.items)
    if design.splits is not None and 1 - design.splits < spec.min_consistency:
        notes.append(f"with {percent(design.splits)} split pairs, swap-consistency could be as low as "
                     f"{percent(1 - design.splits)} (if every split is a flip), below the gate of "
                     f"{percent(spec.min_consistency)}: the decision would then keep")
    calls = None if result.items is None else math.ceil(result.items * pairs_per_item) * 2
    result = dataclasses.replace(result, calls=calls, notes=(*result.notes, *notes))
    return result if config is None or calls is None else _priced(result, Path(config), spec)


def _priced(result: Plan, config: Path, spec: DecisionFile) -> Plan:
    """The planned calls at the configured judge's prices, sync and batch, from the dry run of the configuration
    (its average prompt over the configured pairs)."""
    from swapjudge.config import load_config
    from swapjudge.runner.dry_run import estimate

    loaded = load_config(config)
    with tempfile.TemporaryDirectory() as empty:  # no store: every call priced, none served from a cache
        est = estimate(loaded, store_path=Path(empty) / "plan.db")
    notes = list(result.notes)
    pairs_cfg = loaded.config.pairs
    configured = {pairs_cfg.a, pairs_cfg.b} - {None}
    if configured and configured != {spec.candidate, spec.incumbent}:
        notes.append(f"the run configuration compares {', '.join(sorted(str(s) for s in configured))}, not "
                     f"{spec.candidate} and {spec.incumbent}: priced at its prompts all the same")
    if not est.calls_to_make:
        notes.append("the run configuration plans no judge call to price")
        return dataclasses.replace(result, model=est.model, notes=tuple(notes))
    assert result.calls is not None
    per_call = None if est.cost_usd is None else est.cost_usd / est.calls_to_make
    per_batch = None if est.batch_cost_usd is None else est.batch_cost_usd / est.calls_to_make
    if per_call is None:
        notes.append(f"no price is known for {est.model}: add it under `prices:` in the run configuration")
    return dataclasses.replace(
        result, model=est.model, cost_usd=None if per_call is None else per_call * result.calls,
        batch_cost_usd=None if per_batch is None else per_batch * result.calls, notes=tuple(notes))


__all__ = ["decide", "is_store", "plan"]
