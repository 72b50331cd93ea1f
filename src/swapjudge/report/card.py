"""The judge card as people read it: the terminal, Markdown and one self-contained HTML file (the same strict
Content-Security-Policy and escaping as the HTML report: no script at all here). Every renderer reads the card's
JSON document (`JudgeCard.to_dict()`, or a saved card), so a saved card and a live one print the same; the tables are
built once (`card_tables`) and laid out three ways. Only formatting: every figure comes from the card."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from swapjudge.report.probe_tables import Table, fold, table, to_rich
from swapjudge.report.wording import e, interval, p_number, pct, plain, prose

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

CSS = """
:root { --fg: #1d1d1f; --muted: #5f6368; --line: #d9d9de; --ok: #1e7b34; --bad: #b3261e; --bg2: #f6f6f8; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; color: var(--fg);
       margin: 0 auto; max-width: 1180px; padding: 1.2rem 1rem 2.5rem; }
h1 { font-size: 1.5rem; margin: 0 0 .2rem; } h2 { font-size: 1.15rem; margin: 1.6rem 0 .5rem;
  border-bottom: 2px solid var(--line); padding-bottom: .15rem; }
.sub, .note { color: var(--muted); font-size: .88rem; } .note { margin: .3rem 0; }
.headline { font-size: 1.05rem; font-weight: 600; padding: .7rem .9rem; border-left: 6px solid var(--ok);
            background: var(--bg2); margin: .8rem 0; } .headline.failed { border-left-color: var(--bad); }
table { border-collapse: collapse; margin: .4rem 0 .6rem; width: 100%; font-size: .86rem; }
th, td { border-bottom: 1px solid var(--line); padding: .28rem .45rem; text-align: right; vertical-align: top; }
th:first-child, td:first-child { text-align: left; } th { color: var(--muted); font-weight: 600; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; font-size: .86rem; }
dt { color: var(--muted); } dd { margin: 0; word-break: break-all; }
"""


def _ci(obj: Mapping[str, Any] | None, value: str = "rate", low: str = "low", high: str = "high") -> str:
    if not obj or obj.get(value) is None:
        return "n/a"
    return f"{pct(obj[value])} ({interval(obj.get(low), obj.get(high))})"


def consistency_cell(s: Mapping[str, Any]) -> str:
    c = s.get("consistency") or {}
    if c.get("rate") is None:
        return "n/a"
    return f"{pct(c['rate'])} ({interval(c.get('low'), c.get('high'))}) {c.get('consistent')}/{c.get('pairs')}"


def gate_cell(s: Mapping[str, Any]) -> str:
    g = s.get("gate") or {}
    if "passed" not in g:
        return "n/a"
    word = "passed" if g["passed"] else "FAILED"
    return word + (" (unsure)" if g.get("uncertain") else "")


def flip_cell(s: Mapping[str, Any]) -> str:
    f = s.get("flip_direction")
    if not f or f.get("first_share") is None:
        return "n/a"
    lean = f" → leans {f['lean']}" if f.get("lean") else ""
    return (f"{f['first']}/{f['first'] + f['second']} to slot 1 ({interval(f.get('low'), f.get('high'))}), "
            f"p {p_number(f.get('p_value'))}{lean}")


def accuracy_cells(s: Mapping[str, Any]) -> tuple[str, str, str]:
    a = s.get("accuracy")
    if not a:
        return "n/a (no labels)", "n/a", "n/a"
    intervals = a.get("intervals") or {}

    def one(name: str) -> str:
        value = a.get(name)
        if value is None:
            return "n/a"
        i = intervals.get(name) or {}
        return f"{pct(value)} ({interval(i.get('low'), i.get('high'))})"

    return one("both"), one("better_first"), one("better_second")


def kappa_cell(s: Mapping[str, Any]) -> str:
    k = (((s.get("agreement") or {}).get("kappa") or {}).get("labels") or {}).get("order_cancelled")
    if not k or k.get("value") is None:
        return "n/a"
    low, high = k.get("low"), k.get("high")
    span = "n/a" if low is None or high is None else f"{low:.2f}–{high:.2f}"
    return f"{k['value']:.2f} ({span})"


def identical_cell(s: Mapping[str, Any]) -> str:
    i = s.get("identical")
    if not i:
        return "n/a"
    calls = i["first"] + i["second"] + i["tie"]
    unparsed = f", {i['unparsed']} unparsed" if i["unparsed"] else ""
    return f"{i['first']}/{i['second']}/{i['tie']} of {calls}{unparsed}"


def length_cell(s: Mapping[str, Any]) -> str:
    probe = s.get("length")
    if not probe:
        return "n/a" if s.get("length_note") is None else "not shown"
    p = probe["prefer_longer"]
    if p.get("rate") is None:
        return "n/a"
    share = f"{pct(p['rate'])} ({interval(p.get('low'), p.get('high'))})"
    return f"longer won {share} of {p.get('n')}, p {p_number(p.get('p_value'))}"


SUBSET_COLUMNS = ("subset", "pairs", "swap-consistency (95%) k/n", "gate", "flip direction",
                  "right in both orders", "better in slot 1", "better in slot 2", "κ vs labels",
                  "identical 1st/2nd/tie", "length")


def subset_row(s: Mapping[str, Any]) -> tuple[str, ...]:
    pairs = s.get("pairs") or {}
    both, first, second = accuracy_cells(s)
    return (str(s["name"]), str(pairs.get("complete") if pairs.get("complete") is not None else "n/a"),
            consistency_cell(s), gate_cell(s), flip_cell(s), both, first, second, kappa_cell(s), identical_cell(s),
            length_cell(s))


def card_headline(card: Mapping[str, Any]) -> str:
    """The whole suite in one sentence: what was measured, the gate's verdict, nothing the intervals do not carry."""
    if card.get("protocol") == "listwise":
        return listwise_headline(card)
    o = card["overall"]
    c = o.get("consistency") or {}
    gate = o.get("gate") or {}
    both, first, second = accuracy_cells(o)
    passed = "passes" if gate.get("passed") else "fails"
    text = (f"{card['judge']} on the {card['suite'].get('pairs')} pairs of suite \"{card['suite'].get('suite')}\": "
            f"swap-consistency {_ci(c)}, which {passed} the {pct(gate.get('min_self_consistency'), 0)} gate")
    if o.get("accuracy"):
        text += f"; right in both orders {both}; with the better answer in slot 1 {first}, in slot 2 {second}"
    return text + "."


def listwise_headline(card: Mapping[str, Any]) -> str:
    """A best-of-N card's whole suite in one sentence: winner consistency against its gate."""
    o = card["overall"]
    lw, gate = o["listwise"], o.get("gate") or {}
    passed = "passes" if gate.get("passed") else "fails"
    return (f"{card['judge']} on the {card['suite'].get('items')} items of suite \"{card['suite'].get('suite')}\" "
            f"(best of {lw['n_slots']}): winner consistency {_ci(lw['consistency'])}, which {passed} the "
            f"{pct(gate.get('min_self_consistency'), 0)} gate.")


def listwise_tables(card: Mapping[str, Any]) -> list[Table]:
    """A best-of-N card's tables: the N-way figures per subset, then the whole suite's strengths."""
    rows = [*(card.get("subsets") or []), card["overall"]]
    n = card["overall"]["listwise"]["n_slots"]
    columns = ["subset", "items", "calls", "no pick", "winner consistency", "gate",
               *[f"slot {k} share" for k in range(1, n + 1)], "slot test", "accuracy (order-controlled)"]
    body = []
    withheld = None
    for s in rows:
        lw, gate = s["listwise"], s.get("gate") or {}
        shares = lw["slot_share_intervals"]
        withheld = withheld or lw.get("slot_audit_withheld")
        test = lw["slot_test"]
        accuracy = (lw.get("accuracy") or {}).get("order_controlled")
        body.append((str(s.get("name")), str(lw["items"]), str(lw["calls"]), str(lw["unparsed"]),
                     _ci(lw["consistency"]), "passed" if gate.get("passed") else "FAILED",
                     *([_ci(m, "value") for m in shares] if shares else ["not measured"] * n),
                     "-" if test.get("p_value") is None else p_number(test["p_value"]),
                     _ci(accuracy, "value") if accuracy else "-"))
    notes = ["Winner consistency: the items whose calls all picked the same system (Wilson over items). Slot "
             f"shares are clustered by item ({1 / n:.1%} each when no slot is preferred); the slot test is "
             "Hotelling's T-squared over items."]
    if withheld:
        notes.append(withheld)
    out = [table(f"Best of {n}, per subset", columns, body, notes)]
    o = card["overall"]["listwise"]
    if o.get("strengths"):
        def signed(e: Mapping[str, Any]) -> str:
            low, high = e.get("low"), e.get("high")
            bounds = "" if low is None or high is None else f" ({low:+.2f} … {high:+.2f})"
            return f"{e['value']:+.2f}{bounds}"

        strengths = [(name, signed(e)) for name, e in sorted(o["strengths"].items(),
                                                            key=lambda kv: -(kv[1].get("value") or 0))]
        out.append(table("Strengths (whole suite, log-worth, slot effects removed)", ("system", "strength"),
                         strengths, ["Centred log-worths with item-bootstrap percentile intervals."]))
    elif o.get("strengths_withheld"):
        out.append(table("Strengths", ("",), [("withheld: " + str(o["strengths_withheld"]),)], []))
    return out


def card_tables(card: Mapping[str, Any]) -> list[Table]:
    """Every table of a card, in reading order."""
    if card.get("protocol") == "listwise":
        return listwise_tables(card)
    subsets = list(card.get("subsets") or [])
    out = [table("Per subset", SUBSET_COLUMNS, [subset_row(s) for s in subsets] + [subset_row(card["overall"])],
                 ["Intervals are 95% Wilson (clustered by item where items repeat); each subset is one analysis, as "
                  "`swapjudge analyze` prints it. Flip direction: flips and half-ties toward slot 1, exact test; a "
                  "lean is named only where it rejects. Better in slot 1/2: right when the better answer sat in that "
                  "slot. κ: order-cancelled verdict against the label. Length: among complete pairs whose answers "
                  "differ by more than 100 characters, the consistent wins that went to the longer answer (a length "
                  "preference and quality go together where the better answer is the longer one)."])]
    notes = [f"{s['name']}: {s['length_note']}" for s in subsets if s.get("length_note")]
    if notes:
        out[0] = table(out[0].title, out[0].columns, out[0].rows, [*out[0].notes, *notes])
    repeat = card.get("repeat")
    if repeat and repeat.get("stability"):
        st = repeat["stability"]
        rows: list[tuple[str, ...]] = [("same verdict when the call is repeated", _ci(st["unanimous"], "value"),
                 f"{st['unanimous']['calls']} of {st['calls_complete']} calls"),
                ("pair outcome unchanged", _ci(st["outcome_stable"]), f"{st['pairs_complete']} pairs")]
        out.append(table(f"Repeat stability ({repeat['pairs']} pairs judged again, same order)",
                         ("measure", "share (95%)", "over"), rows,
                         ["Percentile bootstrap over pairs (a pair's calls move together). "
                          f"{repeat.get('failed_calls', 0)} repeated call(s) failed."]))
    diffs = card.get("differences") or []
    if diffs:
        rows = [(str(d["subset"]), str(d["measure"]), str(d["b"]), f"{pct(d['rate_a'])} vs {pct(d['rate_b'])}",
                 points(d), p_number(d["p_value"]), p_number(d["p_holm"]), "yes" if d["differs"] else "not shown",
                 "paired, shared pairs" if d["paired"] else "independent samples")
                for d in diffs]
        out.append(table("Beside the reference cards (this card minus the reference)",
                         ("subset", "measure", "reference", "this vs reference", DIFFERENCE, "p", "p Holm",
                          "differs", "how"), rows,
                         ["A difference is claimed only where the Holm-adjusted p (over every difference in this "
                          "table) is at most 0.05. Independent samples: the reference's published counts cover the "
                          "whole set and this card a sample of it; the pairs they share make that interval wider than "
                          "a paired one when the judges tend to get the same pairs right."]))
    if card.get("tiers"):
        out.append(tier_table(card["tiers"]))
    own = [r for r in card.get("references") or [] if not r.get("shared_subsets")]
    if own:
        rows = []
        for r in own:
            for s in r.get("subsets") or []:
                both, _, _ = accuracy_cells(s)
                rows.append((str(r["label"]), str(s["name"]), consistency_cell(s), flip_cell(s), both))
        out.append(table("Reference cards on their own pairs (no pair shared with this card: not compared)",
                         ("reference", "subset", "swap-consistency (95%) k/n", "flip direction", "right in both"),
                         rows))
    if card.get("attacks"):
        from swapjudge.report.attack_tables import attack_table

        out.append(attack_table(card["attacks"]))
    protocol = card.get("protocol") or {}
    if protocol:
        out.append(table("Protocol", ("setting", "value"), [(k, _value(v)) for k, v in protocol.items()]))
    out.append(table("Sources", ("subset", "source", "licence", "label means"),
                     [(str(s["name"]), str(s.get("source") or "-"), str(s.get("licence") or "-"),
                       str(s.get("label_meaning") or "-")) for s in subsets]))
    return out


def tier_table(tiers: Sequence[Mapping[str, Any]]) -> Table:
    rows = [(str(t["subset"]), str(t["measure"]), str(n), ", ".join(members))
            for t in tiers for n, members in enumerate(t["tiers"], start=1)]
    return table("Tiers", ("subset", "measure", "tier", "judges"), rows,
                 ["Per subset and measure, best estimate first: a tier is the best card not yet placed and every card "
                  "whose interval overlaps that card's. Judges in one tier are not ranked."])


DIFFERENCE = "difference, points (95%)"


def points(d: Mapping[str, Any]) -> str:
    """A difference of two shares in percentage points, with its interval."""
    if d.get("difference") is None:
        return "n/a"
    span = "" if d.get("low") is None or d.get("high") is None else \
        f" ({100 * d['low']:+.1f} to {100 * d['high']:+.1f})"
    return f"{100 * d['difference']:+.1f} pts{span}"


def _value(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)


def comparison_tables(doc: Mapping[str, Any]) -> list[Table]:
    """`card --compare`: one table per subset with every card's figures, then the differences and the tiers."""
    cards = list(doc.get("cards") or [])
    names: dict[str, None] = {}
    for c in cards:
        for s in c.get("subsets") or []:
            names.setdefault(str(s["name"]), None)
    out = []
    for name in names:
        rows = []
        for c in cards:
            s = next((s for s in c.get("subsets") or [] if str(s["name"]) == name), None)
            if s is not None:
                both, first, second = accuracy_cells(s)
                label = str(c.get("judge")) + (f" ({c['source']})" if c.get("source") else "")
                rows.append((label, consistency_cell(s), flip_cell(s), both, first, second))
        out.append(table(f"Subset {name}", ("card", "swap-consistency (95%) k/n", "flip direction",
                                            "right in both orders", "better in slot 1", "better in slot 2"), rows))
    diffs = doc.get("differences") or []
    if diffs:
        diff_rows = [(str(d["subset"]), str(d["measure"]), str(d["a"]), str(d["b"]), points(d), p_number(d["p_value"]),
                 p_number(d["p_holm"]), "yes" if d["differs"] else "not shown",
                 "paired, shared pairs" if d["paired"] else "independent samples") for d in diffs]
        out.append(table("Differences (a minus b)", ("subset", "measure", "a", "b", DIFFERENCE, "p", "p Holm",
                                                     "differs", "how"), diff_rows,
                         ["Holm over every difference in this table; a difference is claimed only where the adjusted "
                          "p is at most 0.05. Cards of different pair sets are not differenced."]))
    if doc.get("tiers"):
        out.append(tier_table(doc["tiers"]))
    return out


def _folded(tables: Sequence[Table], width: int | None) -> list[Table]:
    return list(tables) if width is None else [part for t in tables for part in fold(t, width)]


def render_text(card: Mapping[str, Any], width: int | None = None) -> RenderableType:
    """The terminal card; tables wider than `width` fold into blocks of columns."""
    parts: list[RenderableType] = [Text(card_headline(card), style="bold"), Text("")]
    tables = [table(t.title, t.columns, t.rows, [plain(n) for n in t.notes]) for t in card_tables(card)]
    parts.append(to_rich(_folded(tables, width)))
    for note in card.get("notes") or []:
        parts.append(Text(plain(note), style="italic"))
    return Group(*parts)


def render_comparison_text(doc: Mapping[str, Any], width: int | None = None) -> RenderableType:
    return to_rich(_folded(comparison_tables(doc), width))


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def _markdown(tables: Sequence[Table]) -> str:
    lines: list[str] = []
    for t in tables:
        lines += [f"#### {_md_cell(t.title)}", "", "| " + " | ".join(_md_cell(c) for c in t.columns) + " |",
                  "|" + "---|" * len(t.columns)]
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in t.rows]
        lines += [""] + [f"_{_md_cell(n)}_" for n in t.notes] + ([""] if t.notes else [])
    return "\n".join(lines) + "\n"


def render_markdown(card: Mapping[str, Any]) -> str:
    head = f"### swapjudge judge card · {_md_cell(str(card['judge']))}\n\n**{_md_cell(card_headline(card))}**\n\n"
    notes = "".join(f"_{_md_cell(n)}_\n\n" for n in card.get("notes") or [])
    return head + _markdown(card_tables(card)) + ("\n" + notes if notes else "")


def render_comparison_markdown(doc: Mapping[str, Any]) -> str:
    return "### swapjudge judge cards side by side\n\n" + _markdown(comparison_tables(doc))


def _html_table(t: Table) -> str:
    head = "".join(f"<th>{e(c)}</th>" for c in t.columns)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in t.rows)
    notes = "".join(f'<p class="note">{prose(n)}</p>' for n in t.notes)
    return f"<h2>{e(t.title)}</h2><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{notes}"


def render_html(card: Mapping[str, Any]) -> str:
    """The card as one HTML document: inline CSS, no script, every text escaped."""
    failed = not (card["overall"].get("gate") or {}).get("passed")
    protocol: Mapping[str, Any] = card["protocol"] if isinstance(card.get("protocol"), dict) else {}
    size = (f"{card['suite'].get('items')} items" if card.get("protocol") == "listwise"
            else f"{card['suite'].get('pairs')} pairs")
    return "".join([
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">',
        f"<title>swapjudge judge card · {e(card['judge'])}</title><style>{CSS}</style></head><body>",
        f"<header><h1>Judge card · {e(card['judge'])}</h1><div class=\"sub\">suite \"{e(card['suite'].get('suite'))}\""
        f" ({e(size)}) · {e(protocol.get('date'))} · swapjudge "
        f"{e(protocol.get('swapjudge_version'))}</div></header>",
        f'<div class="headline{" failed" if failed else ""}">{e(card_headline(card))}</div>',
        "".join(_html_table(t) for t in card_tables(card)),
        "".join(f'<p class="note">{prose(n)}</p>' for n in card.get("notes") or []),
        "</body></html>\n",
    ])


def render_comparison_html(doc: Mapping[str, Any]) -> str:
    return "".join([
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">',
        f"<title>swapjudge judge cards</title><style>{CSS}</style></head><body><h1>Judge cards side by side</h1>",
        "".join(_html_table(t) for t in comparison_tables(doc)), "</body></html>\n"])
