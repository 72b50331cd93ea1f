"""The escalation cascade's result as text and Markdown lines. Renders; computes no statistic."""

from __future__ import annotations

from swapjudge.core.cascade import CascadeTier, Escalation


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _threshold(tier: CascadeTier) -> str:
    if tier.threshold is None:
        return "none (settles nothing, passes every pair on)"
    return f"{tier.threshold:.4g}"


def _agreement(tier: CascadeTier) -> str:
    a = tier.agreement
    if a is None or a.n == 0:
        return "no settled test pair" if a is not None else "no test set"
    return (f"{_pct(a.value)} [{_pct(a.low)}, {_pct(a.high)}] on {a.n} labelled test pairs "
            f"(independent: {a.independence.units})")


def _cost(tier: CascadeTier) -> str:
    if tier.cost_usd is None:
        return ""
    per = f", ${tier.cost_usd / tier.settled:.4g} per settled pair" if tier.settled else ""
    return f"; cost ${tier.cost_usd:.4g}{per}"


def summary_lines(result: Escalation) -> list[str]:
    """The cascade judge by judge, then coverage, the guarantee, the realized agreement and what was left."""
    where = {"test": "test pairs (items left out of calibration)", "all": "all pairs (no held-out test)",
             "records": "pairs of the records (saved thresholds)"}[result.applied_to]
    lines = [f"escalation cascade over {result.pairs} {where}; alpha {result.alpha:g}, delta {result.delta:g}"]
    if result.applied_to != "records":
        lines.append(f"calibrated on {result.calibration_pairs} labelled pairs of {result.calibration_items} items")
    for n, tier in enumerate(result.tiers, start=1):
        swap = f"; {tier.no_swap_seen} pairs judged in one order (no swap seen)" if tier.no_swap_seen else ""
        lines.append(f"{n}. {tier.judge}: threshold {_threshold(tier)} on {tier.measure}; reached {tier.reached}, "
                     f"settled {tier.settled}; agreement {_agreement(tier)}{_cost(tier)}{swap}")
    return lines + _tail(result)


def _tail(result: Escalation) -> list[str]:
    lines = [f"coverage: {_pct(result.coverage)} ({result.settled} of {result.pairs} pairs settled)"]
    lines.append(f"guaranteed by the calibration: {result.guarantee}")
    if any(t.calibration is not None and t.calibration.independent != "pairs" for t in result.tiers):
        lines.append("  (calibration pairs share items: each bound is on the effective sample, pairs and "
                     "disagreements divided by the design effect of clustering by item, an approximation)")
    r = result.realized
    if r is not None and r.n:
        target = 1 - result.alpha
        if r.low is not None and r.low >= target:
            verdict = f"its interval above the target {_pct(target)}"
        elif r.high is not None and r.high < target:
            verdict = f"its interval below the target {_pct(target)}: the guarantee did not hold on this test"
        else:
            verdict = f"its interval includes the target {_pct(target)}"
        lines.append(f"realized agreement on the settled test pairs: {_pct(r.value)} [{_pct(r.low)}, {_pct(r.high)}]"
                     f" over {r.n} pairs ({r.independence.clusters} {r.independence.units} independent), {verdict}")
    elif result.test_pairs:
        lines.append(f"realized agreement: no pair of the {result.test_pairs} labelled test pairs was settled")
    else:
        lines.append("realized agreement: not measured (no labelled test pairs; --split S holds some out)")
    reasons = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(result.unsettled_by_reason.items()))
    lines.append(f"unsettled: {result.unsettled} pairs" + (f" ({reasons})" if reasons else "")
                 + ("; they go to people (swapjudge review) or stay unsettled" if result.unsettled else ""))
    if result.cascade_usd is not None and result.strongest_alone_usd is not None:
        lines.append(f"cost: cascade ${result.cascade_usd:.4g} vs the strongest judge alone "
                     f"${result.strongest_alone_usd:.4g} on the same pairs")
    return lines


def escalation_markdown(result: Escalation) -> str:
    rows = ["| judge | threshold | measure | reached | settled | agreement on test pairs |",
            "|---|---|---|---|---|---|"]
    for tier in result.tiers:
        cell = _agreement(tier).replace("|", "\\|")
        rows.append(f"| {tier.judge} | {_threshold(tier)} | {tier.measure} | {tier.reached} | {tier.settled} | "
                    f"{cell} |")
    return "\n".join(rows) + "\n\n" + "\n".join(f"- {line.strip()}" for line in _tail(result)) + "\n"
