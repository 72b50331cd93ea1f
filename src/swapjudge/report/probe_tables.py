"""Plain tables for the probe, agreement, panel, variant and segment results, rendered to the terminal (rich) or
Markdown from the same rows, so both say the same thing. Only formatting here; every figure comes from a result."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table as RichTable
from rich.text import Text

from swapjudge.probes.agreement import JudgeAgreement, Kappa
from swapjudge.probes.alpaca_lc import COEFFICIENTS, AlpacaLcFit
from swapjudge.probes.length import LengthControlled, LengthProbe
from swapjudge.probes.panel import JudgeSummary, PanelResult
from swapjudge.probes.repeat import RepeatStability
from swapjudge.probes.segments import MIN_SEGMENT_PAIRS, SegmentedAnalysis
from swapjudge.probes.variants import VariantComparison
from swapjudge.report.wording import decided_cells, gate_sentence, interval, p_equals, p_number, pct, segment_gate_word

if TYPE_CHECKING:  # the live probe pulls in the runner and HTTP clients; only its type is needed here
    from swapjudge.core.identical import IdenticalRun


@dataclass(frozen=True)
class Table:
    """A titled table of already formatted cells, with sentences to print under it."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = field(default_factory=tuple)


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], notes: Sequence[str] = ()) -> Table:
    return Table(title, tuple(columns), tuple(tuple(r) for r in rows), tuple(notes))


COLUMN_GAP = 2  # the padding to_rich puts after every cell


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


def fold(t: Table, width: int) -> list[Table]:
    """A table wider than `width` as blocks of columns that each fit, the first (key) column repeated in every
    block; a table that fits is returned as it is. The notes follow the last block."""
    widths = [max([cell_len(col), *(cell_len(row[i]) for row in t.rows)]) + COLUMN_GAP
              for i, col in enumerate(t.columns)]
    if sum(widths) <= width or len(t.columns) < 3:
        return [t]
    groups: list[list[int]] = [[]]
    used = widths[0]
    for i in range(1, len(widths)):
        if groups[-1] and used + widths[i] > width:
            groups.append([])
            used = widths[0]
        groups[-1].append(i)
        used += widths[i]
    return [Table(f"{t.title} (columns {n} of {len(groups)})", (t.columns[0], *(t.columns[i] for i in group)),
                  tuple((row[0], *(row[i] for i in group)) for row in t.rows), t.notes if n == len(groups) else ())
            for n, group in enumerate(groups, start=1)]


def print_tables(console: Console, tables: Sequence[Table]) -> None:
    """At a terminal, wide tables fold into blocks of columns that fit its width. Piped, print at the tables'
    natural width (a CI log has no width to fit; 80 columns would cut every cell to an ellipsis)."""
    if console.is_terminal:
        tables = [block for t in tables for block in fold(t, console.width)]
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
                         f"{f.first}/{f.first + f.second}", "" if f.p_value is None else p_number(f.p_value, 2),
                         "" if f.p_holm is None else p_number(f.p_holm, 2), rate,
                         ("passed" if a.gate.passed else "failed") if label == "(all)" else segment_gate_word(a)))
    systems = {f"{a.win_rate.a} vs {a.win_rate.b} ({a.win_rate.policy.value})" for a in result.overall
               if a.win_rate is not None}
    notes = [f"Win rate: {', '.join(sorted(systems))}." if systems else
             "No win rate: more than two systems (name --a and --b to compare two)."]
    notes.append("Splits → slot 1: flips and half-ties toward the first slot, of all flips and half-ties "
                 "(p: exact binomial test against 1/2; Holm: adjusted for the many segments tested at once, across "
                 f"segments and judges). Segments with fewer than {MIN_SEGMENT_PAIRS} pairs are too small for the "
                 "gate to be trusted either way.")
    return [table(f"Segments by {result.by}",
                  ("segment", "judge", "pairs", "consistency", "interval", "band", "splits → slot 1", "p",
                   "p (Holm)", "win rate", "gate"), rows, notes)]


def _p(value: float | None) -> str:
    return "" if value is None else p_equals(value, 2)


def _holm(value: float | None) -> str:
    return "" if value is None else f" (Holm {p_number(value, 2)})"


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _range(low: float | None, high: float | None, digits: int = 3) -> str:
    return "n/a" if low is None or high is None else f"{low:.{digits}f} to {high:.{digits}f}"


def length_tables(probes: Sequence[LengthProbe]) -> list[Table]:
    out = []
    for r in probes:
        s, pl_, hc = r.slope, r.prefer_longer, r.prefer_longer_half_credit
        rows = [
            ("complete pairs with both lengths known", f"{r.pairs:,}", "", ""),
            ("pairs left out (text not found)", f"{r.missing_texts:,}", "", ""),
            (f"mean |length difference| ({r.unit.value})", _num(r.mean_abs_difference, 1), "", ""),
            (f"logit slope per {s.per} {r.unit.value} (x - y)", _num(s.slope), _range(s.low, s.high),
             _p(s.p_value) + _holm(r.slope_p_holm)),
            (f"odds ratio per {s.per} {r.unit.value}", _num(s.odds_ratio), "", ""),
            (f"longer answer wins (|d| > {r.threshold}, consistent wins)", f"{pct(pl_.rate)} ({pl_.k}/{pl_.n})",
             interval(pl_.low, pl_.high), _p(r.prefer_longer_p_value) + _holm(r.prefer_longer_p_holm)),
            (f"  same, splits worth 1/2 ({r.prefer_longer_splits} splits)", pct(hc[0]), interval(hc[1], hc[2]), ""),
        ]
        c = r.matched_consistency
        rows.append((f"length-matched pairs (|d| <= {r.tolerance})", f"{r.matched_pairs:,}", "", ""))
        rows.append(("  swap-consistency", pct(c.rate) if c else "n/a", interval(c.low, c.high) if c else "n/a", ""))
        w = r.matched_win_rate
        if w is not None and w.withheld:
            rows.append((f"  win rate of {w.a} vs {w.b} ({w.policy.value})", "withheld (gate)", "", ""))
        elif w is not None:
            h = w.headline
            rows.append((f"  win rate of {w.a} vs {w.b} ({w.policy.value})", pct(h.value), interval(h.low, h.high),
                         ""))
        lc = r.length_controlled
        label = f"length-controlled win rate of {lc.a} vs {lc.b}{_alpaca_label(lc)}" if lc is not None else ""
        if lc is not None and lc.withheld:
            rows.append((label, "withheld (gate)", "", ""))
        elif lc is not None:
            rows.append((label, pct(lc.value), interval(lc.low, lc.high), f"raw {pct(lc.raw)}"))
            if lc.alpaca is not None and lc.alpaca.cv is not None:
                rows.append(("  same model, AlpacaEval's L1 cross-validated fit", pct(lc.alpaca.cv.value), "",
                             f"C {lc.alpaca.cv.c:.3g}" if lc.alpaca.cv.c is not None else ""))
        notes = [f"Splits {'count 1/2' if r.splits.value == 'half' else 'are left out'} in the slope; interval "
                 "from the robust (sandwich) covariance.", r.note]
        if lc is not None and lc.alpaca is not None and not lc.withheld:
            notes.append(_alpaca_note(lc.alpaca))
        if s.reason:
            notes.insert(0, "Slope: " + s.reason + ".")
        if r.gate is not None and (w is not None or lc is not None):
            notes.append(gate_sentence(r.gate) + ".")
        out.append(table(f"Length probe · judge {r.judge or '-'}", ("measure", "value", "interval", "test"), rows,
                         notes))
    return out


def _alpaca_label(lc: LengthControlled) -> str:
    """What the length-controlled fit holds beyond the length term (AlpacaEval's model)."""
    if lc.alpaca is None:
        return ""
    parts = (["difficulty term"] if lc.alpaca.difficulty_term else []) + (
        [f"regularised to the baseline, lambda {lc.alpaca.regularized_lambda:g}"]
        if lc.alpaca.regularized_lambda is not None else [])
    return f" ({', '.join(parts)})"


def _alpaca_note(fit: AlpacaLcFit) -> str:
    if fit.reason:
        return f"Length-controlled: {fit.reason}."
    coefs = ", ".join(f"{name.replace('_', ' ')} {_num(c)}" for name, c in zip(COEFFICIENTS, fit.coefficients,
                                                                             strict=True))
    return (f"Length-controlled (AlpacaEval's model, {fit.rows:,} rows of a against b, {fit.gamed_rows:,} gamed "
            f"baseline rows): coefficients {coefs} (length per tanh of the standardised length difference of a "
            f"minus b). The interval treats the {fit.instructions:,} instructions as independent; an "
            "instruction's rows are one cluster.")


def repeat_tables(results: Sequence[RepeatStability]) -> list[Table]:
    rows = []
    for r in results:
        u, a, k = r.unanimous, r.pairwise_agreement, r.fleiss_kappa
        cons = " / ".join(pct(x.consistency.rate) for x in r.per_round)
        rows.append((r.judge or "-", ",".join(str(x) for x in r.rounds), f"{r.calls_complete:,}/{r.calls:,}",
                     f"{pct(u.value)} ({interval(u.low, u.high)})", f"{pct(a.value)} ({interval(a.low, a.high)})",
                     f"{_num(k.value)} ({_range(k.low, k.high)})", cons,
                     f"{pct(r.outcome_stable.rate)} ({r.outcome_stable.k}/{r.outcome_stable.n})"))
    notes = ["Repeats compare the same call (same pair, same order) across rounds: sampling noise, not position. "
             "Swap-consistency per round is shown beside it; when repeats agree far more than the two orders do, "
             "the flips follow the order, not chance.",
             "Intervals: percentile bootstrap over pairs (both calls of a pair resampled together). Kappa is low "
             "when one verdict dominates even if raw agreement is high."]
    return [table("Repeat stability (same order, across rounds)",
                  ("judge", "rounds", "calls complete", "unanimous", "pairwise agreement", "Fleiss kappa",
                   "swap-consistency per round", "pair outcome same in all rounds"), rows, notes)]


def _share(acc: dict[str, Any] | None, key: str, *, with_interval: bool = False) -> str:
    """An accuracy with the count it is a share of (and its interval when asked)."""
    if acc is None:
        return "n/a"
    value = acc["per_call"]["value"] if key == "per_call" else acc[key]
    out = f"{pct(value)} of {acc['denominators'][key]:,}"
    if with_interval and key in acc["intervals"]:
        out += f" ({interval(acc['intervals'][key]['low'], acc['intervals'][key]['high'])})"
    return out


def agreement_tables(results: Sequence[JudgeAgreement]) -> list[Table]:
    rows = []
    for r in results:
        c, acc = r.consistency, r.accuracy.to_dict() if r.accuracy else None

        def k(value: Kappa | None) -> str:
            return "n/a" if value is None else f"{_num(value.value)} ({_range(value.low, value.high, 2)})"

        rows.append((r.judge or "-", f"{pct(c.rate)} ({interval(c.low, c.high)})", k(r.kappa_orders),
                     f"{r.labelled_pairs:,}", _share(acc, "better_first"), _share(acc, "better_second"),
                     _share(acc, "both", with_interval=True), _share(acc, "consistent"),
                     _share(acc, "per_call", with_interval=True),
                     k(r.kappa_labels_cancelled), k(r.kappa_labels_x_first), k(r.kappa_labels_y_first),
                     k(r.kappa_labels_per_call)))
    notes = ["Accuracy (each with the count it is a share of): better answer in slot 1 / in slot 2 (pairs whose "
             "label names an answer) / right in both orders / among consistent pairs (a consistent tie is right "
             "on a tie-labelled pair) / per call (every labelled call with a verdict, tie for tie).",
             "Kappa uses positional categories (first / second / tie) in each pair's own frame: against labels for "
             "the order-cancelled verdict (split = tie), each order's calls alone and every call; between orders "
             "with the second call mirrored. Kappa intervals resample items (pairs of one item together).",
             "High swap-consistency with low agreement is a precise instrument pointed at the wrong thing."]
    if not any(r.labels_present for r in results):
        notes.insert(0, "No labels: pass --labels FILE (item, label) or give records a label field.")
    elif not any(r.labelled_pairs for r in results):
        notes.insert(0, "Labels are there, but no labelled pair has verdicts in both orders: accuracy and kappa "
                        "are per call only.")
    return [table("Agreement with labels, next to swap-consistency",
                  ("judge", "swap-consistency", "kappa between orders", "labelled pairs", "acc. better 1st",
                   "acc. better 2nd", "acc. both orders", "acc. consistent", "acc. per call", "kappa vs labels",
                   "kappa x-first", "kappa y-first", "kappa per call"), rows, notes)]


def _summary_row(s: JudgeSummary) -> tuple[str, ...]:
    c, f = s.consistency, s.flip_direction
    acc = s.accuracy.to_dict() if s.accuracy else None
    return (s.judge, f"{s.outcomes.complete:,}", pct(c.rate), interval(c.low, c.high), c.band or "n/a",
            f"{f.first}/{f.first + f.second} ({pct(f.first_share)})",
            _p(f.p_value) + _holm(f.p_holm),
            _share(acc, "both"), _share(acc, "better_first"), _share(acc, "better_second"))


SUMMARY_COLUMNS = ("judge", "pairs", "consistency", "interval", "band", "splits → slot 1", "flip test",
                   "accuracy (both)", "acc. better 1st", "acc. better 2nd")


def panel_tables(result: PanelResult) -> list[Table]:
    d = result.disagreement
    maj = result.majority
    rows = [("common pairs (complete for every judge)", f"{result.common_pairs:,}", ""),
            ("panel disagreement rate", f"{pct(d.rate)} ({d.k:,}/{d.n:,})", interval(d.low, d.high)),
            ("majority: a winner / split / none", f"{maj['winner']:,} / {maj['split']:,} / {maj['(no majority)']:,}",
             "")]
    if result.majority_accuracy is not None:
        m = result.majority_accuracy
        rows.append(("majority verdict = label", f"{pct(m.rate)} ({m.k}/{m.n})", interval(m.low, m.high)))
    judges = [s.judge for s in result.judges]
    pair_rows = [(a, *[("—" if a == b else pct(result.pairwise_agreement[a][b])) for b in judges]) for a in judges]
    notes = [w.sentence() for w in result.self_preference]
    return [table("Judges side by side", SUMMARY_COLUMNS, [_summary_row(s) for s in result.judges]),
            table("Panel", ("measure", "value", "interval"), rows),
            table("Pairwise agreement of order-cancelled verdicts", ("judge", *judges), pair_rows,
                  ["Self-preference: " + n for n in notes])]


def variants_tables(result: VariantComparison) -> list[Table]:
    t = result.test
    rows = [("common pairs (complete under both)", f"{t.pairs:,}"),
            ("consistent under both / neither", f"{t.both:,} / {t.neither:,}"),
            (f"consistent under {result.a.judge} only", f"{t.only_a:,}"),
            (f"consistent under {result.b.judge} only", f"{t.only_b:,}"),
            ("consistency difference (a - b)", pct(t.difference)),
            ("McNemar exact p", p_number(t.p_value))]
    return [table(f"Prompt variants by {result.field}", SUMMARY_COLUMNS,
                  [_summary_row(result.a), _summary_row(result.b)]),
            table("Paired test on per-pair consistency", ("measure", "value"), rows,
                  ["McNemar: exact binomial test of the discordant pairs (consistent under one variant only) "
                   "against 1/2."])]


def identical_tables(result: IdenticalRun) -> list[Table]:
    if result.probe is None:
        return [table(f"Identical-answer probe · judge {result.judge}", ("measure", "value", "interval"), [],
                      ["No answers to probe."])]
    d = result.probe.to_dict()
    rows = [("calls: first / second / tie / none", f"{d['first']} / {d['second']} / {d['tie']} / {d['unparsed']}",
             "", ""),
            ("decided rate (named a winner)", *decided_cells(d), ""),
            ("first-slot share of decided", pct(d["first_share"]),
             interval(d["first_share_low"], d["first_share_high"]), _p(d["first_share_p_value"]))]
    notes = ["The same text sat in both slots: any named winner is the judge choosing where there is nothing to "
             "choose, and its slot shows the lean."]
    if result.failed:
        notes.append(f"{result.failed} call(s) failed after retries (no verdict).")
    return [table(f"Identical-answer probe · judge {result.judge} ({result.planned} calls)",
                  ("measure", "value", "interval", "test"), rows, notes)]
