"""A printable HTML version of a blind review sheet: task id, task, left and right answers, a box to tick.
No system names and no item ids (they are in the key); all text escaped; no script at all."""

from __future__ import annotations

from html import escape

from swapjudge.review.sheet import Sheet

CSS = """
body { font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; max-width: 1100px;
       margin: 0 auto; padding: 1.2rem; color: #1d1d1f; }
.task { border: 1px solid #ccc; border-radius: 6px; padding: .6rem .8rem; margin: 1rem 0; break-inside: avoid; }
.task h2 { font-size: 1rem; margin: 0 0 .4rem; }
.two { display: grid; grid-template-columns: 1fr 1fr; gap: .8rem; }
h3 { font-size: .85rem; color: #555; margin: .3rem 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f8; padding: .5rem; margin: 0;
      font: 12.5px/1.45 ui-monospace, Menlo, Consolas, monospace; }
.choice { margin-top: .5rem; font-weight: 600; }
@media print { body { padding: 0; } .task { page-break-inside: avoid; } }
"""


def render_sheet(sheet: Sheet) -> str:
    tasks = []
    for t in sheet.tasks:
        tasks.append(
            f'<section class="task" id="{escape(t.task_id)}"><h2>Task {escape(t.task_id)}</h2>'
            f"<h3>Task given to both answers</h3><pre>{escape(t.prompt)}</pre>"
            f'<div class="two"><div><h3>Left answer</h3><pre>{escape(t.left_text)}</pre></div>'
            f"<div><h3>Right answer</h3><pre>{escape(t.right_text)}</pre></div></div>"
            '<p class="choice">Better answer: ☐ left &nbsp; ☐ right &nbsp; ☐ tie</p></section>')
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'">'
            f"<title>Review sheet</title><style>{CSS}</style></head><body><h1>Review sheet</h1>"
            f"<p>{len(sheet.tasks):,} tasks. For each, pick the better answer for the task (left, right or tie) and "
            "write it in the sheet's <code>choice</code> column next to the task id. Judge each task on its own."
            "</p>" + "".join(tasks) + "</body></html>\n")
