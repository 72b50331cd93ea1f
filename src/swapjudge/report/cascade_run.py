"""The text of a live cascade run and of its dry run (`swapjudge run` with `cascade:`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from swapjudge.workflows.cascade_run import CascadeEstimate, CascadeRunResult


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _usd(value: float | None) -> str:
    return "unknown (no price for this model: add it under `prices:`)" if value is None else f"${value:,.4f}"


def cascade_lines(result: CascadeRunResult) -> list[str]:
    """Per judge what reached it and what it settled, then coverage, the unsettled pairs, and the win rate over
    all pairs as a range (never over the settled pairs alone)."""
    lines = [f"cascade of {len(result.tiers)} judges over {result.pairs:,} pairs (both orders at every judge)"]
    for t in result.tiers:
        if t.run_id is None:
            lines.append(f"  {t.judge}: nothing reached it")
            continue
        lam = ("settles nothing (no threshold passed calibration)" if t.threshold is None
               else f"threshold {t.threshold:.4g}")
        lines.append(f"  {t.judge} (run {t.run_id}{', resumed' if t.resumed else ''}): {t.reached:,} pairs reached "
                     f"it, {t.settled:,} settled; {lam}; confidence {t.measure or 'not read'}"
                     + ("" if t.cost_usd is None else f"; spend ${t.cost_usd:,.4f}"))
    if not result.passed:
        lines.append(f"stopped early: {result.incomplete or 'interrupted'}; no figure on part of the data")
        return lines
    lines.append(f"settled {result.settled:,} of {result.pairs:,} pairs (coverage {_pct(result.coverage)}); "
                 f"unsettled {result.unsettled:,}")
    lines.append(f"calibrated level: {result.guarantee}")
    w = result.win_rate
    if w is not None:
        if w.unsettled:
            lines.append(
                f"win rate of {w.a} vs {w.b} over all {w.pairs:,} pairs ({w.by_judges:,} settled by the judges, "
                f"{w.by_people:,} by people, {w.unsettled:,} unsettled counted from all lost to all won): "
                f"{_pct(w.worst.value)} to {_pct(w.best.value)}; with sampling error {_pct(w.low)} to {_pct(w.high)} "
                f"(ties half credit; {w.worst.independence.units} independent)")
        else:
            lines.append(
                f"win rate of {w.a} vs {w.b} over all {w.pairs:,} pairs ({w.by_judges:,} settled by the judges, "
                f"{w.by_people:,} by people): {_pct(w.worst.value)} ({_pct(w.low)} to {_pct(w.high)}; ties half "
                f"credit; {w.worst.independence.units} independent)")
    if result.unsettled:
        shown = ", ".join(f"{p['item']} ({p['reason']})" for p in result.unsettled_pairs[:10])
        more = f" and {result.unsettled - 10:,} more" if result.unsettled > 10 else ""
        lines.append(f"unsettled pairs (for people to judge; all in --format json): {shown}{more}")
    return lines


def estimate_lines(est: CascadeEstimate) -> list[str]:
    lines = [f"dry run of the cascade: {est.pairs:,} pairs, both orders at every judge a pair reaches"]
    for judge, reach, calls, cost in zip(est.judges, est.reach, est.calls_all_pairs, est.all_pairs_usd, strict=True):
        share = "unknown (the thresholds file holds no settle rates)" if reach is None else f"{100 * reach:.1f}%"
        lines.append(f"  {judge}: expected to reach {share} of the pairs; on every pair {calls:,} calls, "
                     f"{_usd(cost)}")
    lines.append(f"  expected calls: {'unknown' if est.expected_calls is None else f'{est.expected_calls:,.0f}'}; "
                 f"expected cost of the cascade: {_usd(est.cascade_usd)}")
    lines.append(f"  the strongest judge ({est.judges[-1]}) alone on every pair: {_usd(est.strongest_alone_usd)}")
    lines.append("  (from the calibration pairs' settle rates: new pairs may settle at other rates)")
    return lines
