"""`swapjudge run` of a configuration with `cascade:`: the escalation cascade, live.

The first judge (`judge:`) judges every pair in both orders; a judge settles the pairs whose confidence
(core.confidence) reaches its threshold (read from the thresholds file `swapjudge escalate -o` wrote, refused when
fitted for other judges, at another alpha or delta, or on another judge configuration); only the pairs it leaves
unsettled go to the next judge, as a run of their own in the same store (its own judge, calls, cache and resume).
What no judge settles is reported as unsettled, pair by pair. The win rate is over all pairs (core.cascade_rate).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from swapjudge.core.cascade_rate import CascadeWinRate, cascade_win_rate
from swapjudge.core.display import Displayable
from swapjudge.errors import ConfigError
from swapjudge.outcome import OK, Concluded, Conclusion, Ending

if TYPE_CHECKING:
    from rich.console import Console

    from swapjudge.config import LoadedConfig

PairKey = tuple[str, str, str]  # (item, x, y), x < y
CASCADE_ROUND = 0


@dataclass(frozen=True)
class CascadeTierRun:
    """One judge of a live cascade: its run in the store and what it settled of the pairs that reached it."""

    judge: str
    run_id: int | None  # None: no pair reached it
    threshold: float | None
    measure: str
    reached: int
    settled: int
    resumed: bool
    stats: dict[str, Any] | None
    cost_usd: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "run_id": self.run_id, "threshold": self.threshold, "measure": self.measure,
                "reached": self.reached, "settled": self.settled, "resumed": self.resumed,
                "cost_usd": self.cost_usd, "stats": self.stats}


@dataclass(frozen=True)
class CascadeRunResult(Concluded, Displayable):
    """A live cascade run: its tiers in order, and every pair settled, voted on by people, or left unsettled.

    `interrupted` (or `incomplete`: a tier with failed calls) stops the cascade at that tier: the same command
    resumes it, and no figure is given on part of the data."""

    store_path: Path
    tiers: tuple[CascadeTierRun, ...]
    pairs: int
    settled: int
    unsettled_pairs: tuple[dict[str, Any], ...]  # item, x, y and why: below every threshold, or never settled
    alpha: float
    delta: float
    guarantee: str
    win_rate: CascadeWinRate | None
    interrupted: bool = False
    incomplete: str | None = None  # why the cascade stopped before its last tier (failed calls, ...)

    @property
    def unsettled(self) -> int:
        return len(self.unsettled_pairs)

    @property
    def coverage(self) -> float | None:
        return self.settled / self.pairs if self.pairs else None

    @property
    def passed(self) -> bool:
        return not self.interrupted and self.incomplete is None

    def ending(self) -> Ending:
        """Failed when the cascade did not reach its end (interrupted, failed calls): nothing is concluded on part
        of the data."""
        if self.passed:
            return OK
        return Ending(Conclusion.failed, (f"the cascade stopped early: {self.incomplete or 'the run was interrupted'};"
                                          " run the same configuration again to finish it",))

    def to_dict(self) -> dict[str, Any]:
        return {"cascade": {
            "store": os.path.normpath(self.store_path), "tiers": [t.to_dict() for t in self.tiers],
            "pairs": self.pairs, "settled": self.settled, "unsettled": self.unsettled, "coverage": self.coverage,
            "agreement": {"target": 1 - self.alpha, "confidence": 1 - self.delta, "guarantee": self.guarantee},
            "win_rate": None if self.win_rate is None else self.win_rate.to_dict(),
            "unsettled_pairs": [dict(p) for p in self.unsettled_pairs],
            "interrupted": self.interrupted, "incomplete": self.incomplete}}


def _saved(loaded: LoadedConfig) -> tuple[dict[str, Any], list[float | None]]:
    """The thresholds file, checked against the cascade: the same judges in the same order, the same alpha and
    delta. A ConfigError names the configuration's key."""
    from swapjudge.workflows.escalate import read_thresholds

    cascade = loaded.config.cascade
    assert cascade is not None
    saved = read_thresholds(loaded.resolve(cascade.thresholds))
    names = [loaded.tier(i).config.judge.judge_name for i in range(loaded.tiers)]
    fitted = [t.get("judge") for t in saved["tiers"]]
    if fitted != names:
        raise ConfigError(f"{loaded.source}: key `cascade.thresholds`: the thresholds were fitted for the judges "
                          f"{fitted} in that order; this cascade is {names}")
    for key in ("alpha", "delta"):
        value = saved.get(key)
        if not isinstance(value, int | float) or not math.isclose(float(value), getattr(cascade, key)):
            raise ConfigError(f"{loaded.source}: key `cascade.{key}`: the thresholds were fitted at {key} {value}, "
                              f"not {getattr(cascade, key):g}")
    return saved, [None if t.get("threshold") is None else float(t["threshold"]) for t in saved["tiers"]]


def settle_rates(saved: dict[str, Any]) -> list[float | None]:
    """Each judge's share of the calibration pairs reaching it that it settled (None: not in the file)."""
    out: list[float | None] = []
    for tier in saved["tiers"]:
        cal = tier.get("calibration") or {}
        reached, settled = cal.get("reached"), cal.get("settled")
        known = isinstance(reached, int) and isinstance(settled, int) and reached > 0
        out.append(settled / reached if known else None)  # type: ignore[operator]
    return out


def _score(verdict: int, key: PairKey, a: str) -> float:
    """Core.confidence's settled verdict as a's score: 1 a win, 1/2 a tie, 0 a loss."""
    from swapjudge.core.confidence import VERDICT_TIE, VERDICT_X

    if verdict == VERDICT_TIE:
        return 0.5
    winner = key[1] if verdict == VERDICT_X else key[2]
    return 1.0 if winner == a else 0.0


def run_cascade(config: str | Path | LoadedConfig | Any, *, store: str | Path | None = None,
                console: Console | None = None, progress: bool = False, handle_sigint: bool = False,
                wait: bool = False) -> CascadeRunResult:
    """Judge the configured pairs through the cascade, judge by judge (see the module's docstring). `config`: a
    run configuration's path, mapping or LoadedConfig, with `cascade:`."""
    from swapjudge.workflows.run import config_argument, load_run_config

    loaded = load_run_config(config_argument(config))
    from swapjudge.core.cascade import guarantee_text
    from swapjudge.core.confidence import REASONS, records_confidence
    from swapjudge.errors import InputError
    from swapjudge.runner.session import run_session
    from swapjudge.store.analysis import run_record_set
    from swapjudge.workflows.escalate import configuration_of
    from swapjudge.workflows.run import open_run_store

    cascade = loaded.config.cascade
    if cascade is None:
        raise ConfigError(f"{loaded.source}: key `cascade`: this configuration has no cascade")
    saved, lams = _saved(loaded)
    where = str(loaded.resolve(cascade.thresholds))
    path = loaded.store_path(store)
    only: frozenset[PairKey] | None = None
    verdicts: dict[PairKey, tuple[int, int]] = {}  # settled pair -> (tier, verdict)
    reason_of: dict[PairKey, str] = {}
    all_keys: list[PairKey] = []
    tiers: list[CascadeTierRun] = []
    stopped: str | None = None
    interrupted = False
    names = [loaded.tier(i).config.judge.judge_name for i in range(loaded.tiers)]
    for index in range(loaded.tiers):
        tier = loaded.tier(index, _marker(loaded, index, names, lams))
        name = tier.config.judge.judge_name
        if stopped is not None or interrupted or (only is not None and not only):
            tiers.append(CascadeTierRun(name, None, lams[index], "", 0, 0, False, None, None))
            continue
        run_id = _done_run(tier, path, only)
        resumed, stats = True, None
        if run_id is None:
            outcome = run_session(tier, store_path=path, console=console, progress=progress,
                                  handle_sigint=handle_sigint, wait=wait, only_pairs=only)
            run_id, resumed, stats = outcome.run_id, outcome.resumed, outcome.stats.to_dict()
            if outcome.interrupted:
                interrupted = True
            elif not outcome.complete:
                stopped = f"judge {name!r} (run {run_id}) has {outcome.stats.failed:,} failed call(s)"
            if interrupted or stopped is not None:
                # nothing is passed on from a tier not yet in
                tiers.append(CascadeTierRun(name, run_id, lams[index], "", len(only) if only is not None else 0,
                                            0, resumed, stats, None))
                continue
        with open_run_store(path) as st:
            frame = run_record_set(st, run_id).frame
            cost = st.run(run_id).cost_usd
        pairs, conf = records_confidence(frame)
        now, then = configuration_of(frame, name), saved["tiers"][index].get("configuration") or {}
        if now["hash"] != then.get("hash"):
            raise InputError(f"judge {name!r}'s calls come from another judge configuration than the thresholds "
                             f"were fitted on (compared: {', '.join(then.get('basis') or ['judge'])})", path=where,
                             field="configuration")
        keys = [(str(i), str(x), str(y)) for i, x, y in pairs.frame.select("item", "x", "y").iter_rows()]
        if index == 0:
            all_keys = keys
        lam = lams[index]
        settled = conf.settled(lam) if lam is not None else np.zeros(len(conf), dtype=bool)
        for key, ok, verdict, reason in zip(keys, settled.tolist(), conf.verdict.tolist(), conf.reason.tolist(),
                                            strict=True):
            if ok:
                verdicts[key] = (index, int(verdict))
                reason_of.pop(key, None)
            else:
                reason_of[key] = "below_threshold" if reason == 0 else REASONS[reason]
        only = frozenset(k for k in keys if k not in verdicts)
        tiers.append(CascadeTierRun(name, run_id, lam, conf.measure_name, len(keys), int(settled.sum()), resumed,
                                    stats, cost))
    open_keys = [k for k in all_keys if k not in verdicts]
    unsettled = tuple({"item": k[0], "x": k[1], "y": k[2], "reason": reason_of.get(k, "not_judged")}
                      for k in open_keys)
    win_rate = None
    cfg = loaded.config.pairs
    if cfg.a and cfg.b and all_keys and stopped is None and not interrupted:
        people: dict[str, str] = {}
        if cascade.labels:
            from swapjudge.reading.sidefiles import load_labels

            people = load_labels(loaded.resolve(cascade.labels))
        judged = [_score(verdicts[k][1], k, cfg.a) if k in verdicts else math.nan for k in all_keys]
        voted = [(1.0 if people[k[0]] == cfg.a else 0.0 if people[k[0]] == cfg.b else 0.5)
                 if people.get(k[0]) in (cfg.a, cfg.b, "tie") else math.nan for k in all_keys]
        win_rate = cascade_win_rate(judged, voted, [k[0] for k in all_keys], a=cfg.a, b=cfg.b,
                                    confidence=loaded.config.confidence)
    return CascadeRunResult(store_path=path, tiers=tuple(tiers), pairs=len(all_keys), settled=len(verdicts),
                            unsettled_pairs=unsettled, alpha=cascade.alpha, delta=cascade.delta,
                            guarantee=guarantee_text(cascade.alpha, cascade.delta, loaded.tiers),
                            win_rate=win_rate, interrupted=interrupted, incomplete=stopped)


def _marker(loaded: LoadedConfig, index: int, names: list[str], lams: list[float | None]) -> dict[str, Any]:
    """What a tier's run is stored with: which cascade (its configuration's hash and every judge's threshold),
    which judge of it and the threshold it settles at, the judges in order, and the people's votes file: what
    `decide` reads it by."""
    cascade = loaded.config.cascade
    assert cascade is not None
    labels = str(loaded.resolve(cascade.labels).resolve()) if cascade.labels else None
    return {"cascade": loaded.config_hash, "thresholds": list(lams), "index": index, "judges": names,
            "threshold": lams[index], "alpha": cascade.alpha, "delta": cascade.delta, "labels": labels}


def _done_run(tier: LoadedConfig, path: Path, only: frozenset[PairKey] | None) -> int | None:
    """The finished run of this tier on these pairs, when the store holds one: a cascade run again reads it
    instead of judging again (an unfinished one is resumed by the runner)."""
    from swapjudge.runner.session import prepare, restrict_to
    from swapjudge.workflows.run import open_run_store

    if not path.exists():
        return None
    pairs, plan = prepare(tier)
    if only is not None:
        pairs, plan = restrict_to(pairs, plan, only)
    with open_run_store(path) as st:
        run_id = st.latest_run_of(tier.config_hash, pairs.digest)
        if run_id is None or st.run(run_id).status != "done":
            return None
        return run_id


@dataclass(frozen=True)
class CascadeEstimate:
    """`swapjudge run --dry-run` of a cascade: each judge priced on every pair, weighted by the share of pairs the
    calibration says reach it (the settle rates saved in the thresholds file), against the strongest judge alone
    on every pair. An estimate from the calibration pairs: new pairs may settle at other rates."""

    pairs: int
    judges: tuple[str, ...]
    reach: tuple[float | None, ...]  # expected share of the pairs reaching each judge (None: rates not saved)
    all_pairs_usd: tuple[float | None, ...]  # each judge's calls on every pair (None: no price)
    calls_all_pairs: tuple[int, ...]

    @property
    def cascade_usd(self) -> float | None:
        if any(r is None for r in self.reach) or any(c is None for c in self.all_pairs_usd):
            return None
        return float(sum(r * c for r, c in zip(self.reach, self.all_pairs_usd, strict=True)))  # type: ignore[operator,misc]

    @property
    def expected_calls(self) -> float | None:
        if any(r is None for r in self.reach):
            return None
        return float(sum(r * c for r, c in zip(self.reach, self.calls_all_pairs, strict=True)))  # type: ignore[operator,misc]

    @property
    def strongest_alone_usd(self) -> float | None:
        return self.all_pairs_usd[-1]

    def to_dict(self) -> dict[str, Any]:
        return {"pairs": self.pairs, "tiers": [
            {"judge": j, "expected_reach": r, "calls_on_all_pairs": n, "cost_on_all_pairs_usd": c}
            for j, r, n, c in zip(self.judges, self.reach, self.calls_all_pairs, self.all_pairs_usd, strict=True)],
            "expected_calls": self.expected_calls, "cascade_usd": self.cascade_usd,
            "strongest_alone_usd": self.strongest_alone_usd,
            "basis": "the calibration's settle rates (thresholds file)"}


def dry_run_cascade(loaded: LoadedConfig, *, store: str | Path | None = None) -> CascadeEstimate:
    """What the cascade would call and cost, calling nothing and writing nothing."""
    from swapjudge.runner.dry_run import estimate

    saved, _ = _saved(loaded)
    rates = settle_rates(saved)
    reach: list[float | None] = []
    share: float | None = 1.0
    for rate in rates:
        reach.append(share)
        share = None if share is None or rate is None else share * (1.0 - rate)
    estimates = [estimate(loaded.tier(i), store_path=store) for i in range(loaded.tiers)]
    return CascadeEstimate(pairs=estimates[0].pairs, judges=tuple(loaded.tier(i).config.judge.judge_name
                                                                   for i in range(loaded.tiers)),
                           reach=tuple(reach), all_pairs_usd=tuple(e.cost_usd for e in estimates),
                           calls_all_pairs=tuple(e.calls_to_make for e in estimates))
