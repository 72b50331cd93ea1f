"""`swapjudge.decide` and `swapjudge.plan`: the decision's library entry points, whose results show in a notebook.

The results are `decision.verdict.Verdict` and `decision.power.Plan` with the notebook displays added here, so
that nothing under `decision/` imports a renderer.
"""
# TODO(lead): once `swapjudge.core.display.Displayable` is on main, make Verdict and Plan inherit it, register
# report.decision's renderers for them, point `_LAZY` at swapjudge.decision.run and delete this module.

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from swapjudge.decision.file import DecisionFile
from swapjudge.decision.power import DEFAULT_SIMULATIONS, Plan
from swapjudge.decision.verdict import Verdict


class DecisionVerdict(Verdict):
    """A `Verdict` that shows itself in a notebook (the verdict line first, then the bound and the flip audit)."""

    def _repr_html_(self) -> str:
        from swapjudge.report.decision import render_html_fragment

        return render_html_fragment(self)

    def _repr_markdown_(self) -> str:
        from swapjudge.report.decision import render_markdown

        return render_markdown(self)


class DecisionPlan(Plan):
    """A `Plan` that shows itself in a notebook."""

    def _repr_html_(self) -> str:
        from swapjudge.report.decision import render_plan_html

        return render_plan_html(self)

    def _repr_markdown_(self) -> str:
        from swapjudge.report.decision import render_plan_markdown

        return render_plan_markdown(self)


def _as(cls: type[Any], result: Any) -> Any:
    return cls(**{f.name: getattr(result, f.name) for f in dataclasses.fields(result)})


def decide(records: Any, decision: str | Path | Mapping[str, Any] | DecisionFile, *, run: int | None = None,
           allow_missing: int = 0, store: str | Path | None = None) -> DecisionVerdict:
    """Ship, keep or inconclusive for a pre-registered decision (see `swapjudge.decision.run.decide`)."""
    from swapjudge.decision.run import decide as make

    result: DecisionVerdict = _as(DecisionVerdict, make(records, decision, run=run, allow_missing=allow_missing,
                                                          store=store))
    return result


def plan(decision: str | Path | Mapping[str, Any] | DecisionFile, *, pilot: Any = None,
         expect: float | None = None, splits: float | None = None, config: str | Path | None = None,
         run: int | None = None, simulations: int = DEFAULT_SIMULATIONS, seed: int = 0) -> DecisionPlan:
    """Items needed for the registered power (see `swapjudge.decision.run.plan`)."""
    from swapjudge.decision.run import plan as make

    result: DecisionPlan = _as(DecisionPlan, make(decision, pilot=pilot, expect=expect, splits=splits,
                                                  config=config, run=run, simulations=simulations, seed=seed))
    return result
