"""The escalation cascade as an HTML page (`swapjudge escalate --html FILE`): per judge its coverage-risk curve on
the calibration pairs that reached it (the share settled against the share of those disagreeing with the labels,
at each distinct confidence), the level alpha and the chosen threshold marked, with the points as a table. It
reads the result's numbers; it computes no statistic."""

from __future__ import annotations

from typing import TYPE_CHECKING

from swapjudge.report.html import CSS, content_security_policy, figure, html_table, svg_image
from swapjudge.report.wording import e

if TYPE_CHECKING:
    from swapjudge.core.cascade import Escalation, TierCalibration


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def curve_svg(cal: TierCalibration, alpha: float) -> str:
    """Coverage (x) against risk (y) of one judge's calibration, the chosen threshold as a ring, alpha dashed."""
    from swapjudge.report.plots import new_figure, to_svg

    points = cal.to_dict()["curve"]
    xs = [p["coverage"] for p in points]
    ys = [p["risk"] for p in points]
    fig = new_figure(5.0, 3.2)
    ax = fig.add_subplot()
    ax.plot(xs, ys, marker="o", markersize=3, color="#0072B2", label="disagreement with the labels")
    ax.axhline(alpha, linestyle="--", color="#999999", label=f"alpha = {alpha:g}")
    if cal.threshold is not None:
        chosen = [p for p in points if p["threshold"] == cal.threshold]
        if chosen:
            ax.plot([chosen[0]["coverage"]], [chosen[0]["risk"]], marker="o", markersize=10, fillstyle="none",
                    color="#E69F00", linestyle="none", label=f"threshold {cal.threshold:.4g}")
    ax.set_xlabel("coverage: share of the pairs reaching this judge it settles")
    ax.set_ylabel("risk")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    return to_svg(fig)


def _tier_section(index: int, result: Escalation) -> str:
    tier = result.tiers[index]
    cal = tier.calibration
    head = f"<section><h2>{e(tier.judge)}</h2>"
    if cal is None:
        return head + "<p>Thresholds read from a file: no calibration curve to draw.</p></section>"
    if not cal.curve:
        return head + (f"<p>No calibration pair that reached this judge could be settled ({cal.reached:,} reached "
                       "it).</p></section>")
    lam = "none passed: it settles nothing" if cal.threshold is None else f"{cal.threshold:.4g}"
    text = (f"<p>{cal.reached:,} calibration pairs reached this judge; threshold {e(lam)}; at it "
            f"{figure('settled', cal.settled, f'{cal.settled:,}')} settled, {cal.disagreements:,} disagreeing "
            f"(upper bound {_pct(cal.bound)} at delta {result.delta:g}; independent: {e(cal.independent)}).</p>")
    rows = [(f"{p['threshold']:.4g}", f"{p['settled']:,}", _pct(p["coverage"]), _pct(p["risk"]))
            for p in cal.to_dict()["curve"]]
    table = html_table(["threshold", "settled", "coverage", "risk"], rows, numeric={0, 1, 2, 3})
    img = svg_image(curve_svg(cal, result.alpha), f"coverage-risk curve of {tier.judge}")
    return (f"{head}{text}<figure>{img}<figcaption>Coverage against the share of settled calibration pairs that "
            f"disagree with the labels, strictest threshold first.</figcaption></figure>"
            f"<details><summary>The points</summary>{table}</details></section>")


def render_escalation_html(result: Escalation, *, title: str) -> str:
    sections = "".join(_tier_section(i, result) for i in range(len(result.tiers)))
    return "".join([
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{e(content_security_policy())}">',
        f"<title>swapjudge escalate · {e(title)}</title><style>{CSS}</style></head><body>",
        f'<header><h1>Escalation cascade</h1><div class="sub">{e(title)} · coverage {_pct(result.coverage)} · '
        f"{e(result.guarantee)}</div></header>",
        sections, "</body></html>\n"])
