"""Rendering best-of-N (listwise) analyses and rankings as plain lines, for the terminal and for Markdown; no
statistic is computed here. A conclusion is printed only when its test supports it; otherwise what was measured."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from swapjudge.core.stats import MeanInterval
    from swapjudge.ranking.plackett_luce import PlackettLuce
    from swapjudge.workflows.listwise import ListwiseAnalysis, ListwiseRanking


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _interval(m: MeanInterval) -> str:
    return f"{_pct(m.value)} ({_pct(m.low)} – {_pct(m.high)})"


def _p(p: float | None) -> str:
    """`p = 0.0123`, or `p < 0.0001`."""
    if p is None:
        return "p n/a"
    return "p < 0.0001" if p < 0.0001 else f"p = {p:.4f}"


def _signed(value: float | None) -> str:
    return "none" if value is None else f"{value:+.3f}"


def fit_lines(fit: PlackettLuce, *, strengths: bool = True, withheld: str | None = None) -> list[str]:
    """The strengths (unless withheld) and the slot effects beside them."""
    model = "Plackett-Luce on the rankings" if fit.model == "plackett_luce" else "Luce choice model on the picks"
    bounds = (f"{fit.confidence:.0%} item-bootstrap percentile intervals, {fit.rounds} rounds, items resampled"
              if fit.rounds else "no intervals (0 bootstrap rounds)")
    beside = "with slot effects" if fit.slot_effects is not None else "without slot effects"
    lines = [f"strengths: {model} {beside}, log-worth (mean 0 over systems), {bounds}; ordered by "
             "estimate, which is not a claim that neighbours differ:"]
    if strengths:
        for name in fit.order():
            e = fit.strengths[name]
            lines.append(f"  {name}: {_signed(e.value)}  ({_signed(e.low)} … {_signed(e.high)})")
    else:
        lines.append(f"  withheld: {withheld}")
    if fit.slot_effects is None:
        lines.append("slot effects: none fitted" + (f" ({fit.note})" if fit.note else ""))
    else:
        effects = ", ".join(f"slot {i}: {_signed(e.value)} ({_signed(e.low)} … {_signed(e.high)})"
                            for i, e in enumerate(fit.slot_effects, start=1))
        lines.append(f"slot effects (log-worth of each slot's pull, mean 0 over slots): {effects}")
    return lines


def analysis_lines(result: ListwiseAnalysis) -> list[str]:
    """One judge's best-of-N analysis as lines of text."""
    a = result.audit
    out = [f"judge: {result.judge or '(unnamed judge)'}: best of {a.n_slots}, {a.calls} calls over {a.items} "
           f"items, {a.unparsed} without a usable pick; systems: {', '.join(a.systems)}"]
    if a.slot_audit_withheld is None:
        out.append(f"slot pick share (intervals clustered by item; {1 / a.n_slots:.1%} each when no slot is "
                   "preferred):")
    for i, m in enumerate(a.slot_share, start=1):
        out.append(f"  slot {i}: {_interval(m)}")
    t = a.slot_test
    design = ("items whose calls show each system once in each slot as often" if t.design == "balanced"
              else "all items, the order shown assumed drawn at random")
    if a.slot_audit_withheld is not None:
        out.append(f"slot audit: not measured: {a.slot_audit_withheld}")
    elif t.p_value is None:
        out.append(f"slot test: not computed: {t.items} items, fewer than the {a.n_slots} it needs")
    else:
        stat = "infinite (the same deviation in every item)" if t.statistic == float("inf") else f"{t.statistic:.3f}"
        df = t.df or (0, 0)
        verdict = ("a slot is preferred (p < 0.05)" if t.p_value < 0.05 else
                   "no slot preference detected at this sample size (not evidence that there is none)")
        out.append(f"slot test (Hotelling T² over {t.items} items, {design}): F = {stat} on ({df[0]}, {df[1]}) df, "
                   f"{_p(t.p_value)}: {verdict}")
    c = a.consistency
    out.append(f"winner consistency (items whose calls all picked the same system; Wilson over items, items "
               f"independent): {_pct(c.rate)} ({_pct(c.low)} – {_pct(c.high)}), {c.consistent} of {c.items} items"
               + (f"; {c.incomplete} items left out for a call without a usable pick" if c.incomplete else "")
               + (f"; {c.single} items judged once" if c.single else ""))
    g = a.gate
    out.append(f"gate (winner consistency >= {g.min_self_consistency:.0%}): " +
               ("passed" if g.passed else f"FAILED: {g.reason}") +
               (" (the interval contains the gate: the data cannot tell a pass from a fail)" if g.uncertain else ""))
    if a.accuracy is not None:
        acc = a.accuracy
        slots = ", ".join(f"slot {i}: {_interval(m)}" for i, m in enumerate(acc.by_slot, start=1))
        if acc.by_slot:
            out.append(f"accuracy against labels ({acc.calls} calls; chance {acc.chance:.1%}), by the slot the "
                       f"better answer sat in (clustered by item): {slots}")
        else:
            out.append(f"accuracy against labels ({acc.calls} calls; chance {acc.chance:.1%}): not by slot (the "
                       "order shown is not recorded)")
        out.append(f"  order-controlled (items with the better answer in every slot equally often, interval over "
                   f"items): {_interval(acc.order_controlled)}; right in every call: {_pct(acc.all_right.rate)} "
                   f"({_pct(acc.all_right.low)} – {_pct(acc.all_right.high)}) of {acc.all_right.n} items")
    if result.fit is None:
        out.append(f"strengths: not fitted: {result.fit_problem}")
    else:
        out.extend(fit_lines(result.fit, strengths=g.passed, withheld=g.reason))
    out.append("no head-to-head table: a best-of-N pick says which answer won among all shown, not how it did "
               "against each other one")
    return out


def ranking_lines(result: ListwiseRanking) -> list[str]:
    """The ranking of a judge that passed its gate (a withheld one ends the command before it is shown)."""
    assert result.fit is not None
    c: dict[str, Any] = result.consistency
    lines = [f"judge: {result.judge or '(unnamed judge)'}: {result.fit.calls} best-of-N calls over "
             f"{result.fit.items} items; winner consistency {_pct(c['rate'])} ({_pct(c['low'])} – "
             f"{_pct(c['high'])}), gate {result.gate.min_self_consistency:.0%} passed"]
    if result.fit.note:
        lines.append(f"note: {result.fit.note}")
    return lines + fit_lines(result.fit)


def render_text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def render_html(blocks: list[list[str]], title: str = "Best-of-N judge report") -> str:
    """A self-contained HTML page of each judge's lines (every text escaped; no script, no outside resource)."""
    from html import escape

    parts = [f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title>",
             "<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;line-height:1.4}"
             "li{margin:.1rem 0}</style></head><body>", f"<h1>{escape(title)}</h1>"]
    for lines in blocks:
        parts.append(f"<h2>{escape(lines[0])}</h2>")
        items: list[str] = []
        for line in lines[1:]:
            if line.startswith("  "):
                items.append(f"<li>{escape(line.strip())}</li>")
                continue
            if items:
                parts.append("<ul>" + "".join(items) + "</ul>")
                items = []
            parts.append(f"<p>{escape(line)}</p>")
        if items:
            parts.append("<ul>" + "".join(items) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def render_markdown(lines: list[str]) -> str:
    """The same lines as Markdown: the first as a heading, the others as paragraphs, indented ones as list items."""
    blocks: list[str] = [f"### {lines[0]}"]
    for line in lines[1:]:
        if line.startswith("  ") and blocks[-1].startswith("- "):
            blocks[-1] += f"\n- {line.strip()}"
        else:
            blocks.append(f"- {line.strip()}" if line.startswith("  ") else line)
    return "\n\n".join(blocks) + "\n\n"
