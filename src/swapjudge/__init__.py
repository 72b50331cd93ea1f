"""swapjudge: pairwise LLM-as-judge evaluation that judges every pair in both orders and reports honestly.

The documented API is `__all__`: `analyze`, `load_records`, `run`, `dry_run`, `rank`, `calculate`, `plan`, `decide`,
`card` and the result types. Everything else lives in subpackages whose names say what they are (see
docs/architecture.md). Names load on first use, so `import swapjudge` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from swapjudge.version import __version__

# name -> module that defines it; imported on first access (polars, scipy and the runner are heavy)
_LAZY = {
    "analyze": "swapjudge.api",
    "load_records": "swapjudge.api",
    "run": "swapjudge.api",
    "dry_run": "swapjudge.api",
    "rank": "swapjudge.api",
    "calculate": "swapjudge.core.calculator",
    "decide": "swapjudge.workflows.decide",
    "plan": "swapjudge.workflows.decide",
    "Verdict": "swapjudge.decision.verdict",
    "Plan": "swapjudge.decision.power",
    "card": "swapjudge.workflows.card",
    "JudgeCard": "swapjudge.probes.judge_card",
    "Analyses": "swapjudge.core.analysis",
    "RunResult": "swapjudge.workflows.run",
    "JudgeAnalysis": "swapjudge.core.analysis",
    "Calculation": "swapjudge.core.calculator",
    "RecordSet": "swapjudge.reading.records",
    "TiePolicy": "swapjudge.core.policy",
    "Ranking": "swapjudge.ranking.bradley_terry",
    "JudgeRanking": "swapjudge.workflows.rank",
    "GateError": "swapjudge.errors",
    "Conclusion": "swapjudge.outcome",
    "DryRunEstimate": "swapjudge.runner.dry_run",
    "SwapjudgeError": "swapjudge.errors",
    "InputError": "swapjudge.errors",
}

__all__ = [
    "Analyses",
    "Calculation",
    "Conclusion",
    "DryRunEstimate",
    "GateError",
    "InputError",
    "JudgeAnalysis",
    "JudgeCard",
    "JudgeRanking",
    "Plan",
    "Ranking",
    "RecordSet",
    "RunResult",
    "SwapjudgeError",
    "TiePolicy",
    "Verdict",
    "__version__",
    "analyze",
    "calculate",
    "card",
    "decide",
    "dry_run",
    "load_records",
    "plan",
    "rank",
    "run",
]

if TYPE_CHECKING:
    from swapjudge.api import analyze, dry_run, load_records, rank, run
    from swapjudge.core.analysis import Analyses, JudgeAnalysis
    from swapjudge.core.calculator import Calculation, calculate
    from swapjudge.core.policy import TiePolicy
    from swapjudge.decision.power import Plan
    from swapjudge.decision.verdict import Verdict
    from swapjudge.errors import GateError, InputError, SwapjudgeError
    from swapjudge.outcome import Conclusion
    from swapjudge.probes.judge_card import JudgeCard
    from swapjudge.ranking.bradley_terry import Ranking
    from swapjudge.reading.records import RecordSet
    from swapjudge.runner.dry_run import DryRunEstimate
    from swapjudge.workflows.card import card
    from swapjudge.workflows.decide import decide, plan
    from swapjudge.workflows.rank import JudgeRanking
    from swapjudge.workflows.run import RunResult


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        # a subpackage (swapjudge.core, swapjudge.runner, ...) is found by the import system, not here
        raise AttributeError(f"module 'swapjudge' has no attribute {name!r}")
    importlib.import_module("swapjudge.report.notebook")  # the results' notebook displays (imports no statistics)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
