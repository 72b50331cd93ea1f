"""The HTML report: one self-contained file (inline CSS, plots as inline SVG images, one small inline script),
readable on a laptop and in print. Every piece of user text goes through `html.escape`; a Content-Security-Policy
lets only this file's own script run, so even a missed escape could not execute an answer's `<script>`."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from swapjudge.core.analysis import JudgeAnalysis
from swapjudge.probes.length import LengthProbe
from swapjudge.probes.panel import PanelResult
from swapjudge.report import plots
from swapjudge.report.probe_tables import Table, length_tables, panel_tables
from swapjudge.report.rank import limit_text, rank_range, ranking_summary
from swapjudge.report.wording import (
    ARENA_HARD_LABEL,
    ARENA_HARD_NOTE,
    GRADED_LABEL,
    PER_CALL_LABEL,
    POLICY_WORDS,
    RANKING_WITHHELD,
    band_text,
    consistency_sentence,
    data_sentence,
    decided_cells,
    design_sentence,
    e,
    flip_sentence,
    gate_sentence,
    graded_sentences,
    headline,
    interval,
    judge_name,
    judged_once,
    p_number,
    p_text,
    pct,
    prose,
    segment_gate_word,
)
from swapjudge.version import __version__
from swapjudge.workflows.report import ReportInputs, ReportRanking, SegmentRow

OUTCOME_WORDS = {
    "flip_first": "flip toward slot 1",
    "flip_second": "flip toward slot 2",
    "half_tie_first": "half-tie toward slot 1",
    "half_tie_second": "half-tie toward slot 2",
}

CSS = """
:root { --fg: #1d1d1f; --muted: #5f6368; --line: #d9d9de; --ok: #1e7b34; --bad: #b3261e; --bg2: #f6f6f8;
        --slot1: #E69F00; --slot2: #0072B2; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--fg); margin: 0 auto; max-width: 1120px; padding: 1.5rem 1.25rem 3rem; }
h1 { font-size: 1.6rem; margin: 0 0 .2rem; } h2 { font-size: 1.3rem; margin: 2rem 0 .6rem;
  border-bottom: 2px solid var(--line); padding-bottom: .2rem; } h3 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
.sub, .muted { color: var(--muted); font-size: .9rem; }
.headline { font-size: 1.15rem; font-weight: 600; padding: .8rem 1rem; border-left: 6px solid var(--ok);
  background: #eef7f0; margin: 1rem 0; }
.headline.failed { border-color: var(--bad); background: #fbeeee; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(190px, 1fr)); gap: .6rem; margin: .8rem 0; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: .55rem .7rem; background: #fff; }
.card .k { color: var(--muted); font-size: .8rem; text-transform: uppercase; letter-spacing: .03em; }
.card .v { font-size: 1.35rem; font-weight: 650; font-variant-numeric: tabular-nums; }
.card .i { font-size: .85rem; color: var(--muted); font-variant-numeric: tabular-nums; }
.pass { color: var(--ok); } .fail { color: var(--bad); }
table { border-collapse: collapse; margin: .4rem 0 1rem; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: .3rem .7rem .3rem 0; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; white-space: nowrap; }
figure { margin: .6rem 0 1rem; } figure img { max-width: 100%; height: auto; }
figcaption { color: var(--muted); font-size: .85rem; }
.row { display: flex; flex-wrap: wrap; gap: 1.5rem; align-items: flex-start; }
.note { background: #fff8e1; border-left: 4px solid #f0b400; padding: .4rem .8rem; margin: .5rem 0; }
.controls { display: flex; flex-wrap: wrap; gap: .8rem; align-items: center; background: var(--bg2);
  padding: .6rem .8rem; border-radius: 6px; position: sticky; top: 0; z-index: 1; }
.controls label { font-size: .9rem; }
.pair { border: 1px solid var(--line); border-radius: 6px; margin: .8rem 0; padding: .6rem .8rem;
  break-inside: avoid; }
.pair.hidden { display: none; }
.pair header { font-weight: 600; }
.tag { display: inline-block; font-size: .75rem; padding: 0 .45rem; border-radius: 9px; background: var(--bg2);
  border: 1px solid var(--line); margin-left: .4rem; font-weight: 500; }
.tag.flip_first, .tag.half_tie_first { border-color: var(--slot1); }
.tag.flip_second, .tag.half_tie_second { border-color: var(--slot2); }
.two { display: grid; grid-template-columns: 1fr 1fr; gap: .7rem; margin-top: .4rem; }
.two h4 { margin: .2rem 0; font-size: .85rem; color: var(--muted); font-weight: 600; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--bg2); padding: .5rem .6rem; margin: 0;
  border-radius: 4px; font: 12.5px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  max-height: 22em; overflow: auto; }
.wide { max-width: 100%; overflow-x: auto; }
.wide td:first-child { white-space: nowrap; }
figure.forest img { width: 100%; max-width: 760px; }
.ranking p.lead { margin: .1rem 0; }
dl.prov { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
dl.prov dt { color: var(--muted); } dl.prov dd { margin: 0; overflow-wrap: anywhere; }
@media (max-width: 700px) { .two { grid-template-columns: 1fr; } }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  .controls { display: none; }
  .pair.hidden { display: block; }
  pre { max-height: none; overflow: visible; }
  h2, h3, p.lead { break-after: avoid; } figure, table, .card, .headline, tr { break-inside: avoid; }
  .wide { overflow: visible; } table { font-size: 9.5pt; } .keep { break-inside: avoid; }
  section.judge ~ section.judge, #panel, #pairs { break-before: page; }
  figure.forest img { width: auto; max-width: 100%; max-height: 7.4in; }
}
"""

# Records script errors and blocked content in the DOM (a headless check reads them) and filters the pairs.
SCRIPT = """
(function () {
  var root = document.documentElement, problems = [];
  function note(text) { problems.push(text); root.setAttribute("data-js-errors", problems.join(" | ")); }
  window.addEventListener("error", function (e) { note("error: " + e.message); });
  document.addEventListener("securitypolicyviolation", function (e) {
    note("blocked: " + e.violatedDirective + " " + (e.blockedURI || "inline"));
  });
  function apply() {
    var outcome = document.getElementById("f-outcome").value;
    var judge = document.getElementById("f-judge").value;
    var text = document.getElementById("f-text").value.toLowerCase();
    var shown = 0, cards = document.querySelectorAll("article.pair");
    for (var i = 0; i < cards.length; i++) {
      var c = cards[i];
      var ok = (!outcome || c.getAttribute("data-outcome").indexOf(outcome) === 0) &&
               (!judge || c.getAttribute("data-judge") === judge) &&
               (!text || c.textContent.toLowerCase().indexOf(text) !== -1);
      c.classList.toggle("hidden", !ok);
      if (ok) { shown++; }
    }
    document.getElementById("f-count").textContent = shown + " of " + cards.length + " pairs shown";
  }
  document.addEventListener("DOMContentLoaded", function () {
    if (document.getElementById("f-outcome")) {
      ["f-outcome", "f-judge", "f-text"].forEach(function (id) {
        document.getElementById(id).addEventListener("input", apply);
      });
      apply();
    }
    root.setAttribute("data-script", "ran");
  });
})();
"""


def content_security_policy() -> str:
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    return (f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; "
            "base-uri 'none'; form-action 'none'")


def figure(name: str, value: float | None, text: str) -> str:
    """A number the reader sees, tagged with the JSON name and exact value it shows (for checks and scripts)."""
    data = "" if value is None else f' data-value="{value!r}"'
    return f'<span class="num" data-figure="{e(name)}"{data}>{e(text)}</span>'


def svg_image(svg: str, alt: str) -> str:
    """An SVG plot as an <img> data URI: self-contained, and never able to run script or clash on ids."""
    data = base64.b64encode(svg.encode()).decode()
    return f'<img src="data:image/svg+xml;base64,{data}" alt="{e(alt)}">'


def _card(key: str, body: str, sub: str = "", css: str = "") -> str:
    return (f'<div class="card"><div class="k">{e(key)}</div><div class="v {css}">{body}</div>'
            f'<div class="i">{sub}</div></div>')


def html_table(header: Sequence[str], rows: Iterable[Sequence[str]], numeric: set[int] | None = None) -> str:
    """A table of pre-escaped cells; `numeric` columns are right-aligned."""
    numeric = numeric or set()
    head = "".join(f'<th class="n">{h}</th>' if i in numeric else f"<th>{h}</th>" for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _headline_cards(a: JudgeAnalysis) -> str:
    cards = []
    w = a.win_rate
    if w is not None and not a.withheld:
        h = w.headline
        cards.append(_card(f"win rate of {w.a}", figure("win_rate.value", h.value, pct(h.value)),
                           figure("win_rate.interval", None, interval(h.low, h.high))
                           + f" · {e(w.policy.value)}"))
    elif a.withheld:
        cards.append(_card("win rate", '<span class="fail">withheld</span>', "below the gate"))
    c = a.consistency
    if c is not None:
        cards.append(_card("swap-consistency", figure("consistency.rate", c.rate, pct(c.rate)),
                           figure("consistency.interval", None, interval(c.low, c.high))
                           + " · band " + figure("consistency.band", None, band_text(c.band))))
        cards.append(_card("flip rate", figure("flip_rate", c.flip_rate, pct(c.flip_rate)),
                           e(interval(c.flip_rate_low, c.flip_rate_high))))
    else:
        cards.append(_card("swap-consistency", "n/a", "one order per pair"))
    f = a.flip_direction
    p = p_number(f.p_value)
    holm = "" if f.p_holm is None else " · Holm " + figure("flip_direction.p_holm", f.p_holm, p_number(f.p_holm))
    cards.append(_card("splits toward slot 1", figure("flip_direction.first_share", f.first_share,
                                                        pct(f.first_share)),
                       figure("flip_direction.interval", None, interval(f.low, f.high))
                       + " · p = " + figure("flip_direction.p_value", f.p_value, p) + holm))
    g = a.gate
    verdict = "passed" if g.passed else "failed"
    unsure = (" · " + figure("gate.uncertain", None, "not sure: the interval contains the threshold")
              if g.uncertain else "")
    cards.append(_card(f"gate ≥ {pct(g.min_self_consistency, 0)}",
                       figure("gate.passed", None, verdict), "self-consistency" + unsure,
                       "pass" if g.passed else "fail"))
    o = a.outcomes
    if judged_once(a):  # one order by design: nothing is missing, so nothing is "incomplete"
        cards.append(_card("pairs", figure("pairs.total", o.total, f"{o.total:,}"), "each judged once"))
    else:
        cards.append(_card("pairs", figure("pairs.complete", o.complete, f"{o.complete:,}"),
                           f"complete of {o.total:,}" + (f" · {o.incomplete:,} incomplete" if o.incomplete else "")))
    return '<div class="cards">' + "".join(cards) + "</div>"


def _swap_section(a: JudgeAnalysis) -> str:
    o, v = a.outcomes, a.verdicts
    rows = [
        ("consistent pairs", e(f"{o.consistent:,}"), e(f"of which {o.consistent_ties:,} tie/tie")),
        ("flips toward slot 1 / slot 2", e(f"{o.flips_first:,} / {o.flips_second:,}"),
         "both calls named one slot"),
        ("half-ties toward slot 1 / slot 2", e(f"{o.half_ties_first:,} / {o.half_ties_second:,}"),
         "one call tie, the other a winner"),
        ("incomplete pairs", e(f"{o.incomplete:,}"), "a verdict missing: shown, left out of every rate"),
        ("calls first / second / tie / none", e(f"{v.first:,} / {v.second:,} / {v.tie:,} / {v.unparsed:,}"),
         "positional verdicts over calls"),
        ("first-slot win rate (calls)", figure("verdicts.first_slot_rate", v.first_slot_rate,
                                               pct(v.first_slot_rate)), e(interval(v.low, v.high))),
    ]
    if judged_once(a):  # pairs judged once by design: no swap outcome to count, nothing incomplete
        rows = [("pairs judged once", e(f"{o.total:,}"), "one order by design: no swap to measure"), *rows[4:]]
    out = ["<h3>What the swap shows</h3>", f"<p>{e(_capital(flip_sentence(a)))}.</p>",
           html_table(["measure", "value", ""], [(e(r[0]), r[1], r[2]) for r in rows], {1})]
    out.append(f"<figure>{svg_image(plots.intervals_svg(a), 'headline proportions with intervals')}"
               "<figcaption>Estimates with their intervals. Consistency sits on its bands (red: high position "
               "sensitivity, yellow: moderate, green: low) with the gate in red; the flip share and first-slot rate "
               "sit against 50% (no position preference).</figcaption></figure>")
    figures = []
    if judged_once(a):
        figures.append('<p class="muted">No cross-table: each pair was judged in one order only.</p>')
    elif a.cross_table is not None:
        ct = a.cross_table
        figures.append(f"<figure>{svg_image(plots.cross_table_svg(ct), 'cross-table heat map')}<figcaption>Pairs "
                       f"by the verdict with {e(ct.a)} in slot 1 (rows) and with {e(ct.b)} in slot 1 (columns). "
                       "Consistent wins sit off the diagonal; first/first and second/second are flips."
                       "</figcaption></figure>")
    else:
        figures.append('<p class="muted">The cross-table needs two systems: name them with --a and --b.</p>')
    figures.append(f"<figure>{svg_image(plots.split_svg(v), 'first, second, tie split of calls')}"
                   "<figcaption>Verdicts over all calls by slot: first / second / tie / none.</figcaption></figure>")
    out.append('<div class="row">' + "".join(figures) + "</div>")
    return "".join(out)


def _win_rate_section(a: JudgeAnalysis) -> str:
    w = a.win_rate
    if a.pair is None:
        return ""
    if judged_once(a):
        return ("<h3>Win rate</h3><p>None: each pair was judged in one order only, so any win rate would carry "
                "the judge's position preference.</p>")
    if w is None or a.withheld:
        why = prose(a.gate.reason) if a.withheld else "no complete pair"
        return f'<h3>Win rate</h3><p class="fail">Withheld: {why}.</p>'
    rows = []
    for name, rate in (("half_credit", w.half_credit), ("exclude", w.exclude), ("no_credit", w.no_credit),
                       (f"separate: {w.a}", w.separate_a), (f"separate: {w.b}", w.separate_b),
                       ("separate: split", w.separate_split)):
        mark = " ◀ headline" if name.split(":")[0] == w.policy.value else ""
        rows.append((e(name) + mark, e(pct(rate.value)), e(interval(rate.low, rate.high))))
    if w.per_call is not None:
        rows.append((e(PER_CALL_LABEL), e(pct(w.per_call.value)), e(interval(w.per_call.low, w.per_call.high))))
    if w.graded is not None:
        rows.append((e(f"{GRADED_LABEL}, {w.graded_pairs:,} pairs"),
                     figure("win_rate.graded.value", w.graded.value, pct(w.graded.value)),
                     e(interval(w.graded.low, w.graded.high))))
    if w.arena_hard is not None:
        rows.append((e(f"{ARENA_HARD_LABEL}, {w.arena_hard_battles:,} battles"),
                     figure("win_rate.arena_hard.value", w.arena_hard.value, pct(w.arena_hard.value)),
                     e(interval(w.arena_hard.low, w.arena_hard.high))))
    out = [f"<h3>Win rate of {e(w.a)} against {e(w.b)}</h3>",
           f"<p>Over {w.pairs:,} complete pairs: {w.a_wins:,} consistent wins of {e(w.a)}, {w.b_wins:,} of "
           f"{e(w.b)}, {w.splits:,} splits. Tie policy <b>{e(w.policy.value)}</b> "
           f"({e(POLICY_WORDS[w.policy])}). Intervals are over pairs, never over calls.</p>",
           html_table(["tie policy", "win rate", "interval"], rows, {1, 2})]
    if w.arena_hard is not None:
        out.append(f'<p class="muted">{e(_capital(ARENA_HARD_NOTE))}.</p>')
    if a.decision is not None:
        out.append(f"<p><b>Decision help:</b> {e(a.decision.sentence())}.</p>")
    return "".join(out)


def _graded_section(a: JudgeAnalysis) -> str:
    """The five-level analysis: strength consistency, flips by strength with their tests, the levels' table."""
    g = a.graded
    if g is None:
        return ""
    sc = g.strength_consistency
    rows = [("strength consistency", figure("graded.strength_consistency.rate", sc.rate, pct(sc.rate)),
             e(interval(sc.low, sc.high))),
            ("same answer, other strength", e(f"{g.direction_only:,}"), "")]
    for name, count, f in (("strong", g.strong_flips, g.flip_direction_strong),
                           ("weak", g.weak_flips, g.flip_direction_weak),
                           ("mixed", g.mixed_flips, g.flip_direction_mixed)):
        p = "" if f.p_value is None else p_text(f)
        rows.append((e(f"{name} flips toward slot 1 / slot 2"),
                     figure(f"graded.{name}_flips", count, f"{f.first:,} / {f.second:,}"), e(p)))
    out = [f"<h3>Graded verdicts ({g.pairs:,} graded pairs)</h3>",
           "<ul>" + "".join(f"<li>{e(_capital(t))}.</li>" for t in graded_sentences(g)) + "</ul>",
           html_table(["measure", "value", ""], [(e(r[0]), r[1], r[2]) for r in rows], {1})]
    ct = g.cross_table
    if ct is not None:
        labels = ct.to_dict()["labels"]
        body = [(e(label), *(e(f"{v:,}") for v in row)) for label, row in zip(labels, ct.counts, strict=True)]
        out.append(f"<p>Levels with {e(ct.a)} in slot 1 (rows) against {e(ct.b)} in slot 1 (columns), A being the "
                   "answer in slot 1: a consistent strong win sits at A&gt;&gt;B / B&gt;&gt;A, a strong flip on the "
                   "diagonal's corners.</p>")
        out.append(html_table(["", *(e(x) for x in labels)], body, {1, 2, 3, 4, 5}))
    return "".join(out)


def _accuracy_section(a: JudgeAnalysis) -> str:
    if a.accuracy is None:
        return ""
    acc = a.accuracy.to_dict()
    den = acc["denominators"]
    rows = [(e(f"{label} (of {den[key]:,} pairs)"), e(pct(acc[key])),
             e(interval(acc["intervals"][key]["low"], acc["intervals"][key]["high"])))
            for key, label in (("better_first", "better answer in slot 1"),
                               ("better_second", "better answer in slot 2"),
                               ("both", "right in both orders (order-controlled)")) if acc["pairs"]]
    if acc["pairs"]:  # no labelled pair in both orders (single-order data): per call only
        rows.append((e(f"among consistent pairs (of {den['consistent']:,})"), e(pct(acc["consistent"])), ""))
    rows.append((e(f"per call (of {den['per_call']:,} labelled calls)"), e(pct(acc["per_call"]["value"])),
                 e(interval(acc["per_call"]["low"], acc["per_call"]["high"]))))
    return (f"<h3>Agreement with labels ({acc['pairs']:,} labelled pairs in both orders, "
            f"{acc['tie_pairs']:,} labelled tie)</h3>"
            "<p>The gap between the first two rows is position bias in correctness terms. A tie label is matched "
            "by a tie; the per-call interval treats items as independent.</p>"
            + html_table(["accuracy", "value", "interval"], rows, {1, 2}))


def _identical_section(a: JudgeAnalysis) -> str:
    if a.identical is None:
        return ""
    i = a.identical.to_dict()
    p = p_number(i["first_share_p_value"])
    rows = [("calls first / second / tie / none", e(f"{i['first']} / {i['second']} / {i['tie']} / {i['unparsed']}"),
             ""),
            ("decided rate (named a winner)", *(e(cell) for cell in decided_cells(i))),
            ("first-slot share of decided", e(pct(i["first_share"])),
             e(interval(i["first_share_low"], i["first_share_high"])) + f" · p = {e(p)}")]
    return ("<h3>Identical-answer probe</h3><p>The same text in both slots: any named winner is the judge choosing "
            "with no difference to see, and the slot it names shows its lean.</p>"
            + html_table(["measure", "value", "interval"], rows, {1, 2}))


def _segments_section(field: str, segments: Sequence[SegmentRow]) -> str:
    if not segments:
        return ""
    with_rates = any(a.pair is not None for _, a in segments)
    rows = []
    for value, a in segments:
        c = a.consistency
        w = a.win_rate
        row = [e(value), f"{a.outcomes.complete:,}",
               e("n/a" if c is None else f"{pct(c.rate)} ({interval(c.low, c.high)})"),
               e("" if c is None else band_text(c.band)),
               e(f"{pct(a.flip_direction.first_share)} ({p_text(a.flip_direction)})")]
        if with_rates:
            row.append(e("withheld" if a.withheld else "" if w is None else
                         f"{pct(w.headline.value)} ({interval(w.headline.low, w.headline.high)})"))
        row.append(f'<span class="{"pass" if a.gate.passed else "fail"}">{e(segment_gate_word(a))}</span>')
        rows.append(row)
    header = [e(field), "pairs", "swap-consistency", "band", "splits → slot 1",
              *(["win rate"] if with_rates else []), "gate"]
    return (f"<h3>By {e(field)}</h3>"
            f"<figure>{svg_image(plots.segments_svg(segments), f'consistency and win rate by {field}')}"
            "<figcaption>Each segment analysed on its own: points are estimates, bars intervals.</figcaption>"
            "</figure>" + html_table(header, rows, {1}))


def _plain_table(t: Table) -> str:
    """A probe table (already formatted cells) with its notes; every column after the first is numeric. Columns
    that are n/a in every row (accuracy without labels) are left out."""
    keep = [i for i in range(len(t.columns)) if i == 0 or not t.rows or any(row[i] != "n/a" for row in t.rows)]
    out = html_table([e(t.columns[i]) for i in keep], [[e(row[i]) for i in keep] for row in t.rows],
                 set(range(1, len(keep))))
    out = f'<div class="wide">{out}</div>'
    return out + "".join(f'<p class="muted">{prose(note)}</p>' for note in t.notes)


def _ranking_section(jr: ReportRanking) -> str:
    r = jr.ranking
    level = f"{round(r.confidence * 100)}% interval"
    lines = ranking_summary(r, outcome=jr.outcome)
    has_interval = r.rounds > 0 and r.no_interval is None
    rows = []
    for row in r.rows:
        rows.append([
            figure("ranking.rank", row.rank, str(row.rank)),
            figure("ranking.system", None, row.system),
            figure("ranking.rank_range", None, rank_range(row.rank_low, row.rank_high)),
            figure("ranking.score", row.score, f"{row.score:+.3f}"),
            (figure("ranking.low", row.low, limit_text(row.low, row.low_open, "+.3f")) + " … "
             + figure("ranking.high", row.high, limit_text(row.high, row.high_open, "+.3f")))
            if has_interval else "n/a",
            e(f"{row.rating:.0f}"),
            e(f"{row.wins:,} / {row.ties:,} / {row.losses:,}"), e(f"{row.pairs:,}")])
    notes = "".join(f'<p class="note">{prose(line)}</p>' for line in lines[3:])
    caption = (f"Points: fitted scores; bars: {level}s from {r.rounds:,} bootstrap rounds over items. The rank "
               f"range holds the middle {round(r.confidence * 100)}% of each system's ranks across those rounds: "
               "systems whose rank ranges overlap are not reliably ordered by these data." if has_interval else
               "Points: fitted scores; no bootstrap, so no intervals and no rank ranges.")
    # the heading, the model's description and the plot stay on one printed page
    return (f'<section class="ranking"><div class="keep"><h3>Ranking of {len(r.rows)} systems</h3>'
            + "".join(f'<p class="muted lead">{e(line)}</p>' for line in lines[:3])
            + f'<figure class="forest">{svg_image(plots.ranking_svg(r), "forest plot of the ranking")}'
            f"<figcaption>{e(caption)}</figcaption></figure></div>"
            + '<div class="wide">' + html_table(["#", "system", "rank range", "score", e(level), "rating",
                                             "W / T / L", "pairs"], rows, {0, 2, 3, 4, 5, 6, 7}) + "</div>"
            + notes + "</section>")


def _length_section(probe: LengthProbe) -> str:
    p = probe.prefer_longer
    pv = p_number(probe.prefer_longer_p_value)
    s = probe.slope
    slope = ("no slope: " + e(s.reason)) if s.slope is None else (
        "a logistic slope of " + figure("length.slope", s.slope, f"{s.slope:+.3f}")
        + e(f" per {s.per} {probe.unit.value} of length difference (odds ratio {s.odds_ratio:.2f}, "
            + ("n/a" if s.low is None or s.high is None else f"{s.low:+.3f} to {s.high:+.3f}") + ")"))
    if p.n == 0:  # e.g. a judge with almost no consistent wins: nothing to say about length there
        sentence = (f"No consistent win where the lengths differ by more than {probe.threshold} "
                    f"{e(probe.unit.value)}, so how often the longer answer wins is not measured; " + slope + ".")
    else:
        sentence = (f"Of the {p.n:,} consistent wins where the lengths differ by more than {probe.threshold} "
                    f"{e(probe.unit.value)}, the longer answer won "
                    + figure("length.prefer_longer", p.rate, "n/a" if p.rate is None else pct(p.rate))
                    + f" ({p.k:,} of {p.n:,}; {e(interval(p.low, p.high))}; exact binomial p = "
                    + figure("length.prefer_longer_p_value", probe.prefer_longer_p_value, pv) + "); " + slope + ".")
    [t] = length_tables([probe])
    return (f'<section class="length"><h3>Length probe ({probe.pairs:,} pairs with both answer lengths)</h3>'
            f"<p>{sentence}</p>" + _plain_table(t) + "</section>")


def _panel_section(result: PanelResult) -> str:
    d = result.disagreement
    judges = ", ".join(s.judge for s in result.judges)
    head = (f'<section id="panel"><h2>Panel: {len(result.judges)} judges over the same pairs</h2>'
            f"<p>{e(judges)} judged {figure('panel.common_pairs', result.common_pairs, f'{result.common_pairs:,}')}"
            " pairs completely in both orders. On "
            + figure("panel.disagreement", d.rate, pct(d.rate))
            + f" of them ({d.k:,}; {e(interval(d.low, d.high))}) their order-cancelled verdicts (the consistent "
              "winner, else a split) differ.</p>")
    parts = [head]
    for t in panel_tables(result):
        parts.append(f"<h3>{e(t.title)}</h3>" + _plain_table(t))
    return "".join(parts) + "</section>"


def _judge_section(index: int, a: JudgeAnalysis, inputs: ReportInputs) -> str:
    from swapjudge.probes.calibrate import calibration_sentences

    state = "" if a.gate.passed else " failed"
    parts = [f'<section class="judge" id="judge-{index}" data-judge="{e(a.judge or "")}">',
             f"<h2>Judge: {e(judge_name(a))}</h2>",
             f'<div class="headline{state}" data-figure="headline">{e(headline(a))}</div>',
             f'<p class="sub">Data: {e(design_sentence(a))}. {e(gate_sentence(a.gate))}.</p>',
             _headline_cards(a)]
    if a.pair is None and len(a.systems) > 2:
        parts.append(f'<p class="muted">{len(a.systems)} systems were compared; name two with --a and --b for a '
                     "win rate and the cross-table.</p>")
    parts += [_swap_section(a), _graded_section(a), _win_rate_section(a), _accuracy_section(a),
              _identical_section(a)]
    if inputs.segment_field:
        parts.append(_segments_section(inputs.segment_field, inputs.segments_for(a)))
    length = inputs.length_for(a)
    if length is not None:
        parts.append(_length_section(length))
    calibration = inputs.calibration_for(a)
    if calibration is not None:
        items = "".join(f"<li>{e(line)}</li>" for line in calibration_sentences(calibration))
        parts.append("<h3>Corrected with people's labels (prediction-powered inference)</h3>"
                     f'<ul data-figure="calibrate">{items}</ul>')
    ranking = inputs.ranking_for(a)
    if ranking is not None:
        parts.append(_ranking_section(ranking))
    elif not a.gate.passed and len(a.systems) > 2:
        parts.append(f'<h3>Ranking of {len(a.systems)} systems</h3><p class="fail">{prose(RANKING_WITHHELD)}</p>')
    parts += [f'<p class="note">{prose(note)}</p>' for note in a.notes]
    parts.append("</section>")
    return "".join(parts)


def _pair_card(row: Mapping[str, Any]) -> str:
    x, y = row["x"], row["y"]
    outcome = row["outcome"]

    def said(name: str | None) -> str:
        return "tie" if name == "tie" else ("no verdict" if name is None else f"“{name}”")

    head = (f'<header>item {e(row["item"])} · {e(x)} vs {e(y)}<span class="tag {e(outcome)}">'
            f'{e(OUTCOME_WORDS.get(outcome, outcome))}</span>'
            + (f'<span class="tag">round {e(row["round"])}</span>' if row["round"] else "")
            + (f'<span class="tag">judge {e(row["judge"])}</span>' if row["judge"] else "")
            + (f'<span class="tag">label: {e(row["label"])}</span>' if row.get("label") else "") + "</header>")
    verdicts = (f"<p>With {e(x)} in slot 1 the judge said {e(said(row['named_x_first']))}; with {e(y)} in slot 1 "
                f"it said {e(said(row['named_y_first']))}.</p>")
    parts = [head, verdicts]
    if row.get("prompt"):
        parts.append(f"<h4>Task</h4><pre>{e(row['prompt'])}</pre>")
    if row.get("text_x") is not None or row.get("text_y") is not None:
        parts.append(f'<div class="two"><div><h4>answer of {e(x)}</h4><pre>{e(row.get("text_x"))}</pre></div>'
                     f'<div><h4>answer of {e(y)}</h4><pre>{e(row.get("text_y"))}</pre></div></div>')
    if row.get("raw_x_first") is not None or row.get("raw_y_first") is not None:
        parts.append(f'<div class="two"><div><h4>judge reply, {e(x)} in slot 1</h4>'
                     f'<pre>{e(row.get("raw_x_first"))}</pre></div>'
                     f'<div><h4>judge reply, {e(y)} in slot 1</h4><pre>{e(row.get("raw_y_first"))}</pre></div></div>')
    return (f'<article class="pair" data-outcome="{e(outcome)}" data-judge="{e(row["judge"])}">'
            + "".join(parts) + "</article>")


def _pairs_section(inputs: ReportInputs, max_pairs: int | None) -> str:
    total = inputs.queue_total
    rows = inputs.queue.head(max_pairs).to_dicts() if max_pairs is not None else inputs.queue.to_dicts()
    out = ['<section id="pairs"><h2>Pairs the judge could not settle</h2>',
           f"<p>{total:,} pairs flipped (both calls named the same slot) or half-tied (one tie, one winner). "
           "Reading them shows which criterion is doing no work.</p>"]
    if len(rows) < total:
        out.append(f'<p class="note">Showing the first {len(rows):,} of {total:,}; '
                   "<code>swapjudge review queue</code> writes them all.</p>")
    if not rows:
        return "".join([*out, "</section>"])
    if not inputs.source.has_texts:
        out.append('<p class="muted">The records carry no answer texts (columns first_text/second_text); pass '
                   "--pairs PAIRS.jsonl to show them.</p>")
    judges = sorted({r["judge"] for r in rows})
    judge_options = "".join(f'<option value="{e(j)}">{e(j or "(unnamed)")}</option>' for j in judges)
    out.append('<div class="controls">'
               '<label>outcome <select id="f-outcome"><option value="">all</option>'
               '<option value="flip">flips</option><option value="half_tie">half-ties</option>'
               + "".join(f'<option value="{k}">{v}</option>' for k, v in OUTCOME_WORDS.items())
               + "</select></label>"
               f'<label>judge <select id="f-judge"><option value="">all</option>{judge_options}</select></label>'
               '<label>contains <input id="f-text" type="search" placeholder="item, system or text"></label>'
               '<span id="f-count" class="muted"></span></div>')
    out += [_pair_card(r) for r in rows]
    out.append("</section>")
    return "".join(out)


def _provenance_value(value: Any) -> str:
    if isinstance(value, dict | list):
        return f"<pre>{e(json.dumps(value, indent=2, sort_keys=True, default=str))}</pre>"
    if isinstance(value, float):
        return e(f"{value:,.6g}")
    return e(value)


def _provenance_section(inputs: ReportInputs) -> str:
    prov = dict(inputs.source.provenance)
    settings = {k: v for k, v in inputs.settings.items() if v is not None}
    items = [("source", e(inputs.source.name))]
    items += [(e(k), _provenance_value(v)) for k, v in prov.items()]
    items += [("report settings", _provenance_value(settings)), ("generated", e(inputs.generated_at)),
              ("swapjudge", e(__version__))]
    body = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items)
    warn = f'<p class="note">{prose(inputs.policy_mismatch)}</p>' if inputs.policy_mismatch else ""
    return f'<section id="provenance"><h2>Provenance</h2>{warn}<dl class="prov">{body}</dl></section>'


def _left_out_section(inputs: ReportInputs) -> str:
    """What a report read by the streaming engine leaves out, one sentence each (nothing is dropped silently)."""
    if not inputs.left_out:
        return ""
    return ('<section id="left-out"><h2>Left out</h2>'
            + "".join(f'<p class="note">{prose(s)}</p>' for s in inputs.left_out) + "</section>")


def render_html(inputs: ReportInputs, *, max_pairs: int | None = 1000) -> str:
    """The whole report as one HTML document; at most `max_pairs` unsettled pairs are shown in full (None: all)."""
    judges = "".join(_judge_section(i, a, inputs) for i, a in enumerate(inputs.analyses))
    summary = ""
    if len(inputs.analyses) > 1:
        summary = ("<ul>" + "".join(f'<li><a href="#judge-{i}">{e(judge_name(a))}</a>: {e(consistency_sentence(a))}'
                                    "</li>" for i, a in enumerate(inputs.analyses)) + "</ul>")
    return "".join([
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{e(content_security_policy())}">',
        f"<title>swapjudge report · {e(inputs.source.name)}</title>",
        f"<style>{CSS}</style><script>{SCRIPT}</script></head><body>",
        f'<header><h1>swapjudge report</h1><div class="sub">{e(inputs.source.name)} · generated '
        f"{e(inputs.generated_at)} · {e(data_sentence(inputs.analyses))}</div></header>",
        summary, _left_out_section(inputs), judges, "" if inputs.panel is None else _panel_section(inputs.panel),
        _pairs_section(inputs, max_pairs), _provenance_section(inputs),
        "</body></html>\n",
    ])


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
