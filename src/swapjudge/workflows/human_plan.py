"""`swapjudge plan --human`: the people's labels a corrected win rate needs to reach a target interval width,
under a uniform and an active design, predicted from a pilot (the judge's records on every item and people's
labels on some)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swapjudge.core.active_ppi import LabelBudget
from swapjudge.errors import InputError


@dataclass(frozen=True)
class HumanPlan:
    """The label budgets for the decision's candidate against its incumbent, with what they were planned from."""

    candidate: str
    incumbent: str
    judge: str | None
    budget: LabelBudget
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"candidate": self.candidate, "incumbent": self.incumbent, "judge": self.judge,
                **self.budget.to_dict(), "notes": list(self.notes)}


def human_plan(decision: Any, *, pilot: str | Path | Any, human: str | Path | Any, width: float,
               confidence: float | None = None) -> HumanPlan:
    """Labels for a corrected interval of total `width` on the decision's candidate against its incumbent.

    `pilot`: the judge's records (both orders where it has them) on every item; `human`: people's records on a
    few (with `pi` where they were drawn by a design; none: a uniform pilot). `confidence` None: 1 - 2 alpha of
    the decision, the two-sided interval whose lower end is the one-sided bound `decide` tests."""
    import polars as pl

    from swapjudge.core.active_ppi import label_budget, pair_uncertainty
    from swapjudge.core.confidence import records_confidence
    from swapjudge.decision.file import load_decision
    from swapjudge.probes.calibrate import QUEUE_ORIGIN, item_pi, item_score_frame
    from swapjudge.reading.records import read_records, select_judges
    from swapjudge.workflows.decide import decision_argument

    spec, _ = load_decision(decision_argument(decision))
    a, b = spec.candidate, spec.incumbent
    level = 1.0 - 2.0 * spec.alpha if confidence is None else float(confidence)
    judged = read_records(pilot, allow_unpaired=True)
    people = read_records(human, allow_unpaired=True)
    names = select_judges(judged.frame, spec.judge)
    if len(names) > 1:
        raise InputError(f"the pilot holds {len(names)} judges ({', '.join(names)}); name one in the decision "
                         "file's `judge`", path=judged.source)
    name = names[0]
    frame = judged.frame.filter(judged.frame.get_column("judge") == name)
    human_frame = people.frame
    notes: list[str] = []
    if "origin" in human_frame.columns:
        queued = (human_frame.get_column("origin").cast(pl.String) == QUEUE_ORIGIN).fill_null(False)
        if int(queued.sum()):
            notes.append(f"{int(queued.sum())} human record(s) of a priority queue are left out of the pilot")
        human_frame = human_frame.filter(~queued)
    scores = item_score_frame(frame, a, b, spec.tie_policy, source=judged.source)
    labels = item_score_frame(human_frame, a, b, spec.tie_policy, source=people.source)
    table, confidence_rows = records_confidence(frame)
    u_pairs = table.frame.select(pl.col("item").cast(pl.String), pl.Series("u", pair_uncertainty(confidence_rows)),
                                 "x", "y").filter(pl.col("x").is_in([a, b]) & pl.col("y").is_in([a, b]))
    u_items = u_pairs.group_by("item").agg(pl.col("u").mean())
    scored = scores.with_columns(pl.col("item").cast(pl.String)).join(u_items, on="item", how="left").with_columns(
        pl.col("u").fill_null(0.25)).with_row_index("index")
    matched = labels.with_columns(pl.col("item").cast(pl.String)).join(scored, on="item", how="inner",
                                                                       suffix="_judge")
    if matched.height < 3:
        raise InputError(f"the pilot's labels match {matched.height} of the judge's items; a plan needs at least 3",
                         path=people.source)
    pi = item_pi(human_frame, people.frame.select("item").unique(), source=people.source)
    pi_labelled = None
    if pi is None:
        notes.append("the pilot's labels carry no `pi`: read as a uniform random sample")
    else:
        pi_labelled = (matched.join(pi.with_columns(pl.col("item").cast(pl.String)), on="item", how="left")
                       .get_column("pi").to_numpy())
    try:
        budget = label_budget(scored.get_column("score").to_numpy(), scored.get_column("u").to_numpy(),
                              matched.get_column("index").to_numpy(), matched.get_column("score").to_numpy(),
                              pi_labelled, width=width, confidence=level)
    except ValueError as err:
        raise InputError(str(err), path=people.source) from None
    for design, labels_needed in (("uniform", budget.uniform), ("active", budget.active)):
        if labels_needed is None:
            notes.append(f"under the {design} design even labelling every one of the {budget.items} items would "
                         f"not reach a width of {width}")
    return HumanPlan(candidate=a, incumbent=b, judge=name or None, budget=budget, notes=tuple(notes))


def plan_sentences(plan: HumanPlan) -> list[str]:
    """The plan in words: each budget with its predicted width, or why there is none."""
    b = plan.budget
    level = f"{round(b.confidence * 100)}%"
    out = [f"labels for a {level} corrected interval {b.width:.3f} wide on {plan.candidate} against "
           f"{plan.incumbent}, over {b.items:,} judged items, predicted from a pilot of {b.pilot_labels} labels "
           "(items are the independent units):"]
    for design, n, w in (("uniform", b.uniform, b.uniform_width), ("active", b.active, b.active_width)):
        if n is not None and w is not None:
            out.append(f"  {design}: {n:,} labels (predicted width {w:.3f})")
        else:
            out.append(f"  {design}: not reachable on these items")
    if b.uniform and b.active:
        out.append(f"active needs {b.active / b.uniform:.0%} of the uniform budget; the prediction rests on the "
                   f"pilot's squared residuals ({b.residual_flat:.3f} + {b.residual_slope:.3f} x uncertainty)")
    return out + list(plan.notes)
