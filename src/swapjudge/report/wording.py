"""Sentences shared by every renderer, so the terminal, Markdown and HTML say the same thing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from swapjudge.core.choices import TiePolicy

if TYPE_CHECKING:  # types only: rendering needs no polars
    from swapjudge.core.analysis import JudgeAnalysis

POLICY_WORDS = {
    TiePolicy.half_credit: "splits and ties worth half",
    TiePolicy.exclude: "among pairs with a consistent winner",
    TiePolicy.no_credit: "splits and ties worth nothing",
    TiePolicy.separate: "consistent wins only; splits reported apart",
}

RANKING_WITHHELD = ("withheld: the judge failed the self-consistency gate, and a ranking is many win rates at "
                    "once (`swapjudge rank` still fits one, without the gate)")


def band_text(band: str | None) -> str:
    """The position-sensitivity band as a reader sees it; never the word None."""
    return "n/a (no complete pair)" if band is None else band


def plain(text: str) -> str:
    """A sentence for the terminal: Markdown code marks dropped (`swapjudge rank` -> swapjudge rank)."""
    return text.replace("`", "")


def pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{100 * value:.{digits}f}%"


def interval(low: float | None, high: float | None, digits: int = 1) -> str:
    if low is None or high is None:
        return "n/a"
    return f"{100 * low:.{digits}f}–{100 * high:.{digits}f}%"


def judge_name(analysis: JudgeAnalysis) -> str:
    return analysis.judge or "(unnamed judge)"


def consistency_sentence(analysis: JudgeAnalysis) -> str:
    c = analysis.consistency
    if c is None or c.rate is None:
        return "swap-consistency cannot be measured"
    return (f"the judge gave the same verdict in both orders on {pct(c.rate)} of {c.pairs:,} pairs "
            f"({interval(c.low, c.high)}, {int(c.confidence * 100)}% CI; position sensitivity {c.band})")


def headline(analysis: JudgeAnalysis) -> str:
    """One sentence a manager can quote correctly: win rate, interval, policy, consistency and the gate."""
    gate = analysis.gate
    cons = consistency_sentence(analysis)
    if not gate.passed:
        return f"No win rate: {gate.reason}. ({cons[0].upper() + cons[1:]}.)"
    w = analysis.win_rate
    if w is None or analysis.pair is None:
        return f"{cons[0].upper() + cons[1:]}, passing the {pct(gate.min_self_consistency, 0)} gate."
    h = w.headline
    what = "wins" if w.policy is not TiePolicy.separate else "wins outright"
    return (f"{w.a} {what} {pct(h.value)} of its pairs against {w.b} ({interval(h.low, h.high)}, "
            f"{POLICY_WORDS[w.policy]}); {cons}, passing the {pct(gate.min_self_consistency, 0)} gate.")


def flip_sentence(analysis: JudgeAnalysis) -> str:
    f = analysis.flip_direction
    if f.first_share is None:
        return "no flips or half-ties: nothing to say about their direction"
    lean = "the first" if f.first_share > 0.5 else "the second" if f.first_share < 0.5 else "neither"
    p = "n/a" if f.p_value is None else f"{f.p_value:.3g}"
    return (f"{pct(f.first_share)} of {f.first + f.second} flips and half-ties went to the first slot "
            f"({interval(f.low, f.high)}; exact binomial p = {p}): the judge leans toward {lean} slot")
