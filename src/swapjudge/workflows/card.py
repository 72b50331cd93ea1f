"""`swapjudge card`: run the configured judge on a suite of public labelled pairs in both orders and put its card
together, set beside the reference cards of published judges; `--compare` sets saved cards side by side and
`--dry-run` prices the whole suite first.

Nothing is recomputed here: the judge runs through `workflows.run.run` (both orders, the store, resume, the
cache, any backend, batch included), each subset's records go through `analyze` and `agreement` as those commands
read them, the length probe through `workflows.probe.length`, the identical-answer probe through the live probe
(`runner.identical_probe`), and repeat stability through `probes.repeat` on calls made again.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import hashlib
import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swapjudge.core.display import Displayable
from swapjudge.errors import ConfigError, InputError, SwapjudgeError
from swapjudge.outcome import Concluded, Conclusion, Ending
from swapjudge.probes.judge_card import CARD_KIND, JudgeCard, RepeatCheck, SubsetCard, SubsetInfo, per_pair_rows

if TYPE_CHECKING:
    from rich.console import Console

    from swapjudge.config import LoadedConfig
    from swapjudge.drift.card_compare import CardComparison
    from swapjudge.runner.dry_run import DryRunEstimate
    from swapjudge.workflows.run import RunResult

BUILTIN_SUITES = ("default", "quick")
SUITE_FILE = "llmbar.jsonl.gz"
SUBSET_MARK = "#"  # a suite's item `SUBSET#ID` belongs to SUBSET
WHOLE_FILE = "all"


@dataclass(frozen=True)
class Suite:
    """The labelled pairs a card is measured on: pairs-file rows, grouped into subsets by item."""

    name: str
    rows: tuple[dict[str, Any], ...]
    subsets: tuple[SubsetInfo, ...]
    description: Mapping[str, Any]
    path: Path | None = None  # a user's own pairs file (the built-in suites are written out for the run)

    @property
    def text(self) -> str:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.rows)

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def subset_of(self, item: str) -> str:
        return subset_of(item, {s.name for s in self.subsets})


def subset_of(item: str, names: set[str]) -> str:
    head = item.split(SUBSET_MARK, 1)[0]
    return head if SUBSET_MARK in item and head in names else WHOLE_FILE


@cache
def _manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(resources.files("swapjudge").joinpath("suites", "manifest.json").read_text(
        encoding="utf-8"))
    return data


@cache
def _builtin_rows() -> tuple[dict[str, Any], ...]:
    raw = gzip.decompress(resources.files("swapjudge").joinpath("suites", SUITE_FILE).read_bytes())
    if hashlib.sha256(raw).hexdigest() != _manifest()["pairs_sha256"]:
        raise SwapjudgeError(f"the packaged suite {SUITE_FILE} does not match its manifest: reinstall swapjudge")
    return tuple(json.loads(line) for line in raw.decode("utf-8").splitlines() if line)


def load_suite(suite: str | Path = "default") -> Suite:
    """`default` (about 600 LLMBar pairs), `quick` (32 of them), or the path of a pairs file of one's own
    (items named `SUBSET#ID` are grouped by SUBSET; any other item belongs to the subset `all`)."""
    if str(suite) in BUILTIN_SUITES:
        manifest = _manifest()
        rows = _builtin_rows()
        if str(suite) == "quick":
            keep = set(manifest["quick"])
            rows = tuple(r for r in rows if r["item"] in keep)
        subsets = tuple(SubsetInfo(s["name"], f"llmbar/{s['name']}", f"{manifest['source']}: {s['file']}",
                                   manifest["licence"], s["label_meaning"], s["source_pairs"])
                        for s in manifest["subsets"])
        description = {k: manifest[k] for k in ("name", "description", "source", "licence", "sample")}
        return Suite(str(suite), rows, subsets, description)
    from swapjudge.reading.pairs_file import load_pairs

    path = Path(suite)
    pairs = load_pairs(path)
    rows = tuple({"item": it.item, "prompt": it.prompt, "answers": dict(it.answers),
                  **({"label": it.label} if it.label is not None else {})} for it in pairs.items)
    names: dict[str, None] = {}
    for it in pairs.items:
        head = it.item.split(SUBSET_MARK, 1)[0] if SUBSET_MARK in it.item else WHOLE_FILE
        names.setdefault(head, None)
    subsets = tuple(SubsetInfo(n, f"file:{pairs.digest[:16]}/{n}", str(path)) for n in names)
    return Suite(path.stem, rows, subsets, {"name": path.stem, "source": str(path), "licence": None,
                                             "description": "a pairs file of one's own"}, path)


def _suite_pairs_path(suite: Suite, store_path: Path) -> Path:
    """The pairs file the run judges: a user's own file as it is; a built-in suite written beside the store (once:
    the same bytes every time, so the run's pairs digest and configuration stay the same and a run resumes)."""
    from swapjudge.reading.textfiles import write_atomic

    if suite.path is not None:
        return suite.path.resolve()
    path = store_path.resolve().parent / f"{store_path.stem}.card-{suite.name}.pairs.jsonl"
    text = suite.text
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    return path


def _read_config(config: str | Path | Mapping[str, Any] | LoadedConfig) -> LoadedConfig:
    """The run configuration, its `pairs` optional (the suite takes its place)."""
    from swapjudge.config import LoadedConfig, PairsConfig, parse_config
    from swapjudge.runner.backend import check_judge_options

    if isinstance(config, LoadedConfig):
        return config
    placeholder = {"path": "(the suite)"}
    if isinstance(config, Mapping):
        loaded = parse_config({**dict(config), "pairs": placeholder}, source=Path.cwd() / "(configuration)")
        check_judge_options(loaded)
        return loaded
    from swapjudge.yamlfile import read_yaml

    source = Path(config)
    data = read_yaml(source, what="the configuration", error=ConfigError)
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the configuration must be a mapping of keys to values")
    data["pairs"] = placeholder  # the suite's (a fresh mapping, which keeps its keys' lines)
    loaded = parse_config(data, source=source)
    assert isinstance(loaded.config.pairs, PairsConfig)
    check_judge_options(loaded)
    return loaded


def card_config(config: str | Path | Mapping[str, Any] | LoadedConfig, suite: Suite, *,
                store: str | Path | None = None) -> LoadedConfig:
    """The configuration a card runs: the user's judge, rubric, schema, tie policy and gate, with the suite as its
    pairs (every pair of each item's two answers)."""
    from swapjudge.config import LoadedConfig, PairsConfig

    loaded = _read_config(config)
    pairs_path = _suite_pairs_path(suite, loaded.store_path(store))
    updated = loaded.config.model_copy(update={"pairs": PairsConfig(path=str(pairs_path))})
    return LoadedConfig(updated, source=loaded.source, rubric_text=loaded.rubric_text)


def _without_attack_gate(loaded: LoadedConfig) -> LoadedConfig:
    """The configuration without `attacks` and `max_attack_win` (not hashed: the same run and cache)."""
    from swapjudge.config import LoadedConfig

    config = loaded.config.model_copy(update={"attacks": None, "max_attack_win": None})
    return LoadedConfig(config, source=loaded.source, rubric_text=loaded.rubric_text)


def probe_sizes(pairs: int) -> tuple[int, int]:
    """(answers in the identical-answer probe, pairs judged again for repeat stability) for a suite of `pairs`."""
    return max(8, math.ceil(pairs / 12)), min(30, max(4, pairs // 20))


def _repeat_items(suite: Suite, k: int, seed: str) -> list[str]:
    items = sorted(str(r["item"]) for r in suite.rows)
    return sorted(random.Random(f"repeat|{suite.digest}|{seed}").sample(items, min(k, len(items))))


async def _probes(loaded: LoadedConfig, identical_n: int,
                  repeat_items: Sequence[str]) -> tuple[Any, list[dict[str, Any]], int]:
    """The identical-answer probe and the repeated calls, through one judge: each call through the runner's
    retry policy and rate limiter, none stored (a probe measures the judge; it is not part of the run)."""
    from swapjudge.runner.backend import open_judge
    from swapjudge.runner.identical_probe import run_identical_async
    from swapjudge.runner.plan import estimated_tokens, expected_output_tokens
    from swapjudge.runner.ratelimit import RateLimiter
    from swapjudge.runner.retry import Pacing, RetryPolicy, call_with_retries
    from swapjudge.runner.session import prepare

    judge = open_judge(loaded)
    jc = loaded.config.judge
    try:
        identical = await run_identical_async(loaded, sample=identical_n, seed=loaded.config.seed, judge=judge)
        _, plan = prepare(loaded)
        wanted = set(repeat_items)
        calls = [c for c in plan.calls if c.item in wanted and not c.identical]
        pacing = Pacing(RateLimiter(jc.requests_per_minute, jc.tokens_per_minute))
        policy = RetryPolicy.of(jc)
        gate = asyncio.Semaphore(max(1, jc.max_concurrency))

        async def again(call: Any) -> dict[str, Any]:
            async with gate:
                reply, error, _ = await call_with_retries(
                    lambda: judge.judge(call.request), policy, pacing,
                    est_tokens=estimated_tokens(call.request, expected_output_tokens(call.request)))
            return {"judge": jc.judge_name, "round": 1, "item": call.item, "first": call.first,
                    "second": call.second, "verdict": reply.verdict if reply else None,
                    **({"label": call.label} if call.label is not None else {}),
                    "failed": reply is None or (error is not None and reply.verdict is None)}

        repeated = list(await asyncio.gather(*(again(c) for c in calls)))
    finally:
        await judge.aclose()
    failed = sum(bool(r.pop("failed")) for r in repeated)
    return identical, repeated, failed


CORE_FIELDS = ("judge", "round", "item", "first", "second", "verdict", "label")


def subset_card(info: SubsetInfo, rows: list[dict[str, Any]], *, tie_policy: str = "half_credit",
                min_consistency: float = 0.70, confidence: float = 0.95, pairs: Path | None = None,
                keep_pairs: bool = True) -> SubsetCard:
    """`analyze`, `agreement` and (with the answer texts of `pairs`) the length probe on one subset's records, as
    those commands read them; `keep_pairs` keeps each pair's verdicts for paired comparisons."""
    from swapjudge.reading.records import read_records
    from swapjudge.workflows import probe
    from swapjudge.workflows.analyze import analyze

    analyses = analyze(rows, tie_policy=tie_policy, min_consistency=min_consistency, confidence=confidence)
    agreement = probe.agreement(rows, confidence=confidence)
    pair_rows = [r for r in rows if r["first"] != r["second"] and int(r.get("round") or 0) == 0]
    length = None
    if pairs is not None:
        try:
            length = probe.length(pair_rows, pairs=pairs)[0]
        except SwapjudgeError:
            length = None  # no pair of the subset has both answer texts
    per_pair: tuple[tuple[Any, ...], ...] = ()
    if keep_pairs:
        loaded_records = read_records(pair_rows, extras=False)
        assert loaded_records.pairs is not None
        per_pair = tuple(tuple(r) for r in per_pair_rows(loaded_records.pairs))
    return SubsetCard(info, analyses[0], agreement[0] if agreement and agreement[0].labelled_pairs else None, length,
                      per_pair)


def _subset_card(info: SubsetInfo, rows: list[dict[str, Any]], loaded: LoadedConfig) -> SubsetCard:
    cfg = loaded.config
    return subset_card(info, rows, tie_policy=cfg.tie_policy, min_consistency=cfg.gates.min_self_consistency,
                       confidence=cfg.confidence, pairs=loaded.pairs_path)


@dataclass(frozen=True)
class CardRun(Displayable, Concluded):
    """`swapjudge card`: the run and, once every call is in, the card (None while batches are waiting or after an
    interruption: the same command resumes)."""

    run: RunResult
    card: JudgeCard | None

    def ending(self) -> Ending:
        """Interrupted (exit 130) when the run was stopped; failed (exit 1) when the judge is below the
        self-consistency gate on the whole suite; ok otherwise (batches still waiting included: nothing is judged
        yet)."""
        if self.card is None:
            if self.run.interrupted:
                return Ending(Conclusion.interrupted, (f"interrupted: every finished call is stored in "
                                                    f"{self.run.store_path}; the same command resumes",))
            return Ending()
        if not self.card.passed:
            gate = self.card.overall.analysis.gate
            return Ending(Conclusion.failed, (f"gate: {gate.reason or 'below the self-consistency gate'} "
                                           "(the whole suite)",))
        return Ending()

    def to_dict(self) -> dict[str, Any]:
        from swapjudge.core.documents import json_document

        document: dict[str, Any] = json_document(
            {"kind": CARD_KIND, "card": None, "run": self.run.to_dict()["run"]} if self.card is None
            else self.card.to_dict())
        return document


def card(config: str | Path | Mapping[str, Any] | LoadedConfig, *, suite: str | Path = "default",
         store: str | Path | None = None, references: bool = True, progress: bool = False,
         console: Console | None = None, handle_sigint: bool = False, wait: bool = False,
         batch_wait: bool = True, retry_unparsed: bool = False, attacks: Sequence[str] | None = None,
         attack_pairs: int = 32) -> CardRun:
    """Judge the suite in both orders with the configured judge and make its card (`swapjudge card CONFIG`). Running
    it again resumes the run and reuses every stored reply; the probes' calls are made again. `attacks`: also run
    the attack probe (`swapjudge probe attack`) on `attack_pairs` pairs of the suite, through the run's store (its
    placebo's prompts are the run's own, served from the cache; the attacks' replies are cached); the card carries
    its table. A configuration's `attacks` (without `attacks` here) are probed the same way, for the table: the
    card applies no `max_attack_win` gate (`swapjudge run` does)."""
    from rich.console import Console

    from swapjudge.core import arguments
    from swapjudge.store.analysis import run_records
    from swapjudge.version import __version__
    from swapjudge.workflows.run import config_argument, open_run_store, run

    config = config_argument(config)
    suite = arguments.path(suite, "suite", optional=False, what="a suite's name (default, quick) or a pairs file's "
                           "path")
    store = arguments.path(store, "store", what="a run store's path")
    for value, name in ((references, "references"), (progress, "progress"), (handle_sigint, "handle_sigint"),
                        (wait, "wait"), (batch_wait, "batch_wait"), (retry_unparsed, "retry_unparsed")):
        arguments.flag(value, name)
    console = arguments.instance(console, "console", (Console,), "a rich Console")
    attacks = None if attacks is None else arguments.names(attacks, "attacks")
    attack_pairs = arguments.integer(attack_pairs, "attack_pairs", minimum=1)
    chosen = load_suite(suite)
    loaded = card_config(config, chosen, store=store)
    if loaded.config.attacks is not None:  # the card's attack table, below, not the run's gate
        attacks = attacks if attacks is not None else loaded.config.attacks
        loaded = _without_attack_gate(loaded)
    result = run(loaded, store=store, progress=progress, console=console, handle_sigint=handle_sigint, wait=wait,
                 batch_wait=batch_wait, retry_unparsed=retry_unparsed)
    if result.interrupted or result.waiting:
        return CardRun(result, None)
    with open_run_store(result.store_path) as st:
        records = [{k: r[k] for k in CORE_FIELDS if k in r} for r in run_records(st, result.run_id)
                   if r.get("source") != "inferred"]
        info = st.run(result.run_id)
    identical_n, repeat_n = probe_sizes(len(chosen.rows))
    repeat_items = _repeat_items(chosen, repeat_n, loaded.config.seed)
    identical, repeated, failed = asyncio.run(_probes(loaded, identical_n, repeat_items))
    probe_rows = [{k: r[k] for k in CORE_FIELDS if k in r} for r in identical.records]
    names = {s.name for s in chosen.subsets}
    by_subset: dict[str, list[dict[str, Any]]] = {}
    for row in [*records, *probe_rows]:
        by_subset.setdefault(subset_of(str(row["item"]), names), []).append(row)
    present = [s for s in chosen.subsets if s.name in by_subset]
    if WHOLE_FILE in by_subset and WHOLE_FILE not in names:
        present.append(SubsetInfo(WHOLE_FILE, f"suite:{chosen.digest[:16]}/{WHOLE_FILE}"))
    subsets = tuple(_subset_card(s, by_subset[s.name], loaded) for s in present)
    overall = _subset_card(SubsetInfo("whole suite", f"suite:{chosen.digest[:16]}"), [*records, *probe_rows], loaded)
    repeat_check = _repeat_check(records, repeated, repeat_items, failed, loaded.config.confidence)
    cfg = loaded.config
    protocol = {
        "orders": "both (ab, ba)" if cfg.orders == "both" else cfg.orders,
        "seed": cfg.seed, "coin_seed": result.coin_seed, "tie_policy": cfg.tie_policy, "schema": cfg.schema_,
        "min_self_consistency": cfg.gates.min_self_consistency, "confidence": cfg.confidence,
        "rubric_hash": info.rubric_hash, "template_hash": info.template_hash,
        "judge": cfg.judge.judge_name, "backend": cfg.judge.backend, "model": info.judge_model,
        "version": info.judge_version, "temperature": cfg.judge.temperature,
        "date": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "swapjudge_version": __version__, "run_id": result.run_id, "store": str(result.store_path),
        "config_hash": result.config_hash, "suite": chosen.name, "suite_sha256": chosen.digest,
        "pairs": len(chosen.rows), "identical_answers": identical.planned, "repeat_pairs": len(repeat_items),
        "probe_calls": "the identical-answer probe and the repeated calls go to the judge synchronously (never "
                       "through a batch API) and are not stored",
    }
    made = JudgeCard(cfg.judge.judge_name, {**chosen.description, "pairs": len(chosen.rows),
                                            "sha256": chosen.digest, "suite": chosen.name},
                     subsets, overall, repeat_check, protocol, notes=_card_notes(subsets, result.stats))
    if references:
        made = replace(made, comparison=compare_with_references(made.to_dict(), loaded.config.confidence))
    if attacks:
        from swapjudge.runner.attack_probe import run_attack

        made = replace(made, attacks=run_attack(loaded, attacks=list(attacks), sample=attack_pairs,
                                                seed=cfg.seed, store_path=result.store_path))
    return CardRun(result, made)


def _card_notes(subsets: Sequence[SubsetCard], stats: Mapping[str, Any]) -> tuple[str, ...]:
    notes = []
    if stats.get("failed"):
        notes.append(f"{stats['failed']} call(s) failed after retries: their pairs are incomplete, shown and left out "
                     "of every rate; the same command retries only those")
    if stats.get("unparsed_stored"):
        notes.append(f"{stats['unparsed_stored']} stored call(s) have no parsable verdict: their pairs are incomplete "
                     "(the same command with --retry-unparsed asks the judge again for exactly those)")
    notes += ["each subset's figures are those `swapjudge analyze` and `swapjudge agreement` print on that "
             "subset's records; every interval says what it treats as independent (`independent` in the JSON: "
             "pairs, or items where an item holds several pairs)"]
    if len(subsets) > 1:
        notes.append(f"{len(subsets)} subsets are tested separately: a flip-direction p-value below 0.05 in one of "
                     "them is one of several tests (the comparisons with reference cards are Holm-corrected)")
    return tuple(notes)


def _repeat_check(records: list[dict[str, Any]], repeated: list[dict[str, Any]], items: Sequence[str], failed: int,
                  confidence: float) -> RepeatCheck:
    import polars as pl

    from swapjudge.probes.repeat import repeat_stability
    from swapjudge.reading.records import read_records

    wanted = set(items)
    rows = [r for r in records if r["item"] in wanted and r["first"] != r["second"]] + repeated
    if not repeated:
        return RepeatCheck(len(items), tuple(items), None, failed)
    frame = read_records(rows, extras=False).frame
    judge = str(frame.get_column("judge")[0])
    return RepeatCheck(len(items), tuple(items), repeat_stability(frame.filter(pl.col("judge") == judge),
                                                                   judge=judge or None, confidence=confidence),
                       failed)


# ---- reference cards ------------------------------------------------------------------------------------------

REFERENCE_FILES = ("shi2024.json", "llmbar_published.json")


def _reference_text(name: str) -> str:
    return resources.files("swapjudge").joinpath("suites", "references", name).read_text(encoding="utf-8")


@cache
def reference_cards() -> tuple[dict[str, Any], ...]:
    """The shipped reference cards: the Shi et al. (2024) judges on MT-Bench and DevBench (their own pairs) and
    LLMBar's published evaluators on the suite's sets (counts from their statistics files)."""
    from swapjudge.probes.judge_card import llmbar_reference_cards

    shi = json.loads(_reference_text("shi2024.json"))
    return (*shi["cards"], *llmbar_reference_cards(json.loads(_reference_text("llmbar_published.json"))))


def compare_with_references(card_dict: Mapping[str, Any], confidence: float = 0.95) -> CardComparison:
    from swapjudge.drift.card_compare import compare_cards

    return compare_cards([card_dict, *reference_cards()], confidence=confidence)


# ---- saved cards side by side ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class CardSet(Displayable):
    """`swapjudge card --compare A.json B.json ...`: saved cards, their subsets side by side, every two cards'
    differences (Holm over all of them) and the tiers."""

    cards: tuple[Mapping[str, Any], ...]
    comparison: CardComparison

    def to_dict(self) -> dict[str, Any]:
        from swapjudge.core.documents import json_document

        document: dict[str, Any] = json_document({"kind": "judge_card_comparison",
                                                  "cards": [_summary(c) for c in self.cards],
                                                  **self.comparison.to_dict()})
        return document


def _summary(card: Mapping[str, Any]) -> dict[str, Any]:
    return {"judge": card.get("judge"), "source": card.get("source"),
            "subsets": [{k: s.get(k) for k in ("name", "pair_set", "pairs", "consistency", "flip_direction",
                                               "accuracy")} for s in card.get("subsets") or []]}


def read_card(path: str | Path) -> dict[str, Any]:
    """A saved card (`swapjudge card ... --format json`, or a reference card file); problems name the file."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", path=str(p)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"not a JSON card ({err})", path=str(p)) from None
    if isinstance(data, dict) and isinstance(data.get("cards"), list) and "subsets" not in data:
        raise InputError("holds several cards (a reference file?): pass one card per file", path=str(p))
    if not isinstance(data, dict) or data.get("kind") not in (CARD_KIND, "reference_card") or \
            not isinstance(data.get("subsets"), list):
        raise InputError("not a judge card (no `kind: judge_card` and `subsets`)", path=str(p))
    for index, subset in enumerate(data["subsets"]):
        if not isinstance(subset, dict) or "name" not in subset or "consistency" not in subset:
            raise InputError(f"subset {index + 1} has no `name` or `consistency`", path=str(p), field="subsets")
    return data


def compare_saved(paths: Sequence[str | Path], *, confidence: float = 0.95) -> CardSet:
    from swapjudge.drift.card_compare import compare_cards

    if len(paths) < 2:
        raise SwapjudgeError("give at least two saved cards to compare")
    cards = tuple(read_card(p) for p in paths)
    return CardSet(cards, compare_cards(cards, all_pairs=True, confidence=confidence))


# ---- the dry run ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CardEstimate(Displayable):
    """`swapjudge card CONFIG --dry-run`: the run's calls, tokens and cost (synchronous and batch prices) for the
    whole suite, plus the probes' calls (always synchronous)."""

    suite: str
    pairs: int
    run: DryRunEstimate
    probe_calls: int
    probe_input_tokens: int
    probe_output_tokens: int
    probe_cost_usd: float | None

    @property
    def calls(self) -> int:
        return self.run.calls_to_make + self.probe_calls

    @property
    def sync_cost_usd(self) -> float | None:
        return None if self.run.cost_usd is None or self.probe_cost_usd is None else self.run.cost_usd + \
            self.probe_cost_usd

    @property
    def batch_cost_usd(self) -> float | None:
        """The run through the provider's batch API (with prompt caching where it combines), the probes synchronous."""
        batch = self.run.batch_cached_cost_usd if self.run.batch_cached_cost_usd is not None else \
            self.run.batch_cost_usd
        return None if batch is None or self.probe_cost_usd is None else batch + self.probe_cost_usd

    def to_dict(self) -> dict[str, Any]:
        from swapjudge.core.documents import json_document

        document: dict[str, Any] = json_document({
            "suite": self.suite, "pairs": self.pairs, "calls": self.calls,
            "input_tokens": self.run.input_tokens + self.probe_input_tokens,
            "output_tokens": self.run.output_tokens + self.probe_output_tokens,
            "cost_usd": {"sync": self.sync_cost_usd, "batch": self.batch_cost_usd},
            "run": self.run.to_dict(),
            "probes": {"calls": self.probe_calls, "input_tokens": self.probe_input_tokens,
                       "output_tokens": self.probe_output_tokens, "cost_usd": self.probe_cost_usd}})
        return document


def card_dry_run(config: str | Path | Mapping[str, Any] | LoadedConfig, *, suite: str | Path = "default",
                 store: str | Path | None = None) -> CardEstimate:
    """What `swapjudge card` would call and cost, calling nothing (the suite's pairs file is written beside the
    store, as the run would)."""
    from swapjudge.reading.pairs_file import load_pairs
    from swapjudge.runner.backend import structured_output
    from swapjudge.runner.identical_probe import plan_self_pairs
    from swapjudge.runner.plan import CHARS_PER_TOKEN, expected_output_tokens
    from swapjudge.runner.pricing import call_cost, price_for
    from swapjudge.runner.session import prepare
    from swapjudge.workflows.run import dry_run

    chosen = load_suite(suite)
    loaded = card_config(config, chosen, store=store)
    estimate = dry_run(loaded, store=store)
    cfg = loaded.config
    identical_n, repeat_n = probe_sizes(len(chosen.rows))
    structured = structured_output(cfg.judge)
    requests = [c.request for c in plan_self_pairs(loaded, load_pairs(loaded.pairs_path), sample=identical_n,
                                                   seed=cfg.seed, structured=structured)]
    wanted = set(_repeat_items(chosen, repeat_n, cfg.seed))
    requests += [c.request for c in prepare(loaded)[1].calls if c.item in wanted and not c.identical]
    in_tok = int(sum((len(r.system) + len(r.user)) / CHARS_PER_TOKEN for r in requests))
    out_tok = sum(expected_output_tokens(r) for r in requests)
    price = price_for(cfg.judge.model, cfg.prices, backend=cfg.judge.backend)
    return CardEstimate(chosen.name, len(chosen.rows), estimate, len(requests), in_tok, out_tok,
                        call_cost(price, input_tokens=in_tok, output_tokens=out_tok))


# ---- best of N: the card of a `protocol: listwise` judge ---------------------------------------------------------

LISTWISE_CARD_KIND = "swapjudge listwise judge card"


@dataclass(frozen=True)
class ListwiseCard(Displayable, Concluded):
    """The card of a best-of-N judge on a suite of answer sets (three or more answers an item): per subset and for
    the whole suite, `analyze`'s N-way figures (slot shares, the slot test, winner consistency and its gate,
    accuracy against the labels) and, above the gate, the strengths with the slot effects."""

    judge: str
    suite: str
    run_id: int
    store_path: Path
    overall: Any  # workflows.listwise.ListwiseAnalysis
    subsets: tuple[tuple[str, Any], ...]

    def ending(self) -> Ending:
        gate = self.overall.gate
        if gate.passed:
            return Ending(Conclusion.ok)
        return Ending(Conclusion.failed, (f"{self.judge}: {gate.reason}",))

    def to_dict(self) -> dict[str, Any]:
        overall = self.overall.to_dict()
        return {"kind": LISTWISE_CARD_KIND, "protocol": "listwise", "judge": self.judge,
                "suite": {"suite": self.suite, "items": overall["listwise"]["items"],
                          "calls": overall["listwise"]["calls"]},
                "run": {"id": self.run_id, "store": str(self.store_path)},
                "overall": {"name": "whole suite", **overall},
                "subsets": [{"name": name, **one.to_dict()} for name, one in self.subsets]}


@dataclass(frozen=True)
class ListwiseWaiting:
    """A best-of-N card's run with batches not collected yet (`judge.batch: files`, or submitted without waiting):
    no card until every call is in; the same command collects them."""

    requests: int
    batches: int

    def to_dict(self) -> dict[str, Any]:
        return {"waiting": {"requests": self.requests, "batches": self.batches}}


def listwise_card(config: str | Path, *, suite: str | Path, store: str | Path | None = None,
                  console: Console | None = None, progress: bool = False, bootstrap: int = 200,
                  seed: int = 0, batch_wait: bool = True) -> ListwiseCard | ListwiseWaiting:
    """Run a `protocol: listwise` judge on `suite` (an answers file: three or more answers an item; items named
    SUBSET#ID are grouped by SUBSET) through the run store, and put its card together from the stored calls
    (`ListwiseWaiting` while batches are still out: `judge.batch: files` writes its request files and stops,
    `batch_wait` False submits the provider batches and stops)."""
    from swapjudge.runner.listwise_run import listwise_run_records, run_listwise
    from swapjudge.workflows.listwise import analyze_listwise

    if str(suite) in BUILTIN_SUITES:
        raise InputError(f"the built-in suite {suite!r} holds pairs (two answers an item): a best-of-N card needs a "
                         "suite of three or more answers an item: give {suite} an answers file",
                         arguments=("suite",))
    done = run_listwise(config, store=store, console=console, progress=progress, answers=suite,
                        batch_wait=batch_wait)
    if done.batches_waiting:
        return ListwiseWaiting(done.requests_waiting, done.batches_waiting)
    rows = listwise_run_records(done.store_path, done.run_id)
    names = sorted({str(r["item"]).split(SUBSET_MARK, 1)[0] for r in rows if SUBSET_MARK in str(r["item"])})
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(subset_of(str(row["item"]), set(names)), []).append(row)
    def one(part: list[dict[str, Any]]) -> Any:
        return analyze_listwise(part, min_consistency=done.min_consistency, bootstrap=bootstrap, seed=seed)[0]

    overall = one(rows)
    subsets = tuple((name, one(grouped[name])) for name in sorted(grouped) if len(grouped) > 1)
    return ListwiseCard(overall.judge, Path(suite).name, done.run_id, done.store_path, overall, subsets)
