"""The release chains as an HTML page: both chains' win rates with their intervals on one plot, the answers'
length beside them, and the table of `swapjudge releases`. No statistic is computed here."""

from __future__ import annotations

from typing import Any

from swapjudge.drift.releases import ReleaseReport, ReleaseStep
from swapjudge.report.html import CSS, svg_image
from swapjudge.report.plots import SLOT1, SLOT2, new_figure, to_svg
from swapjudge.report.wording import e


def _points(steps: tuple[ReleaseStep, ...]) -> tuple[list[str], list[float], list[float], list[float]]:
    names, value, low, high = [], [], [], []
    for s in steps:
        wr = s.analysis.win_rate
        if wr is None or s.analysis.withheld or wr.headline.value is None:
            continue
        h = wr.headline
        names.append(s.newer)
        value.append(h.value or 0.0)
        low.append(h.low if h.low is not None else h.value or 0.0)
        high.append(h.high if h.high is not None else h.value or 0.0)
    return names, value, low, high


def chains_svg(report: ReleaseReport) -> str:
    """Left: each release's win rate against the previous release and against the pinned baseline (95% intervals).
    Right: mean answer length per release."""
    fig = new_figure(8.6, 3.2)
    left, right = fig.subplots(1, 2, width_ratios=(3, 2))
    order = [p.release for p in report.properties]
    where = {name: i for i, name in enumerate(order)}
    for steps, label, colour, shift in ((report.previous, "vs previous release", SLOT2, -0.06),
                                        (report.against_baseline, f"vs pinned baseline {report.baseline}", SLOT1,
                                         0.06)):
        names, value, low, high = _points(steps)
        xs = [where[n] + shift for n in names]
        err = [[v - lo for v, lo in zip(value, low, strict=True)], [hi - v for v, hi in zip(value, high, strict=True)]]
        left.errorbar(xs, value, yerr=err, marker="o", capsize=3, color=colour, label=label)
    left.axhline(0.5, color="#999999", linewidth=0.8, linestyle="--")
    left.set_xticks(range(len(order)), order)
    left.set_ylim(0, 1)
    left.set_ylabel("win rate of the release")
    left.legend(loc="lower right", fontsize=8, frameon=False)
    right.plot(range(len(order)), [p.chars_mean for p in report.properties], marker="o", color="#444444")
    right.set_xticks(range(len(order)), order)
    right.set_ylabel("mean answer length (characters)")
    return to_svg(fig)


def _rate(step: ReleaseStep | None) -> str:
    if step is None:
        return "-"
    wr = step.analysis.win_rate
    if wr is None:
        return "n/a"
    if step.analysis.withheld:
        return "withheld (gate)"
    h = wr.headline
    if h.value is None or h.low is None or h.high is None:
        return "n/a"
    return f"{h.value:.1%} [{h.low:.1%}, {h.high:.1%}]"


def render_releases_html(report: ReleaseReport, *, title: str = "release chains") -> str:
    prev = {s.newer: s for s in report.previous}
    base = {s.newer: s for s in report.against_baseline}
    rows: list[list[Any]] = []
    for p in report.properties:
        rows.append([p.release + (" (baseline)" if p.release == report.baseline else ""), f"{p.chars_mean:.0f}",
                     f"{p.words_mean:.1f}", f"{p.headers_mean:.2f}", f"{p.bullets_mean:.2f}",
                     _rate(prev.get(p.release)), _rate(base.get(p.release))])
    head = ["release", "chars", "words", "headers", "list items", "vs previous", f"vs {report.baseline}"]
    table = ("<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>"
             + "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows)
             + "</tbody></table>")
    return "".join([
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
        "style-src 'unsafe-inline'\">",
        f"<title>swapjudge · {e(title)}</title><style>{CSS}</style></head><body>",
        f"<header><h1>Release over release</h1><div class=\"sub\">{e(title)}</div></header>",
        f"<section><p>{e(report.summary)}.</p>",
        svg_image(chains_svg(report), "win rate of each release against the previous one and against the pinned "
                  "baseline, and the mean answer length per release"),
        table, "</section></body></html>\n",
    ])
