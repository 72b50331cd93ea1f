"""The Python API behind `import swapjudge`: load, analyse, run and rank from a notebook or a script.

Each function takes what a notebook holds (a path, a list of dicts, a pandas or polars DataFrame, a configuration
mapping) and returns a result object that prints the same audit table as the CLI. Heavy stacks load on first use.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swapjudge.core.choices import DEFAULT_MIN_CONSISTENCY, DEFAULT_ROUNDS
from swapjudge.errors import InputError

if TYPE_CHECKING:
    from swapjudge.config import LoadedConfig
    from swapjudge.core.policy import TiePolicy
    from swapjudge.core.records import RecordSet
    from swapjudge.ranking.bradley_terry import IntervalMethod, Model, Ranking
    from swapjudge.results import Analyses, RunResult
    from swapjudge.runner.dry_run import DryRunEstimate


def _is_pandas(source: Any) -> bool:
    return type(source).__module__.split(".")[0] == "pandas" and hasattr(source, "to_dict")


def _plain(value: Any) -> Any:
    """A pandas cell as the file loader would see it: missing (NaN/NA/None) is None, numpy scalars are Python."""
    if value is None:
        return None
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, str | bytes):
        with contextlib.suppress(TypeError, ValueError):
            value = item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    return value


def _pandas_rows(frame: Any) -> list[dict[str, Any]]:
    rows = []
    for row in frame.to_dict("records"):
        clean = {str(k): _plain(v) for k, v in row.items()}
        if isinstance(clean.get("round"), float) and clean["round"].is_integer():
            clean["round"] = int(clean["round"])  # a round column with a gap is float in pandas
        rows.append(clean)
    return rows


def _row_errors(source: str, load: Any) -> RecordSet:
    """Run an in-memory load; a problem is named by its row (from 1) and field, as a file's is by its line."""
    try:
        result: RecordSet = load()
    except InputError as err:
        if err.line is None:
            raise
        raise InputError(err.message, path=f"{source} row {err.line}", field=err.field, more=err.more) from None
    return result


def load_records(source: str | Path | Any, *, allow_unpaired: bool = False) -> RecordSet:
    """Validated presentation records from a JSONL/CSV path (`-`: stdin), a list of dicts, or a pandas or polars
    DataFrame. Validation is the file loader's: an error names the file and line, or the row and field."""
    import polars as pl

    from swapjudge.core import records

    if isinstance(source, str | Path):
        return records.load_records(source, allow_unpaired=allow_unpaired)
    if isinstance(source, records.RecordSet):
        return source
    if isinstance(source, pl.DataFrame):
        frame = source
        return _row_errors("DataFrame", lambda: records.records_from_frame(
            frame, source="DataFrame", allow_unpaired=allow_unpaired))
    if _is_pandas(source):
        rows = _pandas_rows(source)
        return _row_errors("DataFrame", lambda: records.records_from_dicts(
            rows, source="DataFrame", allow_unpaired=allow_unpaired))
    if isinstance(source, list | tuple):
        bad = next((i for i, row in enumerate(source, start=1) if not isinstance(row, Mapping)), None)
        if bad is not None:
            raise InputError("a record must be a mapping (dict) of field names to values", path=f"records row {bad}")
        rows_in = source
        return _row_errors("records", lambda: records.records_from_dicts(
            rows_in, source="records", allow_unpaired=allow_unpaired))
    raise InputError(f"cannot read records from a {type(source).__name__}: give a path, a list of dicts, or a "
                     "pandas or polars DataFrame")


def analyze(source: str | Path | Any, *, a: str | None = None, b: str | None = None, judge: str | None = None,
            tie_policy: TiePolicy | str | None = None, min_consistency: float = DEFAULT_MIN_CONSISTENCY,
            confidence: float = 0.95, allow_unpaired: bool = False) -> Analyses:
    """Analyse judge calls made in both orders, one result per judge: what `swapjudge analyze` prints.

    `source` is anything `load_records` takes. The result is a sequence of `JudgeAnalysis` (index it by position
    or judge name); a judge below `min_consistency` has its win rate withheld, as at the terminal.
    """
    from swapjudge.core.analysis import analyze as analyse_records
    from swapjudge.results import Analyses

    loaded = load_records(source, allow_unpaired=allow_unpaired)
    return Analyses(tuple(analyse_records(loaded, judge=judge, a=a, b=b, tie_policy=tie_policy,
                                          min_consistency=min_consistency, confidence=confidence)))


def _config(config: str | Path | Mapping[str, Any] | LoadedConfig) -> LoadedConfig:
    """A validated run configuration from a YAML path or a mapping (relative paths in a mapping: from the
    working directory)."""
    from swapjudge.config import LoadedConfig, load_config, parse_config

    if isinstance(config, LoadedConfig):
        return config
    if isinstance(config, Mapping):
        return parse_config(dict(config), source=Path.cwd() / "(configuration)")
    return load_config(config)


def run(config: str | Path | Mapping[str, Any], *, store: str | Path | None = None,
        progress: bool = False) -> RunResult:
    """Judge the configured pairs in both orders, store every call, and analyse the run (`swapjudge run`).
    Running the same configuration again resumes an unfinished run; replies are cached."""
    from swapjudge.results import RunResult
    from swapjudge.runner.session import run as run_session
    from swapjudge.store import Store
    from swapjudge.store.analysis import analyze_run

    loaded = _config(config)
    outcome = run_session(loaded, store_path=store, progress=progress)
    with Store(outcome.store_path) as st:
        analyses = analyze_run(st, outcome.run_id)
    return RunResult.from_outcome(outcome, analyses, config_hash=loaded.config_hash,
                                  tie_policy=str(loaded.config.tie_policy))


def dry_run(config: str | Path | Mapping[str, Any], *, store: str | Path | None = None) -> DryRunEstimate:
    """What a run would call and cost, calling nothing and writing nothing (`swapjudge run --dry-run`)."""
    from swapjudge.runner.dry_run import estimate

    return estimate(_config(config), store_path=store)


def rank(source: str | Path | Any, *, judge: str | None = None, model: Model | str = "rao-kupper",
         outcome: str = "swap", bootstrap: int = DEFAULT_ROUNDS, seed: int = 0, confidence: float = 0.95,
         interval: IntervalMethod | str = "percentile") -> Ranking:
    """Rank systems by a tie-aware Bradley-Terry fit with bootstrap intervals over items (`swapjudge rank`)."""
    from swapjudge.ranking.battles import OutcomeSource, comparisons_from_records
    from swapjudge.ranking.bradley_terry import rank as fit_ranking

    if not 0.0 < confidence < 1.0:
        raise InputError("confidence must be between 0 and 1")
    source_kind = OutcomeSource(outcome)
    loaded = load_records(source, allow_unpaired=source_kind is OutcomeSource.calls)
    data = comparisons_from_records(loaded, judge=judge, outcome=source_kind)
    if len(data.systems) < 2:
        raise InputError("fewer than two systems to rank", path=loaded.source)
    return fit_ranking(data, model, rounds=bootstrap, seed=seed, confidence=confidence, interval=interval)
