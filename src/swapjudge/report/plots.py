"""Plots for the HTML report, drawn with matplotlib as SVG text (no statistic is computed here: every figure
reads a result object). matplotlib comes with the [report] extra and is imported only when a plot is drawn."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from swapjudge.core.analysis import JudgeAnalysis
from swapjudge.core.swap import CrossTable, VerdictSplit
from swapjudge.errors import SwapjudgeError
from swapjudge.ranking.bradley_terry import Ranking

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from swapjudge.workflows.report import SegmentRow

VERDICT_NAMES = ("first", "second", "tie", "none")
# colour-blind-safe pair (Okabe-Ito) for slot 1 / slot 2, grey for ties
SLOT1, SLOT2, TIE_GREY, NONE_GREY = "#E69F00", "#0072B2", "#999999", "#dddddd"
BAND_COLOURS = (("high", 0.0, 0.75, "#f4cccc"), ("moderate", 0.75, 0.90, "#fff2cc"), ("low", 0.90, 1.0, "#d9ead3"))


def new_figure(width: float, height: float) -> Figure:
    """A pyplot-free Figure (no global state, no GUI); a clear error when the [report] extra is missing."""
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError:
        raise SwapjudgeError("the HTML report draws its plots with matplotlib, which is not installed: "
                             "pip install 'swapjudge[report]'") from None
    matplotlib.use("Agg")  # never a GUI backend, even if pyplot is imported elsewhere
    return Figure(figsize=(width, height), layout="constrained")


def to_svg(fig: Figure) -> str:
    """The figure as SVG text: glyphs as paths (no font needed to view it), no date (same input, same bytes)."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "swapjudge"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()


def cross_table_svg(ct: CrossTable) -> str:
    """The 2x2 (3x3 with ties, 4x4 with missing verdicts) cross-table as an annotated heat map."""
    shown = [i for i in range(4) if i < 2 or any(ct.counts[i]) or any(row[i] for row in ct.counts)]
    counts = [[ct.counts[r][c] for c in shown] for r in shown]
    fig = new_figure(1.3 + 1.15 * len(shown), 1.0 + 0.95 * len(shown))
    ax = fig.add_subplot()
    image = ax.imshow(counts, cmap="Blues", vmin=0, vmax=max(1, max(max(r) for r in counts)))
    peak = max(1, max(max(r) for r in counts))
    for ri, r in enumerate(shown):
        for ci, c in enumerate(shown):
            value = counts[ri][ci]
            colour = "white" if value > 0.6 * peak else "black"
            ax.text(ci, ri - 0.12, f"{value:,}", ha="center", va="center", fontsize=12, fontweight="bold",
                    color=colour)
            ax.text(ci, ri + 0.22, _cell_meaning(r, c, ct), ha="center", va="center", fontsize=7, color=colour)
    names = [VERDICT_NAMES[i] for i in shown]
    ax.set_xticks(range(len(shown)), names)
    ax.set_yticks(range(len(shown)), names)
    ax.set_xlabel(f"verdict with {_short(ct.b)} in slot 1")
    ax.set_ylabel(f"verdict with {_short(ct.a)} in slot 1")
    ax.xaxis.set_label_position("top")
    ax.xaxis.tick_top()
    fig.colorbar(image, ax=ax, shrink=0.8, label="pairs")
    return to_svg(fig)


def _cell_meaning(r: int, c: int, ct: CrossTable) -> str:
    """What a cell of the cross-table means in identity terms (row: a in slot 1, column: b in slot 1)."""
    if r == 3 or c == 3:
        return "incomplete"
    meanings = {(0, 1): f"{_short(ct.a, 14)} wins", (1, 0): f"{_short(ct.b, 14)} wins", (2, 2): "tie",
                (0, 0): "flip → slot 1", (1, 1): "flip → slot 2"}
    if (r, c) in meanings:
        return meanings[(r, c)]
    return "half-tie → slot 1" if 0 in (r, c) else "half-tie → slot 2"


def _short(name: str, limit: int = 28) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def split_svg(v: VerdictSplit) -> str:
    """The calls' first/second/tie/none split as one stacked bar."""
    fig = new_figure(7.0, 1.35)
    ax = fig.add_subplot()
    left = 0
    total = max(1, v.calls)
    for name, count, colour in (("first", v.first, SLOT1), ("second", v.second, SLOT2), ("tie", v.tie, TIE_GREY),
                                ("none", v.unparsed, NONE_GREY)):
        if count == 0:
            continue
        ax.barh(0, count, left=left, color=colour, edgecolor="white", height=0.6)
        if count / total > 0.06:
            ax.text(left + count / 2, 0, f"{name}\n{count:,}", ha="center", va="center", fontsize=8,
                    color="black" if colour in (TIE_GREY, NONE_GREY, SLOT1) else "white")
        left += count
    ax.set_xlim(0, total)
    ax.set_yticks([])
    ax.set_xlabel("judge calls")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    return to_svg(fig)


def intervals_svg(analysis: JudgeAnalysis) -> str:
    """The headline proportions with their intervals on one 0-100% axis: consistency against its bands and the
    gate, the flip share toward slot 1 and the first-slot rate against 50%, the win rate when reported."""
    rows: list[tuple[str, float | None, float | None, float | None, float | None]] = []
    c = analysis.consistency
    if c is not None:
        rows.append(("swap-consistency", c.rate, c.low, c.high, None))
    f = analysis.flip_direction
    rows.append(("splits toward slot 1", f.first_share, f.low, f.high, 0.5))
    v = analysis.verdicts
    rows.append(("first-slot win rate (calls)", v.first_slot_rate, v.low, v.high, 0.5))
    w = analysis.win_rate
    if w is not None and not analysis.withheld:
        h = w.headline
        rows.append((f"{_short(w.a, 20)} win rate ({w.policy.value})", h.value, h.low, h.high, 0.5))
    fig = new_figure(7.0, 0.9 + 0.5 * len(rows))
    ax = fig.add_subplot()
    if c is not None:
        for _name, lo, hi, colour in BAND_COLOURS:
            ax.axvspan(100 * lo, 100 * hi, ymin=1 - 1 / len(rows), ymax=1, color=colour, lw=0)
        ax.plot([100 * analysis.gate.min_self_consistency] * 2, [-0.4, 0.4], color="#cc0000", lw=1.5)
    for y, (_label, value, low, high, ref) in enumerate(rows):
        if ref is not None:
            ax.plot([100 * ref] * 2, [y - 0.4, y + 0.4], color="#666666", lw=1, ls=":")
        if value is None or low is None or high is None:
            ax.text(50, y, "n/a", ha="center", va="center", fontsize=8, color="#666666")
            continue
        ax.plot([100 * low, 100 * high], [y, y], color="#333333", lw=2)
        ax.plot([100 * value], [y], "o", color="#333333", ms=6)
        # the label goes right of the interval, or left of it when the interval reaches the right edge
        if high < 0.88:
            ax.text(100 * high + 1.2, y, f"{100 * value:.1f}%", va="center", fontsize=8)
        else:
            ax.text(100 * low - 1.2, y, f"{100 * value:.1f}%", va="center", ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(-2, 102)
    ax.set_xlabel("percent (points: estimate; bars: interval; red: gate; dotted: 50%)")
    ax.grid(axis="x", color="#eeeeee")
    ax.set_axisbelow(True)
    return to_svg(fig)


def segments_svg(rows: Sequence[SegmentRow]) -> str:
    """Per-segment swap-consistency (and win rate, when reported) as interval plots, one row per segment."""
    if not rows:
        raise ValueError("no segments to plot")
    segments = [x for _, x in rows]
    with_rates = any(a.win_rate is not None and not a.withheld for a in segments)
    labels = [_segment_label(value, a) for value, a in rows]
    fig = new_figure(8.0 if with_rates else 6.0, 1.0 + 0.32 * len(segments))
    axes: list[Any] = list(fig.subplots(1, 2 if with_rates else 1, sharey=True, squeeze=False)[0])
    ys = list(range(len(segments)))
    cons_ax = axes[0]
    gate_line = segments[0].gate.min_self_consistency
    for _name, lo, hi, colour in BAND_COLOURS:
        cons_ax.axvspan(100 * lo, 100 * hi, color=colour, lw=0)
    cons_ax.axvline(100 * gate_line, color="#cc0000", lw=1.2)
    for y, s in zip(ys, segments, strict=True):
        c = s.consistency
        if c is not None and c.rate is not None and c.low is not None and c.high is not None:
            cons_ax.plot([100 * c.low, 100 * c.high], [y, y], color="#333333", lw=2)
            cons_ax.plot([100 * c.rate], [y], "o", color="#333333", ms=5)
    cons_ax.set_title("swap-consistency", fontsize=10)
    cons_ax.set_xlim(-2, 102)
    cons_ax.set_yticks(ys, labels)
    cons_ax.set_ylim(len(segments) - 0.5, -0.5)
    cons_ax.set_xlabel("% of pairs (red: gate)")
    if with_rates:
        rate_ax = axes[1]
        rate_ax.axvline(50, color="#666666", lw=1, ls=":")
        for y, s in zip(ys, segments, strict=True):
            w = s.win_rate
            if w is None or s.withheld:
                rate_ax.text(50, y, "withheld" if s.withheld else "n/a", ha="center", va="center",
                             fontsize=7, color="#cc0000" if s.withheld else "#666666")
                continue
            h = w.headline
            if h.value is not None and h.low is not None and h.high is not None:
                rate_ax.plot([100 * h.low, 100 * h.high], [y, y], color=SLOT2, lw=2)
                rate_ax.plot([100 * h.value], [y], "o", color=SLOT2, ms=5)
        first = next(s.win_rate for s in segments if s.win_rate is not None)
        rate_ax.set_title(f"win rate of {_short(first.a, 20)} ({first.policy.value})", fontsize=10)
        rate_ax.set_xlim(-2, 102)
        rate_ax.set_xlabel("% (dotted: 50%)")
    for ax in axes:
        ax.grid(axis="x", color="#eeeeee")
        ax.set_axisbelow(True)
    return to_svg(fig)


def _segment_label(value: str, analysis: JudgeAnalysis) -> str:
    return f"{_short(value, 24)} (n={analysis.outcomes.complete:,})"


def ranking_svg(ranking: Ranking) -> str:
    """A forest plot of a ranking: each system's score (centred log-strength) with its bootstrap interval, best
    at the top, the Elo-style rating on the top axis and the average system (score 0) dotted."""
    from swapjudge.ranking.bradley_terry import ELO_CENTRE, ELO_PER_UNIT

    rows = ranking.rows
    fig = new_figure(7.5, 1.1 + 0.24 * len(rows))
    ax = fig.add_subplot()
    ys = list(range(len(rows)))
    ax.axvline(0, color="#666666", lw=1, ls=":")
    for y, row in zip(ys, rows, strict=True):
        if row.low is not None and row.high is not None and math.isfinite(row.low) and math.isfinite(row.high):
            ax.plot([row.low, row.high], [y, y], color=SLOT2, lw=2, solid_capstyle="butt")
        ax.plot([row.score], [y], "o", color="#333333", ms=4.5)
    ax.set_yticks(ys, [f"{row.rank}. {_short(row.system, 30)}" for row in rows], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel("score (centred log-strength; dotted: the average system)")
    def to_rating(score: Any) -> Any:
        return ELO_CENTRE + ELO_PER_UNIT * score

    def to_score(rating: Any) -> Any:
        return (rating - ELO_CENTRE) / ELO_PER_UNIT

    top = ax.secondary_xaxis("top", functions=(to_rating, to_score))
    top.set_xlabel("rating (1000 + 173.7 × score)", fontsize=8)
    top.tick_params(labelsize=8)
    ax.grid(axis="x", color="#eeeeee")
    ax.set_axisbelow(True)
    return to_svg(fig)
