"""Rendering a Ranking: a rich table for the terminal and a Markdown table; no statistic is computed here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.table import Table
from rich.text import Text

from swapjudge.core.choices import FEW_ITEMS

if TYPE_CHECKING:  # types only: rendering needs no scipy
    from swapjudge.ranking.bradley_terry import Ranking, SystemScore
    from swapjudge.ranking.gate import RankGate
    from swapjudge.ranking.order_effect import AdjustedRanking

MODEL_WORDS = {
    "rao-kupper": "Rao-Kupper (ties from a threshold theta)",
    "davidson": "Davidson (ties ~ geometric mean of strengths)",
    "bt-half": "Bradley-Terry, ties as half wins",
}
OUTCOME_WORDS = {
    "swap": "one comparison per pair, order cancelled, a split counted as a tie",
    "calls": "every call on its own, order not cancelled",
    "graded": ("one comparison per graded pair, its graded score (1 / ¾ / ½ / ¼ / 0, both orders averaged) "
               "counted as that share of a win: Bradley-Terry on weighted outcomes; wins and losses are those "
               "shares summed"),
}


def rank_range(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}–{high}"


def score_interval(row: SystemScore, ranking: Ranking) -> str:
    """The score interval, an open side written "unbounded"; "none" where the bootstrap gives none."""
    if not _has_intervals(ranking):
        return "none"
    return f"{limit_text(row.low, row.low_open, '+.3f')} … {limit_text(row.high, row.high_open, '+.3f')}"


def limit_text(value: float | None, is_open: bool, spec: str) -> str:
    """A limit; an open side "unbounded"; "none" where the data give no limit (the other side of a score that
    only the ridge holds)."""
    if value is not None:
        return format(value, spec)
    return "unbounded" if is_open else "none"


def rating_interval(row: SystemScore, ranking: Ranking) -> str:
    if not _has_intervals(ranking):
        return "none"
    return f"{limit_text(row.rating_low, row.low_open, '.0f')}–{limit_text(row.rating_high, row.high_open, '.0f')}"


def _has_intervals(ranking: Ranking) -> bool:
    return ranking.rounds > 0 and ranking.no_interval is None


def _names(rows: list[SystemScore]) -> str:
    return ", ".join(row.system for row in rows)


def _tie_line(ranking: Ranking) -> str:
    if ranking.tie_parameter is None:
        return "ties count as half a win for each side"
    interval = ""
    if ranking.tie_low is not None and ranking.tie_high is not None and _has_intervals(ranking):
        interval = f" ({ranking.tie_low:.3f}–{ranking.tie_high:.3f})"
    return f"tie parameter {ranking.tie_parameter_name} = {ranking.tie_parameter:.3f}{interval}"


def ranking_summary(ranking: Ranking, *, judge: str | None = None, outcome: str | None = None,
                    gate: RankGate | None = None) -> list[str]:
    """The sentences printed above the table (the first three, and the gate's when given) and the notes below
    it, shared by both renderers; `head_lines` says how many go above."""
    return _head(ranking, judge, outcome, gate) + _notes(ranking)


def _head(ranking: Ranking, judge: str | None, outcome: str | None, gate: RankGate | None) -> list[str]:
    level = f"{round(ranking.confidence * 100)}%"
    head = [f"model: {MODEL_WORDS.get(ranking.model.value, ranking.model.value)}; {_tie_line(ranking)}"]
    what = f"{ranking.comparisons:,} comparisons over {ranking.items:,} items"
    if outcome:
        what += f" ({OUTCOME_WORDS.get(outcome, outcome)})"
    if judge:
        what = f"judge {judge}: {what}"
    head.append(what)
    if ranking.no_interval is not None:
        head.append(f"no bootstrap interval: {ranking.no_interval}; score = centred log-strength, "
                    "rating = 1000 + 173.7 × score")
    elif ranking.rounds > 0:
        method = "BCa" if ranking.interval.value == "bca" else "percentile"
        head.append(f"{level} {method} intervals from {ranking.rounds:,} bootstrap rounds over items "
                    f"(seed {ranking.seed}); score = centred log-strength, rating = 1000 + 173.7 × score")
    else:
        head.append("no bootstrap: no intervals")
    if gate is not None:
        head.append(f"judge {gate.sentence()}")
    return head


def head_lines(gate: RankGate | None) -> int:
    return 3 if gate is None else 4


def _notes(ranking: Ranking) -> list[str]:
    notes = []
    rows = list(ranking.rows)
    above = [row for row in rows if row.never_loses]
    below = [row for row in rows if row.never_wins]
    if above:
        notes.append(f"note: {_names(above)} never lost to (nor tied with) the other systems they meet: the score "
                     "has no finite estimate, only the ridge holds it, so its interval is open above and no lower "
                     "limit is given either (it would be the ridge's); read the order, not the number")
    if below:
        notes.append(f"note: {_names(below)} never beat (nor tied with) the other systems they meet: the score "
                     "has no finite estimate, only the ridge holds it, so its interval is open below and no upper "
                     "limit is given either (it would be the ridge's); read the order, not the number")
    # beyond the systems separated in the data (said above): those the resamples leave unbounded
    open_high = [row for row in rows if row.high_open and not row.never_loses]
    open_low = [row for row in rows if row.low_open and not row.never_wins]
    if open_high or open_low:
        sides = "; ".join(part for part in (
            f"upper bound of {_names(open_high)}" if open_high else "",
            f"lower bound of {_names(open_low)}" if open_low else "") if part)
        notes.append(f"note: unbounded {sides}: in more resamples of the items than the interval's tail, that "
                     "side had no finite estimate (a group that never lost, or never won, against the rest), so "
                     "any finite limit there would be the ridge's, not the data's (null in JSON)")
    if _has_intervals(ranking) and ranking.items < FEW_ITEMS:
        notes.append(f"note: only {ranking.items} items: below {FEW_ITEMS} items the item bootstrap's intervals run "
                     "narrow (their coverage falls below the nominal level; measured 0.86–0.93 for 95% at 8 "
                     "items), so read them as a lower bound on the uncertainty")
    c = ranking.convergence
    if not c.converged:
        notes.append(f"warning: the point fit did not converge ({c.iterations} iterations, "
                     f"gradient {c.gradient_norm:.2g})")
    if c.bootstrap_not_converged:
        notes.append(f"warning: {c.bootstrap_not_converged} of {c.bootstrap_rounds} bootstrap refits did not "
                     "converge")
    if not c.connected:
        notes.append(f"warning: the comparisons fall into {c.components} groups never compared with each "
                     "other; scores across groups are not comparable")
    return notes


def render_text(ranking: Ranking, *, judge: str | None = None, outcome: str | None = None,
                gate: RankGate | None = None) -> Group:
    lines = ranking_summary(ranking, judge=judge, outcome=outcome, gate=gate)
    above = head_lines(gate)
    table = Table(box=None, header_style="dim", pad_edge=False, padding=(0, 2, 0, 0))
    level = f"{round(ranking.confidence * 100)}% interval"
    table.add_column("#", justify="right", no_wrap=True)
    # the one column that may wrap in a narrow terminal
    table.add_column("system", overflow="fold", min_width=12)
    for name in ("score", level, "rating", "rating interval", "rank range", "W / T / L", "pairs"):
        table.add_column(name, justify="right", no_wrap=True)
    for row in ranking.rows:
        table.add_row(str(row.rank), row.system, f"{row.score:+.3f}", score_interval(row, ranking),
                      f"{row.rating:.0f}", rating_interval(row, ranking),
                      rank_range(row.rank_low, row.rank_high), f"{row.wins} / {row.ties} / {row.losses}",
                      f"{row.pairs:,}")
    parts: list[Text | Table] = [Text(line, style="bold" if i == 0 else "")
                                 for i, line in enumerate(lines[:above])]
    parts.append(table)
    parts += [Text(line, style="yellow") for line in lines[above:]]
    return Group(*parts)


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def render_markdown(ranking: Ranking, *, judge: str | None = None, outcome: str | None = None,
                    gate: RankGate | None = None) -> str:
    lines = ranking_summary(ranking, judge=judge, outcome=outcome, gate=gate)
    above = head_lines(gate)
    level = f"{round(ranking.confidence * 100)}% interval"
    out = [f"### swapjudge rank{' · ' + _escape(judge) if judge else ''}", ""]
    out += [f"{_escape(line)}  " for line in lines[:above]] + [""]
    out += [f"| # | system | score | {level} | rating | rating interval | rank range | W / T / L | pairs |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in ranking.rows:
        out.append(f"| {row.rank} | {_escape(row.system)} | {row.score:+.3f} | "
                   f"{score_interval(row, ranking)} | "
                   f"{row.rating:.0f} | {rating_interval(row, ranking)} | "
                   f"{rank_range(row.rank_low, row.rank_high)} | {row.wins} / {row.ties} / {row.losses} | "
                   f"{row.pairs:,} |")
    out += [""] + [f"> {_escape(line)}" for line in lines[above:]]
    return "\n".join(out).rstrip() + "\n"


def adjusted_lines(result: AdjustedRanking) -> list[str]:
    """What the first-slot term and the covariates say; a conclusion only where the interval supports it."""
    level = f"{round(result.ranking.confidence * 100)}%"
    has_interval = result.ranking.rounds > 0
    lines = ["Bradley-Terry on single calls (ties as half wins), strengths adjusted for the terms below"]
    h = result.order_effect
    p = result.first_slot_win_probability
    if h is not None and p is not None:
        line = f"first-slot effect: {h.value:+.3f} log-odds"
        if has_interval:
            line += f" ({level} interval {h.low:+.3f} to {h.high:+.3f}, bootstrap over items)"
        line += f"; between equals the first slot wins {p[0]:.1%}"
        if has_interval:
            line += f" ({p[1]:.1%}–{p[2]:.1%})"
            if h.low > 0 or h.high < 0:
                line += f": the judge favours the {'first' if h.low > 0 else 'second'} slot"
            else:
                line += ": no position preference detected (the interval includes 0)"
        lines.append(line)
    w = result.controlled_win_rate
    if w is not None:
        terms = " and ".join(t for t, on in (("the first slot's effect removed", h is not None),
                                               ("equal style", bool(result.controls))) if on)
        line = f"win rate of {w.name}, {terms}: {w.value:.1%}"
        if has_interval:
            line += f" ({level} interval {w.low:.1%}–{w.high:.1%})"
        lines.append(line)
    for c in result.controls:
        line = f"control {c.name}: {c.value:+.3f} log-odds per SD of the normalised difference"
        if has_interval:
            line += f" ({level} interval {c.low:+.3f} to {c.high:+.3f})"
            if c.low > 0 or c.high < 0:
                line += f": the judge favours the answer with {'more' if c.low > 0 else 'less'} {c.name}"
        lines.append(line)
    return lines
