"""The Python API behind `import swapjudge`: load, analyse, run and rank from a notebook or a script.

Each function is the command's own path (`swapjudge.workflows`), so the Python twin of a command can never say
something else. They take what a notebook holds (a path, a list of dicts, a pandas or polars DataFrame, a
configuration mapping) and return result objects that print the same audit table as the CLI; importing this
module registers those notebook displays.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import swapjudge.report.notebook  # noqa: F401  # the results' notebook displays
from swapjudge.core import arguments
from swapjudge.core.choices import (
    DEFAULT_MIN_CONSISTENCY,
    DEFAULT_ROUNDS,
    IntervalMethod,
    Model,
    OutcomeSource,
    ReadEngine,
)
from swapjudge.reading.records import read_records
from swapjudge.workflows.analyze import analyze
from swapjudge.workflows.run import dry_run, run

if TYPE_CHECKING:
    from swapjudge.reading.records import RecordSet
    from swapjudge.workflows.listwise import ListwiseRanking
    from swapjudge.workflows.rank import JudgeRanking

__all__ = ["analyze", "dry_run", "load_records", "rank", "run"]


def load_records(source: str | Path | Any, *, allow_unpaired: bool = False, extras: bool = True) -> RecordSet:
    """Validated presentation records from a JSONL/CSV path (`-`: stdin), a list of dicts, or a pandas or polars
    DataFrame. Validation is the file loader's: an error names the file and line, or the row and field.
    `extras=False` reads a file's core columns only (what the swap analysis needs: faster on large files);
    `allow_unpaired` counts a pair judged in one order only as incomplete instead of an error."""
    source = arguments.records_source(source, "source")
    return read_records(source, allow_unpaired=arguments.flag(allow_unpaired, "allow_unpaired"),
                        extras=arguments.flag(extras, "extras"))


def rank(source: str | Path | Any, *, judge: str | None = None, model: Model | str = Model.rao_kupper,
         outcome: OutcomeSource | str = OutcomeSource.swap, bootstrap: int = DEFAULT_ROUNDS, seed: int = 0,
         confidence: float = 0.95, interval: IntervalMethod | str = IntervalMethod.percentile,
         min_consistency: float = DEFAULT_MIN_CONSISTENCY,
         engine: ReadEngine | str = ReadEngine.auto) -> JudgeRanking | ListwiseRanking:
    """Rank systems by a tie-aware Bradley-Terry fit with bootstrap intervals over items (`swapjudge rank`): the
    judge's `JudgeRanking` (its `ranking`, `rows`, `to_frame()`, the `gate`).

    Gated as `analyze` is: a judge whose swap-consistency is below `min_consistency` gets no ranking: the result
    comes back withheld (`ranking` None, `withheld` True, `to_dict()["withheld"]` the reason) and its
    `raise_for_gate()` raises `GateError`, as `analyze`'s does; `min_consistency=0` ranks anyway. `engine` reads a
    file as `--engine` does: "auto" reduces a
    Parquet file or a large JSON Lines file to counts with the streaming engine, "memory" reads every record,
    "streaming" always reduces (the same figures either way). Listwise (best-of-N) records give a
    `ListwiseRanking` instead: the Plackett-Luce fit with slot effects (`fit`), withheld the same way."""
    from swapjudge.workflows.rank import rank_judge

    return rank_judge(source, judge=judge, model=model, outcome=outcome, bootstrap=bootstrap, seed=seed,
                      confidence=confidence, interval=interval, min_consistency=min_consistency,
                      engine=engine)
