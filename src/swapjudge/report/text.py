"""Terminal rendering with rich: compact tables a person reads without the docs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.constrain import Constrain
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from swapjudge.report.wording import (
    ARENA_HARD_LABEL,
    ARENA_HARD_NOTE,
    GRADED_LABEL,
    PER_CALL_LABEL,
    band_text,
    consistency_sentence,
    decided_cells,
    design_sentence,
    flip_sentence,
    gate_sentence,
    graded_sentences,
    headline,
    interval,
    judge_name,
    judged_once,
    p_equals,
    p_text,
    pct,
    plain,
)

if TYPE_CHECKING:  # types only: rendering needs no polars
    from swapjudge.core.analysis import Calculation, JudgeAnalysis

VERDICT_NAMES = ("first", "second", "tie", "none")
RULE_WIDTH = 100  # the widest a judge's heading rule gets


class _Titled(Table):
    """A borderless table whose title is printed on its own line (rich would wrap it to the table's width)."""

    heading: str = ""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(self.heading, style="bold")
        yield from super().__rich_console__(console, options)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _kv_table(title: str) -> Table:
    table = _Titled(show_header=True, header_style="dim", box=None, pad_edge=False, padding=(0, 2, 0, 0))
    table.heading = title
    return table


def text_analysis(analysis: JudgeAnalysis) -> Group:
    """One judge's analysis as a rich panel."""
    parts: list[RenderableType] = []
    style = "bold green" if analysis.gate.passed else "bold red"
    parts.append(Text(headline(analysis), style=style))
    parts.append(Text("Data: " + design_sentence(analysis) + ".", style="dim"))
    o = analysis.outcomes

    swap = _kv_table("Swap")
    # at a narrow terminal the words columns wrap so the figures keep their width: nothing is cut to "…"
    swap.add_column("measure", ratio=3)
    swap.add_column("value", justify="right", no_wrap=True)
    swap.add_column("95% interval" if not analysis.consistency else
                    f"{int(analysis.consistency.confidence * 100)}% interval", justify="right", no_wrap=True)
    swap.add_column("test", ratio=2, overflow="fold")
    c = analysis.consistency
    if judged_once(analysis):
        swap.add_row("pairs (each judged once)", f"{o.total:,}", "")
    else:
        swap.add_row("pairs (complete / total)", f"{o.complete:,} / {o.total:,}", "")
    if c is not None:
        swap.add_row("swap-consistency", pct(c.rate), interval(c.low, c.high))
        swap.add_row("position sensitivity", band_text(c.band), "")
    else:
        swap.add_row("swap-consistency", "cannot be measured", "")
    swap.add_row("consistent (tie/tie)", f"{o.consistent:,} ({o.consistent_ties:,})", "")
    swap.add_row("flips → slot 1 / slot 2", f"{o.flips_first:,} / {o.flips_second:,}", "")
    swap.add_row("half-ties → slot 1 / slot 2", f"{o.half_ties_first:,} / {o.half_ties_second:,}", "")
    f = analysis.flip_direction
    p = "" if f.p_value is None else p_text(f)
    swap.add_row("splits toward slot 1", pct(f.first_share), interval(f.low, f.high), p)
    v = analysis.verdicts
    swap.add_row("calls 1st / 2nd / tie / none", f"{v.first:,} / {v.second:,} / {v.tie:,} / {v.unparsed:,}",
                 "")
    swap.add_row("first-slot win rate", pct(v.first_slot_rate), interval(v.low, v.high))
    parts.append(swap)
    parts.append(Text(flip_sentence(analysis) + ".", style="italic"))

    if analysis.cross_table is not None and not judged_once(analysis):
        ct = analysis.cross_table
        cross = _kv_table(f"Cross-table: rows = verdict with {ct.a} in slot 1, columns = with {ct.b} in slot 1")
        cross.add_column("")
        shown = [i for i in range(4) if any(ct.counts[i]) or any(r[i] for r in ct.counts) or i < 2]
        for i in shown:
            cross.add_column(VERDICT_NAMES[i], justify="right")
        for i in shown:
            cross.add_row(VERDICT_NAMES[i], *[f"{ct.counts[i][j]:,}" for j in shown])
        parts.append(cross)

    if analysis.graded is not None:
        parts += _graded_parts(analysis)

    w = analysis.win_rate
    if w is not None and not analysis.withheld:
        rates = _kv_table(f"Win rate of {w.a} against {w.b} (over {w.pairs:,} pairs)")
        rates.add_column("tie policy")
        rates.add_column("value", justify="right")
        rates.add_column("interval", justify="right")
        for name, rate in (("half_credit", w.half_credit), ("exclude", w.exclude), ("no_credit", w.no_credit),
                           (f"separate: {w.a}", w.separate_a), (f"separate: {w.b}", w.separate_b),
                           ("separate: split", w.separate_split)):
            marker = " ◀" if name.split(":")[0] == w.policy.value else ""
            rates.add_row(name + marker, pct(rate.value), interval(rate.low, rate.high))
        if w.per_call is not None:
            rates.add_row(PER_CALL_LABEL, pct(w.per_call.value), interval(w.per_call.low, w.per_call.high))
        if w.graded is not None:
            rates.add_row(f"{GRADED_LABEL}, {w.graded_pairs:,} pairs", pct(w.graded.value),
                          interval(w.graded.low, w.graded.high))
        if w.arena_hard is not None:
            rates.add_row(f"{ARENA_HARD_LABEL}, {w.arena_hard_battles:,} battles", pct(w.arena_hard.value),
                          interval(w.arena_hard.low, w.arena_hard.high))
        parts.append(rates)
        if w.arena_hard is not None:
            parts.append(Text(_capital(ARENA_HARD_NOTE) + ".", style="dim"))

        if analysis.decision is not None:
            parts.append(Text("Decision help: " + analysis.decision.sentence() + ".", style="italic"))
    elif analysis.withheld:
        parts.append(Text("Win rate withheld by the gate.", style="red"))

    if analysis.accuracy is not None:
        acc = analysis.accuracy.to_dict()
        den = acc["denominators"]
        table = _kv_table(f"Agreement with labels ({acc['pairs']:,} labelled pairs in both orders, "
                          f"{acc['tie_pairs']:,} labelled tie)")
        table.add_column("accuracy")
        table.add_column("value", justify="right")
        table.add_column("interval", justify="right")
        pair_rows = (("better_first", "better answer in slot 1"), ("better_second", "better answer in slot 2"),
                     ("both", "right in both orders (order-controlled)")) if acc["pairs"] else ()
        for key, label in pair_rows:  # no labelled pair in both orders (single-order data): per call only
            table.add_row(f"{label} (of {den[key]:,} pairs)", pct(acc[key]),
                          interval(acc["intervals"][key]["low"], acc["intervals"][key]["high"]))
        if acc["pairs"]:
            table.add_row(f"among consistent pairs (of {den['consistent']:,})", pct(acc["consistent"]), "")
        table.add_row(f"per call (of {den['per_call']:,} labelled calls)", pct(acc["per_call"]["value"]),
                      interval(acc["per_call"]["low"], acc["per_call"]["high"]))
        parts.append(table)

    if analysis.debiased is not None:
        parts.extend(_debiased_parts(analysis))

    if analysis.identical is not None:
        ident = analysis.identical.to_dict()
        table = _kv_table("Identical-answer probe (same text in both slots)")
        table.add_column("measure")
        table.add_column("value", justify="right")
        table.add_column("interval", justify="right")
        table.add_row("calls: first / second / tie / none",
                      f"{ident['first']} / {ident['second']} / {ident['tie']} / {ident['unparsed']}", "")
        table.add_row("decided rate (named a winner)", *decided_cells(ident))
        table.add_row("first-slot share of decided", pct(ident["first_share"]),
                      interval(ident["first_share_low"], ident["first_share_high"]))
        parts.append(table)

    gate = analysis.gate
    parts.append(Text(plain(gate_sentence(gate)), style=style))
    for note in analysis.notes:
        parts.append(Text("Note: " + plain(note), style="yellow"))
    # the rule spans a terminal, but not the unbounded width of a piped log
    return Group(Constrain(Rule(f"judge: {judge_name(analysis)}", align="left"), RULE_WIDTH), *_spaced(parts))


def _graded_parts(analysis: JudgeAnalysis) -> list[RenderableType]:
    """The five-level analysis: strength consistency, the flips by strength, the cross-table of levels."""
    g = analysis.graded
    assert g is not None
    sc = g.strength_consistency
    table = _kv_table(f"Graded verdicts ({g.pairs:,} graded pairs)")
    table.add_column("measure", ratio=3)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("interval", justify="right", no_wrap=True)
    table.add_column("test", ratio=2, overflow="fold")
    table.add_row("strength consistency", pct(sc.rate), interval(sc.low, sc.high))
    table.add_row("same answer, other strength", f"{g.direction_only:,}", "")
    for name, count, f in (("strong flips", g.strong_flips, g.flip_direction_strong),
                           ("weak flips", g.weak_flips, g.flip_direction_weak),
                           ("mixed flips", g.mixed_flips, g.flip_direction_mixed)):
        p = "" if f.p_value is None else p_text(f)
        table.add_row(f"{name} → slot 1 / slot 2", f"{f.first:,} / {f.second:,}", f"{count:,} in all", p)
    parts: list[RenderableType] = [table, Text(". ".join(graded_sentences(g)) + ".", style="italic")]
    ct = g.cross_table
    if ct is not None:
        cross = _kv_table(f"Levels: rows = {ct.a} in slot 1, columns = {ct.b} in slot 1 (A = the answer in slot 1)")
        cross.add_column("")
        for label in ct.to_dict()["labels"]:
            cross.add_column(label, justify="right")
        for label, row in zip(ct.to_dict()["labels"], ct.counts, strict=True):
            cross.add_row(label, *[f"{v:,}" for v in row])
        parts.append(cross)
    return parts


def _debiased_parts(analysis: JudgeAnalysis) -> list[RenderableType]:
    """Raw and debiased accuracy side by side, each debiased method's consistency and implied win rate."""
    d = analysis.debiased
    assert d is not None
    table = _kv_table(f"Debiased verdicts, a mitigation (from the judge's probabilities in both orders, "
                      f"{d.order_averaged.pairs:,} pairs)")
    table.add_column("verdict")
    for name in ("accuracy", "interval", "consistency", "win rate"):
        table.add_column(name, justify="right", no_wrap=True)
    if analysis.accuracy is not None:
        acc = analysis.accuracy.to_dict()
        c = analysis.consistency
        table.add_row("raw (right in both orders)", pct(acc["both"]),
                      interval(acc["intervals"]["both"]["low"], acc["intervals"]["both"]["high"]),
                      pct(c.rate) if c else "n/a", "see above" if not analysis.withheld else "withheld")
    methods = [("order-averaged", d.order_averaged)]
    if d.calibrated is not None:
        methods.append((f"slot prior {pct(d.slot_prior)} removed", d.calibrated))
    for label, m in methods:
        acc_text = pct(m.accuracy.rate) if m.accuracy else "no labels"
        acc_int = interval(m.accuracy.low, m.accuracy.high) if m.accuracy else ""
        cons = "1 (by design)" if m.by_construction else pct(m.consistency.rate)
        if d.withheld or m.win_rate is None:
            rate = "withheld" if d.withheld else ""
        else:
            h = m.win_rate.headline
            rate = f"{pct(h.value)} ({interval(h.low, h.high)})"
        table.add_row(label, acc_text, acc_int, cons, rate)
    words = ("The order-averaged verdict decides each pair by (P(x | x first) + P(x | x second)) / 2, so a "
             "constant slot preference cancels; its consistency is 1 by construction, not a measurement. "
             "The gate and the headline stay with the raw verdicts")
    words += ("; the raw judge failed the gate, so the debiased win rates are withheld too." if d.withheld
              else ".")
    return [table, Text(words, style="italic")]


def _spaced(parts: list[RenderableType]) -> list[RenderableType]:
    out: list[RenderableType] = []
    for part in parts:
        if out:
            out.append(Text(""))
        out.append(part)
    return out


def print_analyses(console: Console, analyses: Sequence[JudgeAnalysis]) -> None:
    for analysis in analyses:
        console.print(text_analysis(analysis))


def text_calculation(calc: Calculation) -> Panel:
    c = calc.consistency
    table = _kv_table("Swap-consistency calculator")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column(f"{int(c.confidence * 100)}% interval", justify="right")
    table.add_row("consistent pairs", f"{c.consistent:,} of {c.pairs:,}", "")
    table.add_row("swap-consistency", pct(c.rate), interval(c.low, c.high))
    table.add_row("flip rate", pct(c.flip_rate), interval(c.flip_rate_low, c.flip_rate_high))
    table.add_row("position sensitivity band", band_text(c.band), "")
    f = calc.flip_direction
    if f is not None:
        p = "" if f.p_value is None else p_equals(f.p_value)
        table.add_row("flips toward slot 1", f"{f.first:,} of {f.first + f.second:,}  ({pct(f.first_share)})",
                      f"{interval(f.low, f.high)}  {p}")
    parts: list[RenderableType] = [Text(consistency_sentence_for(calc), style="bold"), table]
    if calc.decision is not None:
        parts.append(Text("Decision help: " + calc.decision.sentence() + ".", style="italic"))
    return Panel(Group(*_spaced(parts)), expand=False)


def consistency_sentence_for(calc: Calculation) -> str:
    c = calc.consistency
    return (f"Swap-consistency {pct(c.rate)} ({interval(c.low, c.high)}): position sensitivity {band_text(c.band)}; "
            f"up to {pct(c.flip_rate_high)} of pairs may flip with the order.")


__all__ = ["consistency_sentence", "print_analyses", "text_analysis", "text_calculation"]
