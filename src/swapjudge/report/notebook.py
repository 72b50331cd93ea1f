"""Result objects in a notebook: the same audit the terminal prints, as HTML and Markdown.

Jupyter calls `_repr_html_` / `_repr_markdown_`; the result types answer them with the renderers registered here
(by type name, so this module imports no statistics), which `import swapjudge` loads before it hands out a result.
A failed gate opens the display in red, as it does at the terminal.
"""

from __future__ import annotations

import html
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from swapjudge.core.display import register_display
from swapjudge.report import decision

if TYPE_CHECKING:
    from rich.console import RenderableType

FAILED_STYLE = "color:#b00020;font-weight:bold;border:2px solid #b00020;padding:4px 8px;margin:4px 0"
HTML_WIDTH = 110  # characters: the rich render is a <pre>, so it keeps its columns at any notebook width


def rich_html(renderable: RenderableType) -> str:
    """A rich renderable as the terminal shows it, in an HTML <pre> with inline colours."""
    from rich.console import Console

    console = Console(record=True, width=HTML_WIDTH, file=io.StringIO(), force_terminal=True, color_system="truecolor",
                      highlight=False)
    console.print(renderable)
    return console.export_html(inline_styles=True, code_format="<pre style=\"font-size:0.85em\">{code}</pre>")


def gate_banner(judge: str, passed: bool, reason: str | None) -> str:
    """The failed gate, in words no reader can miss; nothing when it passed."""
    if passed:
        return ""
    return (f"<div style=\"{FAILED_STYLE}\">gate FAILED for {html.escape(judge)}: "
            f"{html.escape(reason or 'below the self-consistency gate')}; no win rate is reported</div>")


def analysis_html(analyses: Sequence[Any]) -> str:
    from swapjudge.report.text import text_analysis
    from swapjudge.report.wording import judge_name

    parts = [gate_banner(judge_name(a), a.gate.passed, a.gate.reason) + rich_html(text_analysis(a))
             for a in analyses]
    return "<div class=\"swapjudge\">" + "".join(parts) + "</div>"


def analysis_markdown(analyses: Sequence[Any]) -> str:
    from swapjudge.report.markdown import render_analyses

    return str(render_analyses(list(analyses)))


def ranking_html(ranking: Any) -> str:
    from swapjudge.report.rank import render_text

    return "<div class=\"swapjudge\">" + rich_html(render_text(ranking)) + "</div>"


def ranking_markdown(ranking: Any) -> str:
    from swapjudge.report.rank import render_markdown

    return str(render_markdown(ranking))


def judge_ranking_html(result: Any) -> str:
    """A judge's ranking with its gate; a withheld one: the failure in red, and nothing fitted."""
    from swapjudge.report.rank import render_text

    if result.ranking is None:
        return f"<div class=\"swapjudge\" style=\"{FAILED_STYLE}\">{html.escape(result.to_dict()['withheld'])}</div>"
    return ("<div class=\"swapjudge\">" + rich_html(render_text(result.ranking, judge=result.judge or None,
                                                                outcome=result.outcome, gate=result.gate)) + "</div>")


def judge_ranking_markdown(result: Any) -> str:
    from swapjudge.report.rank import render_markdown

    if result.ranking is None:
        return f"**{result.to_dict()['withheld']}**\n"
    return str(render_markdown(result.ranking, judge=result.judge or None, outcome=result.outcome, gate=result.gate))


def calculation_html(calc: Any) -> str:
    from swapjudge.report.text import text_calculation

    return "<div class=\"swapjudge\">" + rich_html(text_calculation(calc)) + "</div>"


def calculation_markdown(calc: Any) -> str:
    from swapjudge.report.markdown import markdown_calculation

    return str(markdown_calculation(calc))


def _run_head(run: Any) -> str:
    s = run.stats
    return (f"run {run.run_id}{' (resumed)' if run.resumed else ''}: {s.get('planned', 0):,} calls planned, "
            f"{s.get('made', 0):,} made, {s.get('cached', 0):,} from cache")


def run_html(run: Any) -> str:
    return (f"<p>{html.escape(_run_head(run))}; store {html.escape(str(run.store_path))}</p>"
            + analysis_html(run.analyses.judges))


def run_markdown(run: Any) -> str:
    return _run_head(run) + "\n\n" + analysis_markdown(run.analyses.judges)


register_display("swapjudge.core.analysis.JudgeAnalysis", html=lambda a: analysis_html([a]),
                 markdown=lambda a: analysis_markdown([a]))
register_display("swapjudge.core.analysis.Analyses", html=lambda r: analysis_html(r.judges),
                 markdown=lambda r: analysis_markdown(r.judges))
register_display("swapjudge.workflows.run.RunResult", html=run_html, markdown=run_markdown)
register_display("swapjudge.core.calculator.Calculation", html=calculation_html, markdown=calculation_markdown)
register_display("swapjudge.ranking.bradley_terry.Ranking", html=ranking_html, markdown=ranking_markdown)
register_display("swapjudge.workflows.rank.JudgeRanking", html=judge_ranking_html, markdown=judge_ranking_markdown)
register_display("swapjudge.decision.verdict.Verdict", html=decision.render_html_fragment,
                 markdown=decision.render_markdown)
register_display("swapjudge.decision.power.Plan", html=decision.render_plan_html,
                 markdown=decision.render_plan_markdown)


def card_html(doc: dict[str, Any]) -> str:
    from swapjudge.report.card import render_text

    failed = not ((doc.get("overall") or {}).get("gate") or {}).get("passed", True)
    banner = gate_banner(str(doc.get("judge")), not failed, "below the self-consistency gate on the whole suite")
    return "<div class=\"swapjudge\">" + banner + rich_html(render_text(doc, HTML_WIDTH)) + "</div>"


def card_markdown(doc: dict[str, Any]) -> str:
    from swapjudge.report.card import render_markdown

    return render_markdown(doc)


def card_set_html(doc: dict[str, Any]) -> str:
    from swapjudge.report.card import render_comparison_text

    return "<div class=\"swapjudge\">" + rich_html(render_comparison_text(doc, HTML_WIDTH)) + "</div>"


def card_set_markdown(doc: dict[str, Any]) -> str:
    from swapjudge.report.card import render_comparison_markdown

    return render_comparison_markdown(doc)


def _card_run_html(result: Any) -> str:
    if result.card is None:
        return f"<p>{html.escape(_run_head(result.run))}: the card waits for the run's remaining calls</p>"
    return card_html(result.card.to_dict())


def _card_run_markdown(result: Any) -> str:
    return _run_head(result.run) + ": waiting" if result.card is None else card_markdown(result.card.to_dict())


register_display("swapjudge.probes.judge_card.JudgeCard", html=lambda c: card_html(c.to_dict()),
                 markdown=lambda c: card_markdown(c.to_dict()))
register_display("swapjudge.workflows.card.CardRun", html=_card_run_html, markdown=_card_run_markdown)
register_display("swapjudge.workflows.card.CardSet", html=lambda s: card_set_html(s.to_dict()),
                 markdown=lambda s: card_set_markdown(s.to_dict()))
