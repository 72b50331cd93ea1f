"""Sentences shared by every renderer, so the terminal, Markdown and HTML say the same thing."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from swapjudge.core.choices import TiePolicy

if TYPE_CHECKING:  # types only: rendering needs no polars
    from swapjudge.core.analysis import JudgeAnalysis
    from swapjudge.core.graded import GradedSwap
    from swapjudge.core.policy import Gate, WinRate
    from swapjudge.core.swap import FlipDirection

POLICY_WORDS = {
    TiePolicy.half_credit: "splits and ties worth half",
    TiePolicy.exclude: "among pairs with a consistent winner",
    TiePolicy.no_credit: "splits and ties worth nothing",
    TiePolicy.separate: "consistent wins only; splits reported apart",
}

# the per-call convention other harnesses publish, shown beside the tie policies and never as the headline
PER_CALL_LABEL = "per call (each call, tie = ½)"
# graded verdicts: the honest graded score, and arena-hard-auto's convention beside it (never the headline)
GRADED_LABEL = "graded (1 / ¾ / ½ / ¼ / 0, two orders averaged)"
ARENA_HARD_LABEL = "arena-hard convention (×3, orders unreconciled)"
ARENA_HARD_NOTE = ("arena-hard convention, for comparison with its published scores and never the headline: every call "
                   "is its own battle and a 'much better' verdict three of them, the two orders never reconciled; its "
                   "interval treats every battle as independent, so it is narrower than the data support")

RANKING_WITHHELD = ("withheld: the judge failed the self-consistency gate, and a ranking is many win rates at "
                    "once (`swapjudge rank` still fits one, without the gate)")


def band_text(band: str | None) -> str:
    """The position-sensitivity band as a reader sees it; never the word None."""
    return "n/a (no complete pair)" if band is None else band


def plain(text: str) -> str:
    """A sentence for the terminal: Markdown code marks dropped (`swapjudge rank` -> swapjudge rank)."""
    return text.replace("`", "")


def e(value: Any) -> str:
    """Escape anything for HTML text or a quoted attribute."""
    return escape("" if value is None else str(value), quote=True)


def prose(value: Any) -> str:
    """A sentence for HTML: escaped, its Markdown `code` marks shown as <code>, never as literal backticks."""
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", e(value))


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


def design_sentence(analysis: JudgeAnalysis) -> str:
    """What the data is: how the pairs were judged (report headers say this, never assume both orders)."""
    o = analysis.outcomes
    if analysis.design == "single_order":
        return "each pair judged once, in one fixed order: swap-consistency cannot be measured"
    if analysis.design == "random_order":
        return "each pair judged once, in a randomly chosen order: swap-consistency cannot be measured"
    if analysis.design == "adaptive":
        return f"adaptive swapping: {o.complete:,} of {o.total:,} pairs judged in both orders, the rest once"
    return "every pair judged in both orders"


def judged_once(analysis: JudgeAnalysis) -> bool:
    """Pairs judged once by design: a missing second order is not an incomplete pair there."""
    return analysis.design in ("single_order", "random_order")


def _rate_phrase(w: WinRate) -> str:
    """What the headline number is, in the words of its policy."""
    h = w.headline
    value = f"{pct(h.value)} against {w.b} ({interval(h.low, h.high)}"
    if w.policy is TiePolicy.half_credit:
        return f"{w.a} scores {pct(h.value)} (a split counts half) against {w.b} ({interval(h.low, h.high)})"
    if w.policy is TiePolicy.exclude:
        return f"{w.a} wins {value} of the pairs with a consistent winner; splits left out)"
    if w.policy is TiePolicy.no_credit:
        return f"{w.a} wins {value} of its pairs; a split counts nothing)"
    return f"{w.a} wins outright {value} of its pairs; splits reported apart)"


def headline(analysis: JudgeAnalysis) -> str:
    """One sentence a manager can quote correctly: win rate, interval, policy, consistency and the gate."""
    gate = analysis.gate
    cons = consistency_sentence(analysis)
    if not gate.passed:
        return f"No win rate: {gate.reason}. ({cons[0].upper() + cons[1:]}.)"
    w = analysis.win_rate
    unsure = "" if not gate.uncertain else f" ({GATE_UNSURE})"
    if w is None or analysis.pair is None:
        return f"{cons[0].upper() + cons[1:]}, passing the {pct(gate.min_self_consistency, 0)} gate{unsure}."
    return f"{_rate_phrase(w)}; {cons}, passing the {pct(gate.min_self_consistency, 0)} gate{unsure}."


GATE_UNSURE = "not a sure pass: the consistency interval contains the threshold"
GATE_UNSURE_FAIL = "not a sure fail: the consistency interval contains the threshold"


def gate_sentence(gate: Gate) -> str:
    """The gate in one line, with its plain-words flag when the consistency interval contains the threshold."""
    if gate.passed and gate.min_self_consistency <= 0:
        return "Gate: off (a minimum self-consistency of 0: rates are shown whatever the judge's consistency)"
    if gate.passed:
        text = f"Gate: passed (min self-consistency {pct(gate.min_self_consistency, 0)})"
        return text + (f"; {GATE_UNSURE}, so the pass is not to be trusted" if gate.uncertain
                       else "")
    text = f"Gate: FAILED — {gate.reason}"
    return text + (f"; {GATE_UNSURE_FAIL}" if gate.uncertain else "")


# a double holds p-values down to about 5e-324: one computed as 0 is below what can be said more precisely
P_FLOOR = "1e-300"


def p_number(value: float | None, digits: int = 3) -> str:
    """A p-value as a figure (a table cell): "n/a" when there is none, "< 1e-300" when it underflowed to 0."""
    if value is None:
        return "n/a"
    return f"< {P_FLOOR}" if value <= 0 else f"{value:.{digits}g}"


def p_equals(value: float | None, digits: int = 3) -> str:
    """"p = 0.0312" in a sentence, "p < 1e-300" for a p that underflowed to 0 (never "p = 0")."""
    return f"p < {P_FLOOR}" if value is not None and value <= 0 else f"p = {p_number(value, digits)}"


def p_text(f: FlipDirection) -> str:
    """The exact test's "p = ...", with its Holm-adjusted value next to it when several were tested at once."""
    return p_equals(f.p_value) + ("" if f.p_holm is None else f", Holm-adjusted {p_number(f.p_holm)}")


def flip_direction_sentence(f: FlipDirection) -> str:
    """The flip direction, claimed only when its two-sided test (exact, or clustered by item when flips share
    items; Holm-adjusted when several were tested) rejects at its level; otherwise the share, interval and p,
    and no lean."""
    if f.first_share is None:
        return "no flips or half-ties: nothing to say about their direction"
    ind = f.independence
    test = (f"items as the independent units, {ind.clusters} of them; " if ind is not None and ind.units == "items"
            else "exact binomial ")
    measured = (f"{pct(f.first_share)} of {f.first + f.second:,} flips and half-ties went to the first slot "
                f"({interval(f.low, f.high)}; {test}{p_text(f)})")
    if f.lean is None:
        return f"no clear lean toward either slot: {measured}, not below {f.level:g}"
    return f"{measured}: the judge leans toward the {f.lean} slot"


def strength_sentence(g: GradedSwap) -> str:
    """Strength consistency as measured, with what it counts."""
    sc = g.strength_consistency
    if sc.rate is None:
        return "no graded pair (both calls with a level): strength consistency cannot be measured"
    ind = sc.independence
    unit = f"; the interval counts {ind.clusters} items as the units" if ind.units == "items" else ""
    return (f"strength consistency {pct(sc.rate)} ({interval(sc.low, sc.high)}) of {sc.pairs:,} graded pairs: "
            f"both orders named the same answer with the same strength, or tie twice; {g.direction_only:,} more "
            f"named the same answer with different strengths{unit}")


def graded_flip_sentence(name: str, f: FlipDirection) -> str:
    """One class of flips (strong, weak, mixed) with its test; a lean is claimed only when the test rejects."""
    n = f.first + f.second
    if n == 0:
        return f"no {name} flips"
    measured = f"{n:,} {name} flip(s), {f.first:,} toward slot 1 and {f.second:,} toward slot 2 ({p_text(f)})"
    if f.lean is None:
        return f"{measured}: no clear lean"
    return f"{measured}: the {name} flips lean toward the {f.lean} slot"


def graded_sentences(g: GradedSwap) -> list[str]:
    """What the graded swap analysis supports, one sentence each."""
    out = [strength_sentence(g)]
    out += [graded_flip_sentence(name, f) for name, f in (("strong", g.flip_direction_strong),
                                                           ("weak", g.flip_direction_weak),
                                                           ("mixed", g.flip_direction_mixed))]
    if g.ungraded:
        out.append(f"{g.ungraded:,} complete pair(s) had a verdict naming a slot without a strength: left out of "
                   "the graded figures")
    return out


def flip_sentence(analysis: JudgeAnalysis) -> str:
    return flip_direction_sentence(analysis.flip_direction)


def decided_cells(ident: dict[str, Any]) -> tuple[str, str]:
    """The identical-answer probe's decided rate and its interval; under forced choice it is 100% by
    construction, said so, with no interval."""
    if ident.get("decided_by_construction"):
        return f"{pct(ident['decided_rate'])} by construction (the judge never answered tie)", ""
    return pct(ident["decided_rate"]), interval(ident["decided_low"], ident["decided_high"])


def segment_gate_word(analysis: JudgeAnalysis) -> str:
    """A segment's gate cell: passed/failed, flagged when the segment is too small (or the gate unsure)."""
    from swapjudge.probes.segments import MIN_SEGMENT_PAIRS, too_small  # here: segments loads polars

    word = "passed" if analysis.gate.passed else "failed"
    if too_small(analysis):
        return f"{word}, too small (< {MIN_SEGMENT_PAIRS} pairs) to trust"
    return word + (", not sure (interval contains the threshold)" if analysis.gate.uncertain else "")


def data_sentence(analyses: Sequence[JudgeAnalysis]) -> str:
    """A report's subtitle: what the data is, from the data (per judge when the judges differ)."""
    said = [design_sentence(a) for a in analyses]
    if not said:
        return "no pairs"
    if len(set(said)) == 1:
        return said[0]
    return "; ".join(f"{judge_name(a)}: {text}" for a, text in zip(analyses, said, strict=True))
