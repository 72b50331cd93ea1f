"""Result containers of the Python API: several judges' analyses at once, and a finished run with its analysis.

Both print in a notebook as the CLI prints at a terminal (the renderers register their displays), and
`to_dict()` is exactly the CLI's `--format json`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from swapjudge.core import documents
from swapjudge.core.analysis import JudgeAnalysis
from swapjudge.core.display import Displayable
from swapjudge.core.policy import enforce_gates
from swapjudge.runner.outcome import RunOutcome


@dataclass(frozen=True)
class Analyses(Displayable):
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

    def raise_for_gate(self) -> None:
        """`GateError` (exit 1 at the CLI) naming each judge below its gate; nothing when every judge passed."""
        enforce_gates((a.judge, a.gate) for a in self.judges)

    def to_dict(self) -> dict[str, Any]:
        """The CLI's JSON: one judge's object, or `{"judges": [...]}` for several."""
        dicts = [a.to_dict() for a in self.judges]
        document: dict[str, Any] = documents.json_document(dicts[0] if len(dicts) == 1 else {"judges": dicts})
        return document

    def to_frame(self, backend: str = "polars") -> Any:
        """One row per judge of the flattened analysis: polars, or pandas with `backend="pandas"`."""
        return documents.frame([documents.flatten(a.to_dict()) for a in self.judges], backend)


@dataclass(frozen=True)
class RunResult(Displayable):
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

    @classmethod
    def from_outcome(cls, outcome: RunOutcome, analyses: Analyses, *, config_hash: str,
                     tie_policy: str) -> RunResult:
        return cls(outcome.run_id, outcome.store_path, outcome.resumed, outcome.interrupted, outcome.orders,
                   outcome.seed, config_hash, tie_policy, outcome.stats.to_dict(), outcome.elapsed_s, analyses,
                   outcome.batch_requests_in_flight, outcome.batches_in_flight, outcome.warnings)

    @property
    def passed(self) -> bool:
        """True when the run is in (nothing waiting, not interrupted) and every judge passed its gate."""
        return not self.waiting and not self.interrupted and bool(self.analyses.judges) and self.analyses.passed

    def raise_for_gate(self) -> None:
        """`GateError` (exit 1 at the CLI) naming each judge below its gate; nothing when every judge passed."""
        self.analyses.raise_for_gate()

    def to_dict(self) -> dict[str, Any]:
        """`swapjudge run --format json`: the analysis, plus the run under `run`."""
        return {**self.analyses.to_dict(), "run": {
            "id": self.run_id, "config_hash": self.config_hash, "store": os.path.normpath(self.store_path),
            "orders": self.orders, "coin_seed": self.coin_seed, "tie_policy": self.tie_policy, "stats": self.stats}}

    def to_frame(self, backend: str = "polars") -> Any:
        return self.analyses.to_frame(backend)
