"""The run configuration (YAML), validated before the first judge call.

Relative paths are resolved against the configuration file's directory. The configuration hash is computed
from the validated, normalised settings plus the rubric text, so the same judging setup always hashes the same
whatever the key order or spelling of defaults in the file.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from swapjudge.defaults import DEFAULT_STORE as DEFAULT_STORE  # re-exported: its home before
from swapjudge.errors import ArgumentError, ConfigError
from swapjudge.redact import redact_url
from swapjudge.yamlfile import load_yaml, where

Backend = str  # openai | anthropic | local | replay | any name registered in judges.registry
TiePolicy = Literal["half_credit", "exclude", "no_credit", "separate"]
Schema = Literal["forced_choice", "allow_tie"]

DEFAULT_MAX_RETRY_AFTER_S = 600.0

# Judge settings that do not change what the judge answers: left out of the judge hash so that changing
# concurrency or rate limits never invalidates the cache.
RUNTIME_ONLY_JUDGE_KEYS = frozenset(
    {
        "name",
        "api_key_env",
        "max_concurrency",
        "requests_per_minute",
        "tokens_per_minute",
        "timeout_s",
        "max_retries",
        "backoff_s",
        "max_backoff_s",
        "max_retry_after_s",
        *("batch", "batch_fallback", "batch_dir", "batch_poll_s"),
    }
)

# How calls are made, not what is asked: kept out of the configuration hash too, so a run resumes (and collects
# its batches in flight) whichever way its remaining calls go.
BATCH_JUDGE_KEYS = ("batch", "batch_fallback", "batch_dir", "batch_poll_s")
BATCH_BACKENDS = ("openai", "anthropic")
# Which executor makes the calls (`engine`, and its `ray:` settings): how calls are made, not what is asked, so
# neither is part of the configuration hash (a run resumes whichever engine makes its remaining calls).
ENGINE_KEYS = ("engine", "ray")
Engine = Literal["sync", "ray"]
ENGINES: tuple[str, ...] = ("sync", "ray")
# The attack gate (`attacks`, `max_attack_win`, `attack_pairs`): a probe run after the run, kept out of the
# configuration hash, so adding it neither starts a new run nor asks the judge anything again.
ATTACK_KEYS = ("attacks", "max_attack_win", "attack_pairs")


class Price(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)


class JudgeConfig(BaseModel):
    """Which judge to call and how. Backend-specific extra keys are allowed and passed to the backend."""

    model_config = ConfigDict(extra="allow")

    backend: Backend
    model: str | None = None
    name: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float = Field(default=0.0, ge=0)
    max_tokens: int | None = Field(default=None, gt=0)
    # Ask for a JSON verdict through the API's structured output (json_schema / forced tool use).
    structured_output: bool = True
    logprobs: bool = False
    max_concurrency: int = Field(default=8, ge=1, le=1024)
    requests_per_minute: float | None = Field(default=None, gt=0)
    tokens_per_minute: float | None = Field(default=None, gt=0)
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=5, ge=0, le=50)
    backoff_s: float = Field(default=1.0, ge=0)
    max_backoff_s: float = Field(default=60.0, ge=0)
    # A server asking to wait longer than this (Retry-After) stops the run, resumable, instead of sleeping.
    max_retry_after_s: float = Field(default=DEFAULT_MAX_RETRY_AFTER_S, gt=0)
    # Replay backend: the records file acting as the judge (relative to the configuration file).
    path: str | None = None
    # Provider batch APIs (half price, results within 24 h): true; `files`: write OpenAI batch-format request
    # files to `batch_dir` for an offline engine (vLLM run_batch) and read its output files back.
    batch: bool | Literal["files"] = False
    # Calls a batch returned errored, expired or canceled: a follow-up batch, or the synchronous API.
    batch_fallback: Literal["batch", "sync"] = "batch"
    batch_dir: str | None = None
    batch_poll_s: float = Field(default=30.0, gt=0)
    # `graded`: ask for a five-level verdict (A>>B, A>B, A=B, B>A, B>>A; four under forced choice) and keep its
    # strength with each call; `plain`: the slot (or tie) only
    verdict_scale: Literal["plain", "graded"] = "plain"

    @field_validator("base_url")
    @classmethod
    def _one_spelling(cls, value: str | None) -> str | None:
        # `.../v1` and `.../v1/` are one server: one judge identity, one cache.
        return None if value is None else value.strip().rstrip("/")

    @model_validator(mode="after")
    def _model_needed(self) -> JudgeConfig:
        if self.backend in ("openai", "anthropic", "local") and not self.model:
            raise ValueError(f"backend {self.backend!r} needs `model`")
        if self.backend == "replay" and not self.path:
            raise ValueError("backend 'replay' needs `path` (a presentation records file)")
        if self.batch is not False and self.backend not in BATCH_BACKENDS:
            raise ValueError(f"`batch` is for the openai and anthropic backends, not {self.backend!r}")
        if self.batch == "files" and (self.backend != "openai" or not self.batch_dir):
            raise ValueError("`batch: files` needs backend openai and `batch_dir` (where request files go)")
        return self

    @property
    def judge_name(self) -> str:
        return self.name or (f"{self.backend}:{self.model}" if self.model else self.backend)

    def extra(self) -> dict[str, Any]:
        """Backend-specific keys not declared above (e.g. options of the local backend)."""
        return dict(self.model_extra or {})

    def identity(self) -> dict[str, Any]:
        """The settings that decide what the judge answers (the cache key's judge part). A credential in
        `base_url` is no part of it: the same server with another key is the same judge."""
        data = self.model_dump(mode="json")
        if data.get("verdict_scale") == "plain":
            data.pop("verdict_scale")  # absent unless graded: judge hashes (and caches) stay as they were
        if data.get("base_url"):
            data["base_url"] = redact_url(data["base_url"])
        return {k: v for k, v in sorted(data.items()) if k not in RUNTIME_ONLY_JUDGE_KEYS}


class RayConfig(BaseModel):
    """`engine: ray`: Ray Data workers make the calls. `processor: http` sends each request to the judge's
    OpenAI-compatible endpoint (`judge.base_url`, a fleet behind one address); `processor: vllm` runs vLLM on the
    cluster's GPUs, or its CPUs with `resources_per_bundle: {CPU: 1}` (Ray's vLLM engine processor), with
    `model_source` (default `judge.model`)."""

    model_config = ConfigDict(extra="forbid")

    processor: Literal["http", "vllm"] = "http"
    # A running cluster (`auto`, `ray://head:10001`); none: a local one, started for the run and stopped after.
    address: str | None = None
    num_cpus: int | None = Field(default=None, ge=1)  # the local cluster's CPUs (default: all of them)
    concurrency: int = Field(default=2, ge=1, le=4096)  # HTTP workers, or vLLM engine replicas
    # Requests per worker batch: a worker's replies come back together, so this is also what a kill can lose.
    batch_size: int = Field(default=16, ge=1, le=4096)
    model_source: str | None = None  # processor vllm: the weights (a Hugging Face id or a path)
    engine_kwargs: dict[str, Any] = Field(default_factory=dict)  # processor vllm: vLLM's engine arguments
    accelerator_type: str | None = None  # processor vllm: the GPU type to schedule on ("H100", "A100")
    # processor vllm: what each engine worker reserves ({CPU: 1} for vLLM's CPU build); none: Ray's {GPU: 1, CPU: 1}
    resources_per_bundle: dict[str, Annotated[float, Field(ge=0)]] | None = None

    @model_validator(mode="after")
    def _vllm_keys(self) -> RayConfig:
        given = [k for k in ("model_source", "accelerator_type", "resources_per_bundle")
                 if getattr(self, k) is not None]
        given += ["engine_kwargs"] if self.engine_kwargs else []
        if self.processor != "vllm" and given:
            raise ValueError(f"`{given[0]}` is for `processor: vllm`; processor is {self.processor!r}")
        return self


def engine_problem(config: RunConfig) -> str | None:
    """Why this configuration cannot run on its `engine`, or None."""
    if config.engine != "ray":
        return None
    if config.judge.backend != "openai":
        return (f"engine 'ray' speaks the OpenAI chat format (an OpenAI-compatible fleet, or vLLM on the cluster): "
                f"it needs judge.backend openai, not {config.judge.backend!r}")
    if config.judge.batch is not False:
        return "engine 'ray' makes the calls itself: set judge.batch false (a provider batch has no workers)"
    return None


class PairsConfig(BaseModel):
    """The pairs file and the pair plan: two systems, all pairs, or every system against a baseline."""

    model_config = ConfigDict(extra="forbid")

    path: str
    a: str | None = None
    b: str | None = None
    plan: Literal["two", "all", "baseline", "releases"] | None = None
    baseline: str | None = None
    systems: list[str] | None = None
    # Release plan: each release judged against the previous one and against the pinned baseline.
    releases: list[str] | None = None

    @model_validator(mode="after")
    def _plan(self) -> PairsConfig:
        if self.plan is None:
            if self.releases is not None:
                self.plan = "releases"
            elif self.a is not None or self.b is not None:
                self.plan = "two"
            elif self.baseline is not None:
                self.plan = "baseline"
            else:
                self.plan = "all"
        if self.plan == "two":
            if not self.a or not self.b:
                raise ValueError("plan 'two' needs both `a` and `b`")
            if self.a == self.b:
                raise ValueError("`a` and `b` must be different systems")
        elif self.a is not None or self.b is not None:
            raise ValueError(f"`a`/`b` are for two systems; plan is {self.plan!r}")
        if self.plan == "baseline" and not self.baseline:
            raise ValueError("plan 'baseline' needs `baseline`")
        if self.plan == "releases":
            if not self.releases or len(self.releases) < 2:
                raise ValueError("plan 'releases' needs `releases`: at least two releases, oldest first")
            if len(set(self.releases)) != len(self.releases):
                raise ValueError("`releases` names a release twice")
            if self.systems is not None:
                raise ValueError("`systems` is for plans 'all' and 'baseline'; a release plan uses `releases`")
            if self.baseline is None:
                self.baseline = self.releases[0]  # pinned: the oldest release unless named
        elif self.releases is not None:
            raise ValueError(f"`releases` is for plan 'releases'; plan is {self.plan!r}")
        return self


class RubricConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str | None = None
    text: str | None = None

    @model_validator(mode="after")
    def _one(self) -> RubricConfig:
        if (self.path is None) == (self.text is None):
            raise ValueError("give exactly one of `path` or `text`")
        return self


class Gates(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_self_consistency: float = Field(default=0.70, ge=0, le=1)


class CascadeConfig(BaseModel):
    """`cascade:`: the judges after `judge:` (cheapest first), each written like `judge:`, with the level the
    thresholds were fitted at (`alpha`, `delta`) and the thresholds file `swapjudge escalate -o` wrote."""

    model_config = ConfigDict(extra="forbid")

    judges: list[JudgeConfig] = Field(min_length=1)
    alpha: float = Field(gt=0, lt=1)
    delta: float = Field(gt=0, lt=1)
    thresholds: str
    # people's verdicts (a labels file: item and label) counted where they voted, in the cascade's win rate
    labels: str | None = None


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    protocol: Literal["pairwise"] = "pairwise"
    orders: Literal["both", "random"] = "both"
    schema_: Schema = Field(default="forced_choice", alias="schema")
    tie_policy: TiePolicy = "half_credit"
    gates: Gates = Field(default_factory=Gates)
    judge: JudgeConfig
    rubric: RubricConfig | None = None
    pairs: PairsConfig
    chain_of_thought: bool = False
    # Identical answers in both slots are a tie by construction: no call unless asked for.
    judge_identical: bool = False
    seed: str = ""
    store: str | None = None
    confidence: float = Field(default=0.95, gt=0, lt=1)
    prices: dict[str, Price] = Field(default_factory=dict)
    # Adaptive swapping: make the swapped call only when the first verdict's probability is below this.
    adaptive_swap: float | None = Field(default=None, gt=0.5, le=1.0)
    # Who makes the calls: `sync` (this process, max_concurrency at a time) or `ray` (Ray Data workers).
    engine: Engine = "sync"
    ray: RayConfig = Field(default_factory=RayConfig)
    # A live escalation cascade: `judge:` judges every pair, the judges listed here only what it left unsettled.
    cascade: CascadeConfig | None = None
    # Attacks the judge must resist (`swapjudge probe attack`), run on the run's pairs after the run: the run fails
    # when the upper bound of an attack's both-order win rate passes `max_attack_win`, or when one is not measured.
    # Not part of the configuration hash (what is asked of the judge for the pairs does not change).
    attacks: tuple[str, ...] | None = None
    max_attack_win: float | None = Field(default=None, gt=0.0, lt=1.0)
    attack_pairs: int = Field(default=50, ge=1)  # the seeded sample of pairs the attacks are run on

    @field_validator("attacks")
    @classmethod
    def _known_attacks(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        from swapjudge.probes.attacks import ATTACKS

        if value is None:
            return None
        unknown = [n for n in value if n not in ATTACKS]
        if unknown:
            raise ValueError(f"unknown attack(s) {', '.join(unknown)}; known: {', '.join(ATTACKS)}")
        if not value:
            raise ValueError("name at least one attack (or leave `attacks` out)")
        return tuple(dict.fromkeys(value))

    @model_validator(mode="after")
    def _attack_gate(self) -> RunConfig:
        if (self.attacks is None) != (self.max_attack_win is None):
            raise ValueError("attacks: name the attacks and their ceiling `max_attack_win` together")
        if self.attacks is not None and self.cascade is not None:
            raise ValueError("attacks: a cascade's judges are several; probe each judge with `swapjudge probe "
                             "attack` and its own configuration")
        return self

    @model_validator(mode="after")
    def _cascade(self) -> RunConfig:
        if self.cascade is None:
            return self
        names = [self.judge.judge_name, *(j.judge_name for j in self.cascade.judges)]
        if len(set(names)) != len(names):
            raise ValueError("every judge of a cascade needs its own name (its calls are its own records): "
                             f"{names}")
        if self.orders != "both" or self.adaptive_swap is not None:
            raise ValueError("a cascade settles a pair by its swap: it needs orders [ab, ba] and no adaptive_swap")
        return self

    @model_validator(mode="after")
    def _adaptive(self) -> RunConfig:
        if self.adaptive_swap is not None and self.orders != "both":
            raise ValueError("`adaptive_swap` skips some swapped calls: it needs orders [ab, ba]")
        return self

    @model_validator(mode="after")
    def _engine(self) -> RunConfig:
        problem = engine_problem(self)
        if problem:
            raise ValueError(problem)
        return self

    @field_validator("orders", mode="before")
    @classmethod
    def _orders(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            if sorted(str(v).lower() for v in value) == ["ab", "ba"]:
                return "both"
            raise ValueError("orders must be [ab, ba] (both orders) or `random` (one coin-flipped order)")
        return value

    @field_validator("rubric", mode="before")
    @classmethod
    def _rubric(cls, value: Any) -> Any:
        # A one-line string naming a file is a path; anything else is the rubric itself.
        if isinstance(value, str):
            looks_like_path = "\n" not in value and value.strip().lower().endswith((".md", ".txt", ".rubric"))
            return {"path": value} if looks_like_path else {"text": value}
        return value

    @property
    def allow_tie(self) -> bool:
        return self.schema_ == "allow_tie"


class LoadedConfig:
    """A validated configuration with its paths resolved and the rubric read."""

    def __init__(self, config: RunConfig, *, source: Path, rubric_text: str | None) -> None:
        self.config = config
        self.source = source
        self.base_dir = source.parent
        self.rubric_text = rubric_text
        self.cascade_tier: dict[str, Any] | None = None  # set on a cascade's tier (see `tier`)

    def resolve(self, path: str) -> Path:
        p = Path(path).expanduser()
        return p if p.is_absolute() else (self.base_dir / p)

    @property
    def pairs_path(self) -> Path:
        return self.resolve(self.config.pairs.path)

    def store_path(self, override: str | Path | None = None) -> Path:
        """The store: CLI override, else the configured path (relative to the config), else the cwd."""
        if override is not None:
            return Path(override)
        if self.config.store:
            return self.resolve(self.config.store)
        return Path.cwd() / DEFAULT_STORE

    def with_engine(self, engine: str | None) -> LoadedConfig:
        """This configuration with its calls made by `engine` (None: as configured); `ArgumentError` naming
        `engine` when it is no engine or cannot run this configuration."""
        if engine is None or engine == self.config.engine:
            return self
        if engine not in ENGINES:
            raise ArgumentError(f"{{engine}} must be one of {', '.join(ENGINES)}, not {engine!r}", "engine")
        config = self.config.model_copy(update={"engine": engine})
        problem = engine_problem(config)
        if problem:
            raise ArgumentError("{engine}: " + problem.replace("{", "{{").replace("}", "}}"), "engine")
        loaded = LoadedConfig(config, source=self.source, rubric_text=self.rubric_text)
        loaded.cascade_tier = self.cascade_tier
        return loaded

    def normalised(self) -> dict[str, Any]:
        """The settled configuration as stored with the run (rubric text inlined, defaults spelled out)."""
        data = self.config.model_dump(mode="json", by_alias=True)
        data["rubric"] = {"text": self.rubric_text} if self.rubric_text is not None else None
        if data["judge"].get("base_url"):
            # stored with the run and hashed: a user:password or a key in the URL is neither (a URL without one
            # is kept as it is, so such configurations hash as they always did)
            data["judge"]["base_url"] = redact_url(data["judge"]["base_url"])
        data.pop("store", None)
        for key in ENGINE_KEYS:
            data.pop(key, None)  # how calls are made: configurations hash as they always did
        for key in BATCH_JUDGE_KEYS:
            data["judge"].pop(key, None)
        if data.get("adaptive_swap") is None:
            data.pop("adaptive_swap", None)
        if data["judge"].get("max_retry_after_s") == DEFAULT_MAX_RETRY_AFTER_S:
            data["judge"].pop("max_retry_after_s")  # absent unless set: configurations hash as they always did
        if data["judge"].get("verdict_scale") == "plain":
            data["judge"].pop("verdict_scale")  # absent unless graded: configurations hash as they always did
        if data["pairs"].get("releases") is None:
            data["pairs"].pop("releases", None)  # absent unless used: configurations hash as they always did
        if data.get("cascade") is None:
            data.pop("cascade", None)  # absent unless used: configurations hash as they always did
        for key in ATTACK_KEYS:
            data.pop(key, None)  # a probe after the run, not what the run asks: the run and its cache are the same
        if self.cascade_tier is not None:
            data["cascade_tier"] = dict(self.cascade_tier)
        return data

    def tier(self, index: int, marker: dict[str, Any] | None = None) -> LoadedConfig:
        """A cascade's judge `index` (0: `judge:`) as a configuration of its own, without the cascade: its calls
        and cache are those of that judge alone. `marker` (which cascade, which tier, its threshold) is stored and
        hashed with the run, so `decide` finds the cascade's runs and a tier run is no plain run."""
        cascade = self.config.cascade
        judges = [self.config.judge, *(cascade.judges if cascade is not None else ())]
        config = self.config.model_copy(update={"judge": judges[index], "cascade": None})
        loaded = LoadedConfig(config, source=self.source, rubric_text=self.rubric_text)
        loaded.cascade_tier = marker
        return loaded

    @property
    def tiers(self) -> int:
        """How many judges the run uses: 1, or the cascade's judges with `judge:`."""
        return 1 + (len(self.config.cascade.judges) if self.config.cascade is not None else 0)

    @property
    def config_hash(self) -> str:
        return canonical_hash(self.normalised())

    @property
    def judge_hash(self) -> str:
        ident = self.config.judge.identity()
        if ident.get("path"):
            ident["path"] = str(self.resolve(ident["path"]).resolve())
        ident["chain_of_thought"] = self.config.chain_of_thought
        return canonical_hash(ident)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def canonical_hash(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


# Keys under `judge:` every backend accepts besides JudgeConfig's fields: `version` labels the judge for history.
COMMON_JUDGE_OPTIONS = frozenset({"version"})


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """ "; did you mean `x`?" for the valid key closest to a misspelt one, or nothing when none is close."""
    match = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return f"; did you mean `{match[0]}`?" if match else ""


def _model_keys(loc: tuple[int | str, ...]) -> set[str]:
    """The valid keys of the section a validation error points into (for a suggestion)."""
    model: Any = RunConfig
    for part in loc[:-1]:
        field = getattr(model, "model_fields", {}).get(str(part))
        if field is None:
            return set()
        model = field.annotation
        if not isinstance(model, type):
            args = [a for a in getattr(model, "__args__", ()) if isinstance(a, type) and hasattr(a, "model_fields")]
            model = args[0] if args else None
    fields = getattr(model, "model_fields", {})
    return {f.alias or name for name, f in fields.items()}


def _key_of(loc: tuple[int | str, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("function-after",)]
    return ".".join(parts).replace("schema_", "schema") or "(top level)"


def parse_config(data: Any, *, source: Path) -> LoadedConfig:
    """Validate a configuration mapping. Errors name the file and the key."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the configuration must be a mapping of keys to values")
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        key = _key_of(tuple(first["loc"]))
        msg = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "extra_forbidden" and first["loc"]:
            msg += did_you_mean(str(first["loc"][-1]), _model_keys(tuple(first["loc"])))
        more = len(err.errors()) - 1
        tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise ConfigError(f"{where(source, data, first['loc'])}: key `{key}`: {msg}{tail}") from None
    loaded = LoadedConfig(config, source=source, rubric_text=None)
    rubric_text: str | None = None
    if config.rubric is not None:
        if config.rubric.text is not None:
            rubric_text = config.rubric.text
        else:
            assert config.rubric.path is not None
            rpath = loaded.resolve(config.rubric.path)
            rubric_text = _read_text(lambda: rpath.read_text(encoding="utf-8"), f"{source}: key `rubric`", str(rpath))
        if not rubric_text.strip():
            raise ConfigError(f"{source}: key `rubric`: the rubric is empty")
    loaded.rubric_text = rubric_text
    return loaded


def _read_text(read: Callable[[], str], where: str, what: str) -> str:
    """`read()`'s text; an unreadable file or one that is not UTF-8 is a one-line ConfigError that says `where`
    and names `what`."""
    try:
        return read()
    except OSError as err:
        raise ConfigError(f"{where}: cannot read {what}: {err.strerror}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"{where}: {what} is not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset "
                          f"{err.start})") from None


def load_config(path: str | Path) -> LoadedConfig:
    """A YAML configuration file (`-`: stdin, its relative paths then read from the working directory)."""
    from swapjudge.reading.textfiles import is_stdio, read_stdin

    source = Path.cwd() / "<stdin>" if is_stdio(path) else Path(path)
    text = _read_text(lambda: read_stdin().decode("utf-8-sig", errors="replace") if is_stdio(path)
                      else source.read_text(encoding="utf-8"), str(source), "the configuration")
    return parse_config(load_yaml(text, source=str(source), error=ConfigError), source=source)
