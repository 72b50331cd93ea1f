"""`swapjudge history` and `swapjudge compare`: runs over time, and what moved between two runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from swapjudge.cli.app import (
    OutputFormat,
    app,
    conclude,
    dump_json,
    stdout,
    user_errors,
    wide_console,
)
from swapjudge.defaults import ADAPTIVE_THRESHOLDS, DEFAULT_STORE
from swapjudge.errors import SwapjudgeError

if TYPE_CHECKING:
    from swapjudge.drift.history import HistoryEntry, RunComparison
    from swapjudge.drift.releases import ReleaseReport, ReleaseStep

StoreOpt = Annotated[Path | None, typer.Option("--store", help=f"The run store (default ./{DEFAULT_STORE}).")]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")]


def _ci(rate: float | None, low: float | None, high: float | None) -> str:
    from swapjudge.report.wording import pct

    if rate is None:
        return "n/a"
    return f"{pct(rate)} [{pct(low)}, {pct(high)}]"


def _row(e: HistoryEntry) -> dict[str, str]:
    from swapjudge.report.wording import p_equals, pct

    s = e.setup
    judge = s.judge + (f" ({s.judge_version})" if s.judge_version else "")
    row = {"run": str(e.run_id), "started (UTC)": e.started_at.replace("T", " ").removesuffix("+00:00"),
           "judge": judge, "rubric": (s.rubric_hash or "?")[:8], "template": (s.template_hash or "?")[:8],
           "pairs set": (s.pair_set_hash or s.pairs_digest)[:8], "orders": s.orders,
           "policy": s.tie_policy or "?", "consistency": "n/a", "flips to 1st": "n/a", "win rate": "n/a",
           "gate": "n/a", "flags": "; ".join(e.flags) or "-"}
    a = e.analysis
    if a is None:
        row["flags"] = "; ".join([*e.flags, e.error or ""]).strip("; ")
        return row
    c = a.consistency
    if c is not None:
        row["consistency"] = _ci(c.rate, c.low, c.high)
    fd = a.flip_direction
    if fd.first_share is not None:
        p = "" if fd.p_value is None else " " + p_equals(fd.p_value, 2).replace("p = ", "p=")
        row["flips to 1st"] = f"{pct(fd.first_share)} of {fd.first + fd.second}{p}"
    if a.win_rate is not None:
        if a.withheld:
            row["win rate"] = "withheld"
        else:
            h = a.win_rate.headline
            row["win rate"] = f"{a.win_rate.a} vs {a.win_rate.b}: {_ci(h.value, h.low, h.high)}"
    row["gate"] = "passed" if a.gate.passed else "FAILED"
    return row


def _markdown_table(rows: list[dict[str, str]]) -> str:
    if not rows:
        return ""
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(r[c].replace("|", "\\|") for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def anchor_check_text(result: dict[str, Any], flagged: bool) -> str:
    """An anchored run's verdict in one phrase: passed, FLAGGED (with the reasons), or nothing to check."""
    check = result.get("check")
    if check is None:
        bad = [f"{k} scored {v['scored']} (stated {v['stated']})" for k, v in result["exemplars"].items()
               if v["scored"] != v["stated"]]
        return ("no pinned scores; exemplars " + ("reproduced" if not bad else "OFF: " + ", ".join(bad)))
    moved = check["moved"]
    shift = f"mean shift {check['mean_shift']:+.2f} levels, {moved['k']} of {moved['n']} items moved"
    if flagged:
        return f"FLAGGED ({shift}): " + "; ".join(check["reasons"])
    return f"passed ({shift}, tolerance {check['tolerance']:g})"


def _anchor_row(r: dict[str, Any]) -> dict[str, str]:
    res = r["result"]
    d = res["distribution"]
    comp = d["compression"]
    return {"anchored run": str(r["id"]), "started (UTC)": r["started_at"].replace("T", " ").removesuffix("+00:00"),
            "judge": r["judge"], "rubric": r["rubric_hash"][:8], "reference set": r["reference_hash"][:8],
            "scored": f"{d['n']} ({res['unparsed']} unparsable)",
            "distribution": ", ".join(f"{k}: {v}" for k, v in d["counts"].items()),
            "mean / median": f"{d['mean']:.2f} / {d['median']:g}",
            "compression": f"{_ci(comp['rate'], comp['low'], comp['high'])} on {'+'.join(map(str, d['top_levels']))}",
            "anchor check": anchor_check_text(res, r["flagged"])}


@app.command("history")
@user_errors
def history_command(store: StoreOpt = None, output: FormatOpt = OutputFormat.text) -> None:
    """List the store's runs over time with what each was measured under (judge, rubric, template, pairs) and
    its swap-consistency, flip direction, win rate and gate verdict. A run that did not measure the swap under
    its own judge, rubric and template is flagged. Anchored scoring runs follow, each with its score
    distribution and whether its anchor check passed or flagged the run."""
    from swapjudge.workflows.history import history

    entries, anchored = history(store)
    if output is OutputFormat.json:
        items = [{"kind": "pairwise", **e.to_dict()} for e in entries]
        items += [{"kind": "anchors", "anchored_run": r["id"], "started_at": r["started_at"], "judge": r["judge"],
                   "judge_model": r["judge_model"], "judge_hash": r["judge_hash"], "rubric_hash": r["rubric_hash"],
                   "reference_hash": r["reference_hash"], "pinned_path": r["pinned_path"],
                   "flagged": r["flagged"], **{k: r["result"][k] for k in ("unparsed", "exemplars", "distribution",
                                                                            "check")}} for r in anchored]
        print(json.dumps(items, indent=2, allow_nan=False))
        return
    rows = [_row(e) for e in entries]
    arows = [_anchor_row(r) for r in anchored]
    if output is OutputFormat.markdown:
        text = "# Run history\n\n" + _markdown_table(rows)
        if arows:
            text += "\n## Anchored scoring runs\n\n" + _markdown_table(arows)
        print(text, end="")
        return
    if not rows and not arows:
        stdout.print("the store holds no runs")
        return
    # One short block per run: a terminal is too narrow for every column side by side.
    blocks = []
    for r in rows:
        lines = [f"run {r['run']}  {r['started (UTC)']}  {r['judge']}",
                 f"  measured under: rubric {r['rubric']}  template {r['template']}  pair set {r['pairs set']}"
                 f"  orders {r['orders']}  tie policy {r['policy']}",
                 f"  swap-consistency {r['consistency']}  flips toward slot 1 {r['flips to 1st']}",
                 f"  win rate {r['win rate']}  gate {r['gate']}"]
        if r["flags"] != "-":
            lines.append(f"  flag: {r['flags']}")
        blocks.append("\n".join(lines))
    for a in arows:
        blocks.append("\n".join([
            f"anchored run {a['anchored run']}  {a['started (UTC)']}  {a['judge']}",
            f"  measured under: rubric {a['rubric']}  reference set {a['reference set']}",
            f"  scored {a['scored']}: {a['distribution']}; mean / median {a['mean / median']}; "
            f"compression {a['compression']}",
            f"  anchor check: {a['anchor check']}"]))
    stdout.print("\n\n".join(blocks), highlight=False, markup=False)


def _fmt(x: dict[str, Any] | None) -> str:
    return "n/a" if not x else _ci(x["rate"], x["low"], x["high"])


def _compare_lines(cmp: RunComparison) -> list[str]:
    from swapjudge.report.wording import p_equals, pct

    d = cmp.to_dict()
    lines = [f"run {cmp.a.run_id} -> run {cmp.b.run_id}", "", "What changed:"]
    if not cmp.changes:
        lines.append("  nothing: same judge, rubric, template, schema, policy and pairs")
    for c in cmp.changes:
        lines.append(f"  {c.what}: {c.before} -> {c.after}")
    if cmp.rubric_diff:
        lines += ["", "Rubric edit:"] + [f"  {line}" for line in cmp.rubric_diff]
    lines += ["", "How the judge moved (each run's figure with its interval):"]
    names = {"consistency": "swap-consistency", "first_slot_rate": "first-slot rate", "tie_rate": "tie rate",
             "accuracy": "accuracy (right in both orders)"}
    for key, label in names.items():
        m: dict[str, Any] = d["behaviour"].get(key) or {}
        before, after = m.get("before"), m.get("after")
        if not before and not after:
            continue
        diff = m.get("difference")
        delta = "" if diff is None else f"  ({diff * 100:+.1f} points)"
        lines.append(f"  {label}: {_fmt(before)} -> {_fmt(after)}{delta}")
    t = cmp.consistency_test
    lines += ["", f"Paired on the {t.pairs} pairs both runs judged completely (McNemar exact):"]
    p = p_equals(t.p_value)
    lines.append(f"  consistent in both {t.both}, only run {cmp.a.run_id} {t.only_a}, only run {cmp.b.run_id} "
                 f"{t.only_b}, neither {t.neither}; {p}")
    if cmp.accuracy_test is not None:
        at = cmp.accuracy_test
        p = p_equals(at.p_value)
        lines.append(f"  right in both orders ({at.pairs} labelled pairs): both {at.both}, only run {cmp.a.run_id} "
                     f"{at.only_a}, only run {cmp.b.run_id} {at.only_b}, neither {at.neither}; {p}")
    if cmp.paired_differences:
        conf = cmp.paired_differences[0].confidence
        lines += ["", f"Paired differences on what both runs judged (run {cmp.b.run_id} minus run {cmp.a.run_id}, "
                      f"{conf:.0%} Newcombe paired interval):"]
        units = {"consistency": "shared pairs", "first_slot_rate": "shared calls", "accuracy": "labelled pairs"}
        for pd in cmp.paired_differences:
            if pd.difference is None:
                lines.append(f"  {names[pd.what]}: no {units[pd.what]} in common")
                continue
            assert pd.low is not None and pd.high is not None
            lines.append(f"  {names[pd.what]}: {pct(pd.rate_a)} -> {pct(pd.rate_b)} on {pd.units} "
                         f"{units[pd.what]}: {pd.difference * 100:+.1f} points "
                         f"[{pd.low * 100:+.1f}, {pd.high * 100:+.1f}]"
                         + (f", over {pd.clusters} items (units of one item move together)"
                            if pd.independent == "items" else ""))
    if cmp.flags:
        lines += ["", "Flags:"] + [f"  {f}" for f in cmp.flags]
    return lines


@app.command("compare")
@user_errors
def compare_command(
    run_a: Annotated[int, typer.Argument(help="The earlier run (see `swapjudge history`).", show_default=False)],
    run_b: Annotated[int, typer.Argument(help="The later run.", show_default=False)],
    store: StoreOpt = None,
    output: FormatOpt = OutputFormat.text,
) -> None:
    """What changed between two runs (judge, rubric, template, pairs) and how the judge's behaviour moved
    (consistency, first-slot rate, tie rate, accuracy on labelled pairs), with intervals and McNemar's exact
    test on the pairs both runs judged."""
    from swapjudge.workflows.history import compare

    cmp = compare(run_a, run_b, store=store)
    if output is OutputFormat.json:
        dump_json(cmp.to_dict())
        return
    lines = _compare_lines(cmp)
    if output is OutputFormat.markdown:
        body = "\n".join(lines[2:])
        print(f"# Run {run_a} vs run {run_b}\n\n```\n{body}\n```\n", end="")
        return
    stdout.print("\n".join(lines), highlight=False, markup=False)


def _wr(step: ReleaseStep) -> str:
    a = step.analysis
    if a.win_rate is None:
        return "n/a"
    if a.withheld:
        return "withheld (gate)"
    h = a.win_rate.headline
    return _ci(h.value, h.low, h.high)


def _release_rows(rep: ReleaseReport) -> list[dict[str, str]]:
    from swapjudge.report.wording import pct

    prev = {s.newer: s for s in rep.previous}
    base = {s.newer: s for s in rep.against_baseline}
    rows = []
    for p in rep.properties:
        sp, sb = prev.get(p.release), base.get(p.release)
        cons = sp.analysis.consistency if sp is not None else None
        rows.append({
            "release": p.release + (" (baseline)" if p.release == rep.baseline else ""),
            "chars": f"{p.chars_mean:.0f}", "words": f"{p.words_mean:.1f}", "headers": f"{p.headers_mean:.2f}",
            "bullets": f"{p.bullets_mean:.2f}",
            "vs previous": "-" if sp is None else f"{_wr(sp)} vs {sp.older}",
            "consistency": "-" if cons is None else pct(cons.rate),
            "vs baseline": "-" if sb is None else _wr(sb),
            "longer answer won": "-" if sb is None else pct(sb.longer_won.rate),
        })
    return rows


@app.command("releases")
@user_errors
def releases_command(
    config: Annotated[Path, typer.Argument(help="A run configuration with a release plan.", show_default=False)],
    store: Annotated[Path | None, typer.Option("--store", help="The run store (default: the configuration's).")]
    = None,
    run_id: Annotated[int | None, typer.Option("--run", help="The run to report (default: the latest run of "
                                                              "this configuration).")] = None,
    html: Annotated[Path | None, typer.Option("--html", help="Also write an HTML page with the chains plotted "
                                                             "(needs the [report] extra).")] = None,
    output: FormatOpt = OutputFormat.text,
) -> None:
    """Release over release with a pinned baseline: each release against the previous one and against the
    baseline side by side, with answer length and formatting per release. Judge first with `swapjudge run`."""
    from swapjudge.workflows.history import releases

    done = releases(config, store=store, run_id=run_id)
    rep, run_id = done.report, done.run_id
    if html is not None:
        from swapjudge.reading.textfiles import write_atomic
        from swapjudge.report.releases import render_releases_html

        write_atomic(html, render_releases_html(rep, title=f"{config.name}, run {run_id}"))
    if output is OutputFormat.json:
        dump_json({"run": run_id, **rep.to_dict()})
        return
    rows = _release_rows(rep)
    if output is OutputFormat.markdown:
        print(f"# Releases (run {run_id})\n\n{rep.summary}.\n\n" + _markdown_table(rows), end="")
        return
    table = Table(box=None, header_style="bold", title=f"run {run_id}: {done.tie_policy} win rate of each release",
                  title_justify="left")
    for col in rows[0]:
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(*r.values())
    wide_console().print(table)
    stdout.print(rep.summary + ".", highlight=False)


@app.command("adaptive")
@user_errors
def adaptive_command(
    run_id: Annotated[int, typer.Argument(help="A run judged in both orders with verdict probabilities.",
                                          show_default=False)],
    store: StoreOpt = None,
    thresholds: Annotated[str, typer.Option("--thresholds", help="Comma-separated confidence thresholds.")]
    = ",".join(f"{t:g}" for t in ADAPTIVE_THRESHOLDS),
    output: FormatOpt = OutputFormat.text,
) -> None:
    """Adaptive swapping, offline: at each threshold, how many swapped calls a run would have saved by making
    the second order only when the first verdict's confidence is below it, how many flips it would have missed
    (flips in unswapped pairs, never seen), and the swap-consistency it would report on the swapped pairs."""
    from swapjudge.report.wording import pct
    from swapjudge.workflows.history import adaptive

    try:
        levels = [float(x) for x in thresholds.split(",") if x.strip()]
    except ValueError:
        raise SwapjudgeError(f"--thresholds: not a list of numbers: {thresholds!r}") from None
    result = adaptive(run_id, levels, store=store)
    if output is OutputFormat.json:
        dump_json({"run": run_id, **result.to_dict()})
        return
    c = result.consistency
    head = (f"run {run_id}: {result.pairs} pairs judged in both orders, swap-consistency "
            f"{_ci(c.rate, c.low, c.high)}, {result.thresholds[0].flips} inconsistent; "
            f"{result.without_confidence} without a verdict probability (always swapped)")
    rows = [{"threshold": f"{t.threshold:g}", "calls saved": f"{t.calls_saved} ({pct(t.saved_share)})",
             "flips missed": f"{t.flips_missed} of {t.flips} ({pct(t.missed_share)})",
             "consistency reported (swapped pairs)": "n/a (none swapped)" if t.consistency_reported is None
             else f"{pct(t.consistency_reported)} of {t.swapped}"} for t in result.thresholds]
    if output is OutputFormat.markdown:
        print(f"# Adaptive swapping (run {run_id})\n\n{head}\n\n" + _markdown_table(rows), end="")
        return
    table = Table(box=None, header_style="bold")
    for col in rows[0]:
        table.add_column(col)
    for r in rows:
        table.add_row(*r.values())
    stdout.print(head, highlight=False)
    wide_console().print(table)


@app.command("anchors")
@user_errors
def anchors_command(
    config: Annotated[Path, typer.Argument(help="Anchored scoring configuration (YAML).", show_default=False)],
    pinned: Annotated[Path | None, typer.Option("--pinned", help="Pinned reference scores (JSONL item, score); "
                                                                  "default: the configuration's `pinned`.")] = None,
    out: Annotated[Path | None, typer.Option("-o", "--output", help="Write this run's reference scores "
                                                                    "(JSONL), e.g. to pin them.")] = None,
    store: Annotated[Path | None, typer.Option("--store", help="The run store the scores go to (default: the "
                                                               "configuration's `store`, else ./swapjudge.db).")]
    = None,
    output: FormatOpt = OutputFormat.text,
) -> None:
    """Anchored pointwise scoring: score the exemplars and the pinned reference set, report the score
    distribution and scale compression, and flag the run (exit 1) when the anchors moved beyond the tolerance."""
    from swapjudge.reading.textfiles import write_atomic
    from swapjudge.report.wording import p_equals
    from swapjudge.workflows.history import anchors

    res = anchors(config, pinned=pinned, store=store)
    if out is not None:
        write_atomic(out, "".join(json.dumps({"item": k, "score": v}) + "\n" for k, v in res.scores.items()
                                   if v is not None))
    if output is OutputFormat.json:
        dump_json(res.to_dict())
    else:
        d = res.distribution
        lines = [f"anchored run {res.run_id} stored in {res.store}",
                 f"reference set: {d.n} scored ({res.unparsed} unparsable), rubric {res.rubric_hash[:12]}",
                 "distribution: " + ", ".join(f"{lv}: {c}" for lv, c in zip(d.levels, d.counts, strict=True))
                 + f"; mean {d.mean:.2f}, median {d.median:g}",
                 f"scale compression (two most common levels {d.top_levels}): "
                 f"{_ci(d.compression.rate, d.compression.low, d.compression.high)}",
                 "exemplars: " + ", ".join(f"{k} {s} (stated {a})" for k, (a, s) in res.exemplars.items())]
        c = res.check
        if c is None:
            lines.append("no pinned scores: nothing to compare (write these with -o and pin them)")
        else:
            p = p_equals(c.p_value)
            lines.append(f"against the pinned scores ({c.items} items): mean shift {c.mean_shift:+.2f} levels, "
                         f"{c.moved.k} moved ({c.up} up, {c.down} down), Wilcoxon {p}")
        lines += [f"FLAG: {r}" for r in (c.reasons if c is not None else ())]
        if res.flagged and c is None:
            lines.append("FLAG: an exemplar did not get its stated score")
        text = "\n".join(lines)
        if output is OutputFormat.markdown:
            print(f"# Anchored scoring\n\n```\n{text}\n```\n", end="")
        else:
            stdout.print(text, highlight=False, markup=False)
    conclude(res)
