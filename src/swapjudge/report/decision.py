"""The decision and the plan as text, Markdown and HTML. The verdict comes first, in one line; the bound (and what
it treats as independent), the counts and the flip audit follow. Nothing here computes a statistic."""

from __future__ import annotations

import html
from typing import Any

from swapjudge.report.wording import p_equals

INDEPENDENT = "each item one independent unit (its pairs averaged into one score)"
_COLOURS = {"ship": "#1b7f3b", "keep": "#b00020", "inconclusive": "#9a6700"}


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{100 * value:.{digits}f}%"


def attack_gate_summary(g: Any) -> str:
    """The attack gate (`decision.attack_gate.AttackGate`) in one line: each attack's upper bound against the
    ceiling; the line a decision and a run with `attacks:` both print."""
    shown = ", ".join(f"{a['name']} {'not measured' if a['high'] is None else _pct(a['high'])}" for a in g.attacks)
    return (f"{'passed' if g.passed else 'FAILED'}: upper bounds of the both-order win rates {shown} against the "
            f"ceiling {_pct(g.ceiling)}")


def _bound_line(v: Any) -> str:
    b = v.bound
    if b is None:
        return "not read: the decision stopped before any win rate (see why)"
    kind = ("anytime-valid confidence sequence (betting, Waudby-Smith & Ramdas), valid at every look"
            if b.method == "betting_cs" else "fixed-sample interval, read once")
    return (f"{_pct(b.value)} over {b.n:,} items; lower bound {_pct(b.low)}, upper bound {_pct(b.high)}, each "
            f"one-sided {_pct(1 - b.alpha, 0)} ({kind}); {INDEPENDENT}")


def _decision_line(v: Any) -> str:
    bar = _pct(v.bar) + ("" if v.hypothesis != "non_inferior" else f" (50% - margin {_pct(v.margin)})")
    planned = f"{v.planned_items:,} items planned" if v.planned_items else "no items planned"
    judge = f" · judge {v.judge}" if v.judge else ""
    return (f"{v.candidate} vs {v.incumbent} · {v.hypothesis} · bar {bar} · {v.tie_policy} · {v.monitoring}, "
            f"{planned} · alpha {_pct(v.alpha, 0)}{judge}")


def _counts_line(v: Any) -> str:
    c = v.counts
    read = f"{c.items_read:,} items read" + (f" of {c.items_available:,}" if c.items_available != c.items_read else "")
    return (f"{read}; {c.pairs:,} complete pairs: {c.wins:,} wins, {c.losses:,} losses, {c.splits:,} splits; "
            f"{c.incomplete_pairs:,} incomplete pairs; {c.missing_calls:,} missing calls "
            f"(tolerated: {c.allowed_missing:,})")


def _consistency_line(v: Any) -> str:
    c = v.consistency
    if c is None or c.rate is None:
        return "not measured (no pair judged in both orders with two verdicts)"
    unit = c.independence
    over = (f"{unit.clusters:,} items as clusters of pairs" if unit is not None and unit.units == "items"
            else f"{c.pairs:,} pairs, one per item")
    return (f"{_pct(c.rate)} of {c.pairs:,} complete pairs consistent ({_pct(c.confidence, 0)} interval "
            f"{_pct(c.low)} to {_pct(c.high)}, over {over}); band {c.band}")


def _flip_line(v: Any) -> str:
    f = v.flip_direction
    if f is None or f.first_share is None:
        return "no flip or half-tie to test"
    p = p_equals(f.p_value)
    lean = (f"the flips lean toward the {f.lean} slot" if f.lean else "no clear lean toward either slot")
    return (f"{f.first:,} toward slot 1, {f.second:,} toward slot 2 (first share {_pct(f.first_share)}, interval "
            f"{_pct(f.low)} to {_pct(f.high)}, {p}): {lean}")


def _gate_line(v: Any) -> str:
    g = v.gate
    state = "passed" if g.passed else "FAILED"
    return f"minimum swap-consistency {_pct(g.min_self_consistency, 0)}: {state}" + (f" ({g.reason})" if g.reason
                                                                                      else "")


def _file_line(v: Any) -> str:
    where = v.decision_path or "(a mapping)"
    return f"{where}, hash {v.decision_hash[:12]}"


def rows(v: Any) -> list[tuple[str, str]]:
    """The labelled lines every format shows, in order."""
    out = [("decision", _decision_line(v)), ("win rate", _bound_line(v)), ("counts", _counts_line(v))]
    out += [("why", r) for r in v.reasons]
    out += [("consistency", _consistency_line(v)), ("flip direction", _flip_line(v)), ("gate", _gate_line(v))]
    out += [("note", n) for n in v.notes]
    if getattr(v, "attack_gate", None) is not None:
        out.append(("attack gate", attack_gate_summary(v.attack_gate)))
    if getattr(v, "fragility", None) is not None:
        from swapjudge.report.fragility import fragility_rows

        out += fragility_rows(v.fragility)
    out += [("decision file", _file_line(v)), ("records", v.source)]
    return out


def render_text(v: Any) -> str:
    width = max(len(k) for k, _ in rows(v))
    lines = [v.headline, ""]
    lines += [f"{k.ljust(width)}  {text}" for k, text in rows(v)]
    return "\n".join(lines) + "\n"


def render_markdown(v: Any) -> str:
    icon = {"ship": "✅", "keep": "❌", "inconclusive": "⚠️"}.get(v.verdict, "")
    lines = [f"### {icon} {v.headline}", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {_cell(text)} |" for k, text in rows(v)]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_html_fragment(v: Any) -> str:
    colour = _COLOURS.get(v.verdict, "#333")
    body = "".join(f"<tr><th style='text-align:left;padding-right:1em;vertical-align:top'>{html.escape(k)}</th>"
                   f"<td>{html.escape(text)}</td></tr>" for k, text in rows(v))
    return (f"<div class='swapjudge-decision'><p style='color:{colour};font-weight:bold;border:2px solid {colour};"
            f"padding:4px 8px'>{html.escape(v.headline)}</p><table>{body}</table></div>")


def render_html(v: Any) -> str:
    """A standalone page."""
    title = html.escape(f"swapjudge decide: {v.verdict} · {v.candidate} vs {v.incumbent}")
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{title}</title></head>"
            f"<body style='font-family:system-ui,sans-serif;max-width:60em;margin:2em auto'>"
            f"{render_html_fragment(v)}</body></html>\n")


def plan_rows(p: Any) -> list[tuple[str, str]]:
    d = p.design
    expected = (f"win rate {_pct(d.rate)} under {p.tie_policy}" + ("" if d.splits is None else
                                                                  f", {_pct(d.splits)} split pairs")
                + f" ({'a pilot, resampled' if d.source == 'pilot' else 'expected'})")
    bound = "confidence sequence (any look)" if p.monitoring == "sequential" else "fixed-sample interval (one look)"
    out = [("design", f"{p.hypothesis}, bar {_pct(p.bar)}, alpha {_pct(p.alpha, 0)}, power {_pct(p.power, 0)}, "
                      f"{bound}"), ("expected", expected)]
    if p.items is not None:
        out.append(("items", f"{p.items:,} (each item one independent unit)"))
        if p.simulated_power is not None:
            out.append(("power check", f"{_pct(p.simulated_power)} of {p.simulations:,} simulated "
                                       f"{'streams' if p.monitoring == 'sequential' else 'studies'} ship at "
                                       f"{p.items:,} items (Monte Carlo error ±{_pct(p.simulation_se)}; seed "
                                       f"{p.seed + 1})"))
        if p.monitoring == "sequential" and p.fixed_items:
            out.append(("fixed design", f"{p.fixed_items:,} items with one look at a fixed-sample interval (no "
                                        "look before them)"))
        out.append(("judge calls", f"{p.calls:,} (both orders)"))
        out.append(("cost", _cost(p)))
    else:
        out.append(("items", "no number of items ships at these rates"))
    if p.registered_items is not None and p.items is not None and p.registered_items != p.items:
        out.append(("registered", f"the decision file plans {p.registered_items:,} items"))
    out += [("note", n) for n in p.notes]
    return out


def _cost(p: Any) -> str:
    if p.model is None and p.cost_usd is None:
        return "give a run configuration (--config) to price the calls"
    sync = "unknown" if p.cost_usd is None else f"${p.cost_usd:,.2f}"
    batch = "no batch API or price" if p.batch_cost_usd is None else f"${p.batch_cost_usd:,.2f}"
    return f"{p.model}: {sync} synchronous, {batch} batch"


def render_plan_text(p: Any) -> str:
    head = (f"Plan: {p.items:,} items for {_pct(p.power, 0)} power" if p.items is not None
            else "Plan: no number of items reaches the registered power at these rates")
    width = max(len(k) for k, _ in plan_rows(p))
    return "\n".join([head, "", *(f"{k.ljust(width)}  {t}" for k, t in plan_rows(p))]) + "\n"


def render_plan_markdown(p: Any) -> str:
    head = render_plan_text(p).splitlines()[0]
    lines = [f"### {head}", "", "| | |", "|---|---|", *(f"| {k} | {_cell(t)} |" for k, t in plan_rows(p))]
    return "\n".join(lines) + "\n"


def render_plan_html(p: Any) -> str:
    head = render_plan_text(p).splitlines()[0]
    body = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
                   f"<td>{html.escape(t)}</td></tr>" for k, t in plan_rows(p))
    return f"<div class='swapjudge-plan'><p><b>{html.escape(head)}</b></p><table>{body}</table></div>"
