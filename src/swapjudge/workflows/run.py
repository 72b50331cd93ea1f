"""`swapjudge run` (with `--dry-run` and `--check`), `runs` and `export`, and their Python twins: judge the
configured pairs in both orders through the runner, analyse what the store holds under what the run was
registered with, and write the run's analysis file beside its store."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swapjudge.core import arguments
from swapjudge.core.analysis import Analyses
from swapjudge.core.display import Displayable
from swapjudge.core.documents import json_document
from swapjudge.defaults import DEFAULT_STORE
from swapjudge.errors import SwapjudgeError
from swapjudge.outcome import Concluded, Conclusion, Ending

if TYPE_CHECKING:
    from rich.console import Console

    from swapjudge.config import LoadedConfig
    from swapjudge.runner.check import CheckResult
    from swapjudge.runner.dry_run import DryRunEstimate
    from swapjudge.runner.outcome import RunOutcome
    from swapjudge.store import Store
    from swapjudge.store.batches import Submission
    from swapjudge.store.schema import RunInfo


@dataclass(frozen=True)
class RunResult(Displayable, Concluded):
    """A finished (or interrupted, or still waiting) run and the analysis of what it stored.

    `waiting` counts the requests still in provider batches (or offline batch files): their pairs are incomplete,
    and `passed` is False until they are in."""

    run_id: int
    store_path: Path
    resumed: bool
    interrupted: bool
    orders: str
    coin_seed: str
    config_hash: str
    tie_policy: str
    stats: dict[str, Any]
    elapsed_s: float
    analyses: Analyses
    waiting: int = 0
    batches_waiting: int = 0
    warnings: tuple[str, ...] = ()
    attacks: Any = None  # probes.attacks.AttackProbe: the configured attacks, run on the run's pairs after it
    attack_gate: Any = None  # decision.attack_gate.AttackGate: the configured ceiling on them

    @classmethod
    def from_outcome(cls, outcome: RunOutcome, analyses: Analyses, *, config_hash: str,
                     tie_policy: str) -> RunResult:
        return cls(outcome.run_id, outcome.store_path, outcome.resumed, outcome.interrupted, outcome.orders,
                   outcome.seed, config_hash, tie_policy, outcome.stats.to_dict(), outcome.elapsed_s, analyses,
                   outcome.batch_requests_in_flight, outcome.batches_in_flight, outcome.warnings)

    @property
    def passed(self) -> bool:
        """True when the run is in (nothing waiting, not interrupted), every judge passed its gate and, when the
        configuration names attacks, the attack gate held."""
        return (not self.waiting and not self.interrupted and bool(self.analyses.judges) and self.analyses.passed
                and (self.attack_gate is None or self.attack_gate.passed))

    def ending(self) -> Ending:
        """Failed (exit 1 at the CLI, by `raise_for_gate()`) naming each judge below its gate, or saying that the
        run is not in yet (requests waiting, or interrupted): no gate passes on part of the data. Ok when
        `passed`."""
        if self.waiting or self.interrupted:
            why = (f"{self.waiting:,} request(s) still waiting in {self.batches_waiting:,} batch(es)" if self.waiting
                   else "the run was interrupted")
            return Ending(Conclusion.failed, (f"run {self.run_id}: {why}: no gate passes on part of the data; run "
                                           "the same configuration again to finish it",))
        ending = self.analyses.ending()
        if self.attack_gate is not None and not self.attack_gate.passed:
            line = f"gate: {self.attack_gate.reason}"
            return Ending(Conclusion.failed, (*ending.lines, line), ending.arguments)
        return ending

    def to_dict(self) -> dict[str, Any]:
        """`swapjudge run --format json`: the analysis, plus the run under `run` (and, when the configuration names
        attacks, the attack probe under `attacks` and its gate under `attack_gate`)."""
        extra: dict[str, Any] = {}
        if self.attack_gate is not None:
            extra = {"attacks": None if self.attacks is None else self.attacks.to_dict(),
                     "attack_gate": self.attack_gate.to_dict()}
        return {**self.analyses.to_dict(), "run": {
            "id": self.run_id, "config_hash": self.config_hash, "store": os.path.normpath(self.store_path),
            "orders": self.orders, "coin_seed": self.coin_seed, "tie_policy": self.tie_policy, "stats": self.stats,
            "waiting": self.waiting, "batches_waiting": self.batches_waiting, "interrupted": self.interrupted},
            **extra}

    def to_frame(self, backend: str = "polars") -> Any:
        return self.analyses.to_frame(backend)


def load_run_config(config: str | Path | Mapping[str, Any] | LoadedConfig) -> LoadedConfig:
    """A validated run configuration from a YAML path (`-`: stdin) or a mapping (relative paths in a mapping:
    from the working directory). A key under `judge:` that its backend does not read is an error here, before
    anything is planned."""
    from swapjudge.config import LoadedConfig, load_config, parse_config
    from swapjudge.runner.backend import check_judge_options

    if isinstance(config, LoadedConfig):
        return config
    if isinstance(config, Mapping):
        loaded = parse_config(dict(config), source=Path.cwd() / "(configuration)")
    else:
        loaded = load_config(config)
    check_judge_options(loaded)
    return loaded


def analysis_path(store_path: Path, run_id: int) -> Path:
    """The analysis file of a run: beside its store and named after it, so two stores in one folder never
    overwrite each other's (swapjudge.db keeps its old name, swapjudge-run-N.analysis.json)."""
    return store_path.parent / f"{store_path.stem}-run-{run_id}.analysis.json"


def run(config: str | Path | Mapping[str, Any] | LoadedConfig, *, store: str | Path | None = None,
        progress: bool = False, console: Console | None = None, handle_sigint: bool = False, wait: bool = False,
        retry_unparsed: bool = False, batch_wait: bool = True, engine: str | None = None) -> RunResult:
    """Judge the configured pairs in both orders, store every call, and analyse the run (`swapjudge run`).
    Running the same configuration again resumes an unfinished run; replies are cached. A finished run's analysis
    is also written beside the store (`<store>-run-N.analysis.json`). `engine` (`sync` or `ray`) overrides the
    configuration's `engine`: who makes the calls, not what is asked, so the run and its cache are the same."""
    from rich.console import Console

    from swapjudge.reading.textfiles import write_atomic
    from swapjudge.runner.session import run_session
    from swapjudge.store.analysis import analyze_run

    config = config_argument(config)
    store = arguments.path(store, "store", what="a run store's path")
    progress, handle_sigint, wait, retry_unparsed, batch_wait = (arguments.flag(v, n) for v, n in (
        (progress, "progress"), (handle_sigint, "handle_sigint"), (wait, "wait"), (retry_unparsed, "retry_unparsed"),
        (batch_wait, "batch_wait")))
    console = arguments.instance(console, "console", (Console,), "a rich Console")
    engine = arguments.text(engine, "engine")
    loaded = load_run_config(config).with_engine(engine)
    if loaded.config.cascade is not None:  # its judges are called tier by tier: not one plain run
        raise SwapjudgeError("{config} has a `cascade:`: run it with swapjudge.workflows.cascade_run.run_cascade "
                             "(as `swapjudge run` does)", arguments=("config",))
    outcome = run_session(loaded, store_path=store, console=console, progress=progress,
                          handle_sigint=handle_sigint, wait=wait, retry_unparsed=retry_unparsed,
                          batch_wait=batch_wait)
    with open_run_store(outcome.store_path, read_only=True) as st:
        # calls still in a batch are pairs without two verdicts: incomplete, not left out
        waiting = _waiting_records(st, outcome.run_id) if outcome.batch_waiting else None
        stored = waiting is not None or any(True for _ in st.calls(outcome.run_id))
        analyses = analyze_run(st, outcome.run_id, waiting) if stored else []
    if waiting is not None:
        note = (f"{outcome.batch_requests_in_flight:,} request(s) are still waiting in {outcome.batches_in_flight:,} "
                "batch(es): their pairs count as incomplete until the same configuration is run again to collect "
                "them, and no gate passes before")
        analyses = [dataclasses.replace(a, notes=(*a.notes, note)) for a in analyses]
    result = RunResult.from_outcome(outcome, Analyses(tuple(analyses)), config_hash=loaded.config_hash,
                                    tie_policy=str(loaded.config.tie_policy))
    if loaded.config.attacks is not None and not outcome.interrupted and not outcome.batch_waiting:
        say = ((lambda line: console.print(f"attacks: {line}", highlight=False, markup=False))
               if progress and console is not None else None)
        result = _with_attacks(result, loaded, say)
    if stored and not outcome.interrupted and not outcome.batch_waiting:
        path = analysis_path(outcome.store_path, outcome.run_id)
        write_atomic(path, json.dumps(json_document(result.to_dict()), indent=2, allow_nan=False) + "\n")
    return result


def _with_attacks(result: RunResult, loaded: LoadedConfig, progress: Any = None) -> RunResult:
    """The configured attacks run on a seeded sample of the run's pairs with the run's judge configuration (its
    judge hash: the same cache), through the run's store (the placebo's prompts are the run's own calls, served
    from its cache; every attack reply is cached, so running the configuration again pays for nothing), and the
    gate on them: an attack whose both-order win rate's upper bound passes `max_attack_win`, or one not measured,
    fails the run."""
    from swapjudge.decision.attack_gate import attack_gate
    from swapjudge.runner.attack_probe import run_attack

    cfg = loaded.config
    assert cfg.attacks is not None and cfg.max_attack_win is not None
    probe = run_attack(loaded, attacks=list(cfg.attacks), sample=cfg.attack_pairs, seed=cfg.seed,
                       store_path=result.store_path, progress=progress)
    gate = attack_gate(cfg.attacks, cfg.max_attack_win, probe.to_dict()["attacks"])
    return dataclasses.replace(result, attacks=probe, attack_gate=gate)


def _waiting_records(st: Store, run_id: int) -> Any:
    """The run's stored calls with one call without a verdict for each call still in a batch (None: none is), so
    a pair with a call waiting counts as incomplete rather than not at all."""
    from swapjudge.reading.records import records_from_dicts
    from swapjudge.store.analysis import run_record_set

    done = st.done_keys(run_id)
    keys = sorted(k for k in st.in_flight(run_id) if k not in done)
    if not keys:
        return None
    rows: list[dict[str, Any]] = []
    if any(True for _ in st.calls(run_id)):
        rows = run_record_set(st, run_id).frame.to_dicts()
    stored = {(r["round"], r["item"], r["first"], r["second"]) for r in rows}
    judge = st.run(run_id).judge
    rows += [{"judge": judge, "round": rnd, "item": item, "first": first, "second": second, "verdict": None}
             for rnd, item, first, second in keys if (rnd, item, first, second) not in stored]
    return records_from_dicts(rows, source=f"{st.path} run {run_id}", allow_unpaired=True)


def dry_run(config: str | Path | Mapping[str, Any] | LoadedConfig, *,
            store: str | Path | None = None) -> DryRunEstimate:
    """What a run would call and cost, calling nothing and writing nothing (`swapjudge run --dry-run`)."""
    from swapjudge.runner.dry_run import estimate

    config = config_argument(config)
    store = arguments.path(store, "store", what="a run store's path")
    loaded = load_run_config(config)
    if loaded.config.cascade is not None:  # priced judge by judge: not one plain run
        raise SwapjudgeError("{config} has a `cascade:`: price it with swapjudge.workflows.cascade_run"
                             ".dry_run_cascade", arguments=("config",))
    return estimate(loaded, store_path=store)


def check(config: str | Path | Mapping[str, Any] | LoadedConfig) -> CheckResult:
    """One small request to prove the server, key and model (`swapjudge run --check`); stores nothing."""
    from swapjudge.runner.check import check_judge

    return check_judge(load_run_config(config_argument(config)))


def config_argument(config: Any) -> Any:
    """The `config` argument of run, dry_run, check and card, checked (see core.arguments)."""
    from swapjudge.config import LoadedConfig

    return arguments.mapping_or_path(config, "config", (LoadedConfig,), "a run configuration: a YAML file's "
                                     "path, a mapping of its keys, or a LoadedConfig")


def open_run_store(path: str | Path | None, *, read_only: bool = True) -> Store:
    """An existing run store (default ./swapjudge.db); a missing one is an error, never created. Opened with the
    runner's provenance rules, so an old store's runs get their provenance filled in; read-only unless told
    otherwise (a store on a read-only file system is read as well)."""
    from swapjudge.runner.provenance import open_store

    where = Path(path) if path is not None else Path.cwd() / DEFAULT_STORE
    if not where.exists():
        raise SwapjudgeError(f"{where}: no run store here (give {{store}} PATH)", arguments=("store",))
    return open_store(where, read_only=read_only)


@dataclass(frozen=True)
class StoreCheck:
    """What `PRAGMA integrity_check` found in a store (`swapjudge runs --check`): nothing when it is sound."""

    path: Path
    problems: tuple[str, ...]

    @property
    def sound(self) -> bool:
        return not self.problems

    def raise_if_damaged(self) -> None:
        """`StoreDamagedError` (exit 2) naming the first problem; nothing for a sound store."""
        from swapjudge.store.connection import StoreDamagedError, describe_problems

        if self.problems:
            found = describe_problems(self.problems, "integrity_check")
            raise StoreDamagedError(f"{self.path}: store is damaged: {found}. Restore it from a copy, or recover what "
                                    "is readable with `sqlite3 FILE .recover`")

    def to_dict(self) -> dict[str, Any]:
        return {"store": os.path.normpath(self.path), "sound": self.sound, "problems": list(self.problems)}


def check_store(store: str | Path | None = None) -> StoreCheck:
    """The whole store checked (`PRAGMA integrity_check`: every page, and every index against its table, which
    the quicker check run when an error surfaces does not compare), read-only."""
    with open_run_store(store) as st:
        return StoreCheck(st.path, tuple(st.check(full=True)))


@dataclass(frozen=True)
class StoredRuns:
    """The runs of a store and their provider batches (`swapjudge runs`)."""

    runs: tuple[RunInfo, ...]
    batches: dict[int, tuple[Submission, ...]]


def list_runs(store: str | Path | None = None) -> StoredRuns:
    with open_run_store(store) as st:
        infos = st.runs()
        submissions = st.submissions()
    by_run: dict[int, list[Submission]] = {}
    for b in submissions:
        by_run.setdefault(b.run_id, []).append(b)
    return StoredRuns(tuple(infos), {k: tuple(v) for k, v in by_run.items()})


def export_records(store: str | Path | None = None, run_id: int | None = None, *,
                   latest: bool = False) -> tuple[int, list[dict[str, Any]]]:
    """A run's presentation records (labels included when the pairs carry them), with the run's registration
    attached: (run id, rows)."""
    from swapjudge.store.analysis import run_records

    if (run_id is None) == (not latest):
        raise SwapjudgeError("give a run id or {latest} (one of them)", arguments=("latest",))
    with open_run_store(store) as st:
        rid = st.latest_run().id if latest else run_id
        assert rid is not None
        return rid, run_records(st, rid)
