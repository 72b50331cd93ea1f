"""Markdown: a compact, link-free summary fit for a pull-request comment."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from swapjudge.report.rank import limit_text, rank_range, ranking_summary
from swapjudge.report.wording import (
    ARENA_HARD_LABEL,
    ARENA_HARD_NOTE,
    GRADED_LABEL,
    PER_CALL_LABEL,
    RANKING_WITHHELD,
    band_text,
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
    segment_gate_word,
)

if TYPE_CHECKING:  # types only: rendering needs no polars
    from swapjudge.core.analysis import Calculation, JudgeAnalysis
    from swapjudge.probes.length import LengthProbe
    from swapjudge.probes.panel import PanelResult
    from swapjudge.ranking.bradley_terry import Ranking
    from swapjudge.workflows.report import ReportInputs, SegmentRow

# a ranking longer than this folds into <details> so the pull-request comment stays short
FOLD_RANKING_AFTER = 10


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def markdown_analysis(analysis: JudgeAnalysis) -> str:
    o, c, v = analysis.outcomes, analysis.consistency, analysis.verdicts
    lines = [f"### swapjudge · {_escape(judge_name(analysis))}", "", f"**{_escape(headline(analysis))}**", "",
             f"Data: {_escape(design_sentence(analysis))}.", ""]
    lines += ["| measure | value | interval |", "|---|---:|---:|"]
    if judged_once(analysis):
        lines.append(f"| pairs (each judged once) | {o.total:,} | |")
    else:
        lines.append(f"| pairs (complete / total) | {o.complete:,} / {o.total:,} | |")
    if c is not None:
        lines.append(f"| swap-consistency | {pct(c.rate)} | {interval(c.low, c.high)} |")
        lines.append(f"| flip rate | {pct(c.flip_rate)} | {interval(c.flip_rate_low, c.flip_rate_high)} |")
        lines.append(f"| position sensitivity band | {band_text(c.band)} | |")
    else:
        lines.append("| swap-consistency | cannot be measured | |")
    f = analysis.flip_direction
    p = "" if f.p_value is None else f" ({p_text(f)})"
    lines.append(f"| splits toward slot 1 | {f.first:,} of {f.first + f.second:,} | {interval(f.low, f.high)}{p} |")
    lines.append(f"| calls first / second / tie / none | {v.first:,} / {v.second:,} / {v.tie:,} / {v.unparsed:,} | |")
    lines.append(f"| first-slot win rate | {pct(v.first_slot_rate)} | {interval(v.low, v.high)} |")
    g = analysis.graded
    if g is not None:
        sc = g.strength_consistency
        lines.append(f"| strength consistency ({g.pairs:,} graded pairs) | {pct(sc.rate)} | "
                     f"{interval(sc.low, sc.high)} |")
        for name, f in (("strong", g.flip_direction_strong), ("weak", g.flip_direction_weak),
                        ("mixed", g.flip_direction_mixed)):
            p = "" if f.p_value is None else p_text(f)
            lines.append(f"| {name} flips toward slot 1 / slot 2 | {f.first:,} / {f.second:,} | {p} |")
    w = analysis.win_rate
    if w is not None and not analysis.withheld:
        for name, rate in (("half_credit", w.half_credit), ("exclude", w.exclude), ("no_credit", w.no_credit)):
            mark = " (headline)" if name == w.policy.value else ""
            lines.append(f"| {_escape(w.a)} win rate, {name}{mark} | {pct(rate.value)} | "
                         f"{interval(rate.low, rate.high)} |")
        lines.append(f"| separate: {_escape(w.a)} / {_escape(w.b)} / split | {pct(w.separate_a.value)} / "
                     f"{pct(w.separate_b.value)} / {pct(w.separate_split.value)} | |")
        if w.per_call is not None:
            lines.append(f"| {_escape(w.a)} win rate, {PER_CALL_LABEL} | {pct(w.per_call.value)} | "
                         f"{interval(w.per_call.low, w.per_call.high)} |")
        if w.graded is not None:
            lines.append(f"| {_escape(w.a)} {_escape(GRADED_LABEL)}, {w.graded_pairs:,} pairs | "
                         f"{pct(w.graded.value)} | {interval(w.graded.low, w.graded.high)} |")
        if w.arena_hard is not None:
            lines.append(f"| {_escape(w.a)} {_escape(ARENA_HARD_LABEL)}, {w.arena_hard_battles:,} battles | "
                         f"{pct(w.arena_hard.value)} | {interval(w.arena_hard.low, w.arena_hard.high)} |")
    if analysis.accuracy is not None:
        acc = analysis.accuracy.to_dict()
        den = acc["denominators"]
        if acc["pairs"]:
            lines.append(f"| accuracy: better in slot 1 / slot 2 / both | {pct(acc['better_first'])} / "
                         f"{pct(acc['better_second'])} / {pct(acc['both'])} | of {den['better_first']:,} / "
                         f"{den['better_second']:,} / {den['both']:,} labelled pairs |")
        lines.append(f"| accuracy per call | {pct(acc['per_call']['value'])} | of {den['per_call']:,} labelled "
                     "calls |")
    if analysis.debiased is not None:
        d = analysis.debiased
        for label, m in (("order-averaged", d.order_averaged), ("slot prior removed", d.calibrated)):
            if m is None:
                continue
            cons = "consistency 1 by construction" if m.by_construction else f"consistency {pct(m.consistency.rate)}"
            acc_text = f"accuracy {pct(m.accuracy.rate)}" if m.accuracy else "no labels"
            span = interval(m.accuracy.low, m.accuracy.high) if m.accuracy else ""
            lines.append(f"| debiased ({label}, a mitigation): {acc_text}, {cons} | {m.pairs:,} pairs | {span} |")
    if analysis.identical is not None:
        ident = analysis.identical.to_dict()
        value, span = decided_cells(ident)
        lines.append(f"| identical answers: decided rate | {_escape(value)} | {span} |")
    gate = analysis.gate
    lines.append(f"| gate (min self-consistency {pct(gate.min_self_consistency, 0)}) | "
                 f"{'passed' if gate.passed else 'FAILED'}{' (not sure)' if gate.uncertain else ''} | |")
    lines += ["", f"_{_escape(flip_sentence(analysis))}._", f"_{_escape(gate_sentence(gate))}._"]
    if g is not None:
        lines += [f"_{_escape(_capital(text))}._" for text in graded_sentences(g)]
    if w is not None and not analysis.withheld and w.arena_hard is not None:
        lines.append(f"_{_escape(_capital(ARENA_HARD_NOTE))}._")
    if analysis.decision is not None and analysis.win_rate is not None and not analysis.withheld:
        lines.append(f"_Decision help: {_escape(analysis.decision.sentence())}._")
    lines += [f"> {_escape(note)}" for note in analysis.notes]
    return "\n".join(lines) + "\n"


def render_analyses(analyses: Sequence[JudgeAnalysis]) -> str:
    return "\n".join(markdown_analysis(a) for a in analyses)


def markdown_calculation(calc: Calculation) -> str:
    c = calc.consistency
    lines = ["| measure | value | interval |", "|---|---:|---:|",
             f"| swap-consistency | {pct(c.rate)} ({c.consistent} of {c.pairs}) | {interval(c.low, c.high)} |",
             f"| flip rate | {pct(c.flip_rate)} | {interval(c.flip_rate_low, c.flip_rate_high)} |",
             f"| position sensitivity band | {band_text(c.band)} | |"]
    f = calc.flip_direction
    if f is not None:
        p = "" if f.p_value is None else f" ({p_equals(f.p_value)})"
        lines.append(f"| flips toward slot 1 | {f.first:,} of {f.first + f.second:,} ({pct(f.first_share)}) | "
                     f"{interval(f.low, f.high)}{p} |")
    if calc.decision is not None:
        lines += ["", f"_Decision help: {calc.decision.sentence()}._"]
    return "\n".join(lines) + "\n"


def render_segments(field: str, segments: Sequence[SegmentRow]) -> str:
    """Per-segment consistency and win rate as one table."""
    lines = [f"| {_escape(field)} | pairs | swap-consistency | splits toward slot 1 (exact p) | win rate | gate |",
             "|---|---:|---:|---:|---:|---|"]
    for value, a in segments:
        c, w, f = a.consistency, a.win_rate, a.flip_direction
        cons = "n/a" if c is None else f"{pct(c.rate)} ({interval(c.low, c.high)})"
        rate = "withheld" if a.withheld else ("" if w is None else
                                               f"{pct(w.headline.value)} ({interval(w.headline.low, w.headline.high)})")
        lines.append(f"| {_escape(value)} | {a.outcomes.complete:,} | {cons} | {pct(f.first_share)} "
                     f"({p_text(f)}) | {rate} | {segment_gate_word(a)} |")
    return "\n".join(lines) + "\n"


def render_ranking(ranking: Ranking) -> str:
    """The ranking as a compact table (rank, system, score with its interval, rank range), folded when long."""
    level = f"{round(ranking.confidence * 100)}%"
    intervals = ranking.rounds > 0 and ranking.no_interval is None
    head = (f"Ranking of {len(ranking.rows)} systems ({ranking.model.value}, order-cancelled outcomes; "
            + (f"{level} intervals from {ranking.rounds:,} bootstrap rounds over items" if intervals
               else f"no bootstrap interval: {ranking.no_interval}" if ranking.no_interval
               else "no bootstrap, no intervals") + ")")
    lines = ["| # | system | score | interval | rank range |", "|---:|---|---:|---:|---:|"]
    for row in ranking.rows:
        span = (f"{limit_text(row.low, row.low_open, '+.2f')} … {limit_text(row.high, row.high_open, '+.2f')}"
                if intervals else "n/a")
        lines.append(f"| {row.rank} | {_escape(row.system)} | {row.score:+.2f} | {span} | "
                     f"{rank_range(row.rank_low, row.rank_high)} |")
    # the notes that qualify the figures (open sides, few items, convergence) travel with the table
    notes = ranking_summary(ranking)[3:]
    if notes:
        lines += [""] + [f"> {_escape(note)}" for note in notes]
    table = "\n".join(lines)
    if len(ranking.rows) > FOLD_RANKING_AFTER:
        return f"<details><summary>{_escape(head)}</summary>\n\n{table}\n\n</details>\n"
    return f"**{_escape(head)}**\n\n{table}\n"


def render_length(probe: LengthProbe) -> str:
    """The length probe in one line: how often the longer answer won, and the slope."""
    p, s = probe.prefer_longer, probe.slope
    pv = "" if probe.prefer_longer_p_value is None else f", {p_equals(probe.prefer_longer_p_value)}"
    slope = ("no slope" if s.slope is None else
             f"slope {s.slope:+.3f} per {s.per} {probe.unit.value} ({_num_range(s.low, s.high)})")
    if p.n == 0:
        return (f"Length probe ({probe.pairs:,} pairs with both lengths): no consistent win where lengths differ by "
                f"more than {probe.threshold} {probe.unit.value}; {slope}. Swapping cannot remove a length "
                "preference.\n")
    return (f"Length probe ({probe.pairs:,} pairs with both lengths): the longer answer won {pct(p.rate)} of "
            f"{p.n:,} consistent wins where lengths differ by more than {probe.threshold} {probe.unit.value} "
            f"({interval(p.low, p.high)}{pv}); {slope}. Swapping cannot remove a length preference.\n")


def _num_range(low: float | None, high: float | None) -> str:
    return "n/a" if low is None or high is None else f"{low:+.3f} to {high:+.3f}"


def render_panel(result: PanelResult) -> str:
    """The panel: disagreement in one line, and each judge's consistency in a small table."""
    d = result.disagreement
    lines = [f"**Panel of {len(result.judges)} judges** over {result.common_pairs:,} common pairs: their "
             f"order-cancelled verdicts differ on {pct(d.rate)} ({interval(d.low, d.high)}).", "",
             "| judge | pairs | swap-consistency | splits toward slot 1 |", "|---|---:|---:|---:|"]
    for s in result.judges:
        c, f = s.consistency, s.flip_direction
        lines.append(f"| {_escape(s.judge)} | {s.outcomes.complete:,} | {pct(c.rate)} ({interval(c.low, c.high)}) "
                     f"| {pct(f.first_share)} |")
    lines += [f"> {_escape(w.sentence())}" for w in result.self_preference]
    return "\n".join(lines) + "\n"


def render_report(inputs: ReportInputs) -> str:
    """The pull-request summary of a report: each judge's table, its segments, the unsettled pairs, the source."""
    from swapjudge.probes.calibrate import calibration_sentences  # here: it loads numpy

    parts = []
    for analysis in inputs.analyses:
        parts.append(markdown_analysis(analysis))
        segments = inputs.segments_for(analysis)
        if inputs.segment_field and segments:
            parts.append(render_segments(inputs.segment_field, segments))
        length = inputs.length_for(analysis)
        if length is not None:
            parts.append(render_length(length))
        calibration = inputs.calibration_for(analysis)
        if calibration is not None:
            parts.append("**Corrected with people's labels (prediction-powered inference)**\n\n"
                         + "\n".join(f"- {_escape(line)}" for line in calibration_sentences(calibration)) + "\n")
        ranking = inputs.ranking_for(analysis)
        if ranking is not None:
            parts.append(render_ranking(ranking.ranking))
        elif not analysis.gate.passed and len(analysis.systems) > 2:
            parts.append(f"_Ranking of {len(analysis.systems)} systems: {RANKING_WITHHELD}_\n")
    if inputs.panel is not None:
        parts.append(render_panel(inputs.panel))
    parts += [f"> {_escape(sentence)}\n" for sentence in inputs.left_out]
    if inputs.queue_total:
        by = inputs.queue_by_outcome
        parts.append(f"{inputs.queue_total:,} pairs to read (flips toward slot 1 / slot 2: {by.get('flip_first', 0)} / "
                     f"{by.get('flip_second', 0)}; half-ties: {by.get('half_tie_first', 0)} / "
                     f"{by.get('half_tie_second', 0)}): `swapjudge review queue`.\n")
    prov = inputs.source.provenance
    facts = [f"source `{_escape(inputs.source.name)}`"]
    for key in ("config_hash", "sha256"):
        if prov.get(key):
            facts.append(f"{key} `{str(prov[key])[:12]}`")
    facts.append(f"tie policy {inputs.settings.get('tie_policy')}")
    if inputs.policy_mismatch:
        facts.append(f"**{_escape(inputs.policy_mismatch)}**")
    parts.append("<sub>" + " · ".join(facts) + f" · generated {inputs.generated_at}</sub>\n")
    return "\n".join(parts)
