"""Plain tables for the probe, agreement, panel, variant and segment results, rendered to the terminal (rich) or
Markdown from the same rows, so both say the same thing. Only formatting here; every figure comes from a result."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table as RichTable
from rich.text import Text

from swapjudge.report.wording import interval, pct
from swapjudge.segments import SegmentedAnalysis


@dataclass(frozen=True)
class Table:
    """A titled table of already formatted cells, with sentences to print under it."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = field(default_factory=tuple)


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], notes: Sequence[str] = ()) -> Table:
    return Table(title, tuple(columns), tuple(tuple(r) for r in rows), tuple(notes))


def to_rich(tables: Sequence[Table]) -> Group:
    parts: list[RenderableType] = []
    for t in tables:
        if parts:
            parts.append(Text(""))
        rt = RichTable(title=t.title, title_justify="left", title_style="bold", header_style="dim", box=None,
                       pad_edge=False, padding=(0, 2, 0, 0))
        for i, col in enumerate(t.columns):
            rt.add_column(col, justify="left" if i == 0 else "right", no_wrap=True)
        for row in t.rows:
            rt.add_row(*row)
        parts.append(rt)
        for note in t.notes:
            parts.append(Text(note, style="italic"))
    return Group(*parts)


def print_tables(console: Console, tables: Sequence[Table]) -> None:
    """Print at the tables' natural width even when it exceeds the terminal (a piped 80 columns would
    otherwise cut every cell to an ellipsis)."""
    group = to_rich(tables)
    wide = console.options.update_width(1000)
    needed = max((Measurement.get(console, wide, r).maximum for r in group.renderables if isinstance(r, RichTable)),
                 default=0)
    if needed <= console.width:
        console.print(group)
        return
    saved = console.width
    console.width = needed  # rich caps print(width=) at the console's width, so widen the console itself
    try:
        console.print(group)
    finally:
        console.width = saved


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def to_markdown(tables: Sequence[Table]) -> str:
    lines: list[str] = []
    for t in tables:
        lines += [f"### {_escape(t.title)}", ""]
        if t.rows:
            lines.append("| " + " | ".join(_escape(c) for c in t.columns) + " |")
            lines.append("|" + "|".join(["---"] + ["---:"] * (len(t.columns) - 1)) + "|")
            lines += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in t.rows]
            lines.append("")
        for note in t.notes:
            lines += [_escape(note), ""]
    return "\n".join(lines) + ("\n" if lines and lines[-1] else "")


# ---- builders: result object -> tables ------------------------------------------------------------------

def segments_tables(result: SegmentedAnalysis) -> list[Table]:
    """One row per (segment, judge): consistency and the headline win rate, each with its interval."""
    rows = []
    for label, analyses in [("(all)", result.overall), *[(s.value, s.analyses) for s in result.segments]]:
        for a in analyses:
            c, f = a.consistency, a.flip_direction
            w = a.win_rate if a.win_rate is not None and not a.withheld else None
            rate = "withheld" if a.withheld else "n/a" if w is None else (
                f"{pct(w.headline.value)} ({interval(w.headline.low, w.headline.high)})")
            rows.append((label, a.judge or "-", f"{a.outcomes.complete:,}",
                         pct(c.rate) if c else "n/a", interval(c.low, c.high) if c else "n/a",
                         (c.band or "n/a") if c else "n/a",
                         f"{f.first}/{f.first + f.second}", "" if f.p_value is None else f"{f.p_value:.2g}",
                         rate, "passed" if a.gate.passed else "failed"))
    systems = {f"{a.win_rate.a} vs {a.win_rate.b} ({a.win_rate.policy.value})" for a in result.overall
               if a.win_rate is not None}
    notes = [f"Win rate: {', '.join(sorted(systems))}." if systems else
             "No win rate: more than two systems (name --a and --b to compare two)."]
    notes.append("Splits → slot 1: flips and half-ties toward the first slot, of all flips and half-ties "
                 "(p: exact binomial test against 1/2). Small segments have wide intervals.")
    return [table(f"Segments by {result.by}",
                  ("segment", "judge", "pairs", "consistency", "interval", "band", "splits → slot 1", "p",
                   "win rate", "gate"), rows, notes)]
