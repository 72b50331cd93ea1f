"""Result containers of the Python API: several judges' analyses at once, and a finished run with its analysis.

Both print in a notebook as the CLI prints at a terminal, and `to_dict()` is exactly the CLI's `--format json`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from swapjudge.core.analysis import JudgeAnalysis
from swapjudge.runner.outcome import RunOutcome

JSON_SCHEMA_VERSION = 1  # the version of docs/json.md; the CLI writes the same (cli/app.py)


@dataclass(frozen=True)
class Analyses:
    """One `JudgeAnalysis` per judge, in judge-name order. Index by position or by judge name."""

    judges: tuple[JudgeAnalysis, ...]

    def __iter__(self) -> Iterator[JudgeAnalysis]:
        return iter(self.judges)

    def __len__(self) -> int:
        return len(self.judges)

    @overload
    def __getitem__(self, key: int) -> JudgeAnalysis: ...
    @overload
    def __getitem__(self, key: str) -> JudgeAnalysis: ...
    def __getitem__(self, key: int | str) -> JudgeAnalysis:
        if isinstance(key, str):
            for analysis in self.judges:
                if (analysis.judge or "") == key:
                    return analysis
            raise KeyError(f"no judge {key!r}; judges: " + ", ".join(repr(a.judge or "") for a in self.judges))
        return self.judges[key]

    @property
    def passed(self) -> bool:
        """True when every judge passed the self-consistency gate."""
        return all(a.gate.passed for a in self.judges)

    def to_dict(self) -> dict[str, Any]:
        """The CLI's JSON: one judge's object, or `{"judges": [...]}` for several."""
        dicts = [a.to_dict() for a in self.judges]
        return {"schema_version": JSON_SCHEMA_VERSION, **(dicts[0] if len(dicts) == 1 else {"judges": dicts})}

    def to_frame(self, backend: str = "polars") -> Any:
        """One row per judge of the flattened analysis: polars, or pandas with `backend="pandas"`."""
        from swapjudge.report import notebook

        return notebook.frame([notebook.flatten(a.to_dict()) for a in self.judges], backend)

    def _repr_html_(self) -> str:
        from swapjudge.report import notebook

        return notebook.analysis_html(self.judges)

    def _repr_markdown_(self) -> str:
        from swapjudge.report import notebook

        return notebook.analysis_markdown(self.judges)


@dataclass(frozen=True)
class RunResult:
    """A finished (or interrupted) run and the analysis of what it stored."""

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

    @classmethod
    def from_outcome(cls, outcome: RunOutcome, analyses: list[JudgeAnalysis], *, config_hash: str,
                     tie_policy: str) -> RunResult:
        return cls(outcome.run_id, outcome.store_path, outcome.resumed, outcome.interrupted, outcome.orders,
                   outcome.seed, config_hash, tie_policy, outcome.stats.to_dict(), outcome.elapsed_s,
                   Analyses(tuple(analyses)))

    def to_dict(self) -> dict[str, Any]:
        """`swapjudge run --format json`: the analysis, plus the run under `run`."""
        return {**self.analyses.to_dict(), "run": {
            "id": self.run_id, "config_hash": self.config_hash, "store": str(self.store_path),
            "orders": self.orders, "coin_seed": self.coin_seed, "tie_policy": self.tie_policy, "stats": self.stats}}

    def to_frame(self, backend: str = "polars") -> Any:
        return self.analyses.to_frame(backend)

    def _repr_html_(self) -> str:
        import html

        head = (f"<p>run {self.run_id}{' (resumed)' if self.resumed else ''}: {self.stats.get('planned', 0):,} calls "
                f"planned, {self.stats.get('made', 0):,} made, {self.stats.get('cached', 0):,} from cache; store "
                f"{html.escape(str(self.store_path))}</p>")
        return head + self.analyses._repr_html_()

    def _repr_markdown_(self) -> str:
        head = (f"run {self.run_id}{' (resumed)' if self.resumed else ''}: {self.stats.get('planned', 0):,} calls "
                f"planned, {self.stats.get('made', 0):,} made, {self.stats.get('cached', 0):,} from cache\n\n")
        return head + self.analyses._repr_markdown_()
