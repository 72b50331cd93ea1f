"""Result objects in a notebook: the same audit the terminal prints, as HTML and Markdown, and as DataFrames.

Jupyter calls `_repr_html_` / `_repr_markdown_`; the result types forward here so the statistics modules import no
renderer. A failed gate opens the display in red, as it does at the terminal.
"""

from __future__ import annotations

import html
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console, RenderableType

FAILED_STYLE = "color:#b00020;font-weight:bold;border:2px solid #b00020;padding:4px 8px;margin:4px 0"
HTML_WIDTH = 110  # characters: the rich render is a <pre>, so it keeps its columns at any notebook width


def flatten(payload: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested JSON as one flat row: `consistency.rate`, `gate.passed`, ...; lists of objects become JSON text."""
    out: dict[str, Any] = {}
    for key, value in payload.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "."))
        elif isinstance(value, list | tuple) and any(isinstance(v, Mapping | list | tuple) for v in value):
            out[name] = json.dumps(value)
        elif isinstance(value, tuple):
            out[name] = list(value)
        else:
            out[name] = value
    return out


def frame(rows: Sequence[Mapping[str, Any]], backend: str = "polars") -> Any:
    """Rows as a polars DataFrame, or a pandas one with `backend="pandas"` (pandas must be installed)."""
    import polars as pl

    if backend not in ("polars", "pandas"):
        raise ValueError(f"backend must be 'polars' or 'pandas', got {backend!r}")
    out = pl.concat([pl.DataFrame([dict(r)]) for r in rows], how="diagonal_relaxed") if rows else pl.DataFrame()
    if backend == "polars":
        return out
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("to_frame(backend='pandas') needs pandas: pip install pandas") from None
    return pd.DataFrame(out.to_dict(as_series=False))  # column by column: no pyarrow needed


def rich_html(renderable: RenderableType) -> str:
    """A rich renderable as the terminal shows it, in an HTML <pre> with inline colours."""
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
    from swapjudge.report.text import render_analysis
    from swapjudge.report.wording import judge_name

    parts = [gate_banner(judge_name(a), a.gate.passed, a.gate.reason) + rich_html(render_analysis(a))
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


def calculation_html(calc: Any) -> str:
    from swapjudge.report.text import render_calculation

    return "<div class=\"swapjudge\">" + rich_html(render_calculation(calc)) + "</div>"


def calculation_markdown(calc: Any) -> str:
    from swapjudge.report.markdown import render_calculation

    return str(render_calculation(calc))
