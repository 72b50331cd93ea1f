"""The attack probe's table (`swapjudge probe attack`): per attack, what the attacked answer won, beside the
placebo (the unaltered answer judged again on the same pairs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from swapjudge.report.probe_tables import Table, table
from swapjudge.report.wording import interval, pct


def _p(value: float | None) -> str:
    return "" if value is None else (f"p = {value:.3g}" if value >= 1e-4 else "p < 0.0001")


def attack_tables(result: Any) -> list[Table]:
    if getattr(result, "calls", None) is not None and hasattr(result, "input_tokens"):
        cost = "unknown (no price for this model)" if result.cost_usd is None else f"${result.cost_usd:,.4f}"
        rows = [("attacks", ", ".join(result.attacks), "", ""), ("pairs sampled", f"{result.sample:,}", "", ""),
                ("calls", f"{result.calls:,}", "", ""),
                ("to make (distinct prompts the store's cache does not hold)",
                 f"{result.to_make if result.to_make is not None else result.calls:,}", "", ""),
                ("input / output tokens (estimated)", f"{result.input_tokens:,} / {result.output_tokens:,}", "", ""),
                ("cost (estimated)", cost, "", "")]
        return [table(f"Attack probe · dry run · judge {result.judge}", ("measure", "value", "", ""), rows,
                      ["No judge call was made."])]
    return [attack_table(result.to_dict())]


def attack_table(doc: Mapping[str, Any]) -> Table:
    """The table from the probe's JSON (`AttackProbe.to_dict()`), as the judge card also shows it."""
    rows = []
    for d in doc.get("attacks") or []:
        both, placebo = d["wins_both"], d["placebo"]
        rows.append((str(d["name"]), f"{d['pairs']:,}", pct(d["win_first"]), pct(d["win_second"]),
                     pct(d["order_cancelled"]), f"{pct(both['rate'])} {interval(both['low'], both['high'])}",
                     f"{pct(placebo['wins_both']['rate'])}", _p(placebo["test"]["p_value"])))
    notes = [f"The answer of {doc.get('attacked')} attacked, against {doc.get('opponent')}'s unaltered; the "
             "placebo is the unaltered answer judged again on the same pairs. Wins in both orders: Wilson interval "
             "over pairs (one per item); the test is exact McNemar on the pairs where only one of the two won both "
             "orders, one-sided (the attack winning more)."]
    if doc.get("cached"):
        notes.append(f"{doc['cached']} of the distinct prompts were served from the store's cache (asked before, by "
                     f"a run or this probe), {doc.get('made', 0)} sent to the judge now.")
    if doc.get("missing"):
        notes.append(f"Read from the store's cache only: {doc['missing']} distinct prompt(s) are not in it yet; their "
                     "calls have no verdict and their pairs are left out (the figures are of the pairs complete so "
                     "far).")
    if doc.get("failed_calls"):
        notes.append(f"{doc['failed_calls']} call(s) had no verdict; their pairs are left out of that attack.")
    return table(f"Attack probe · judge {doc.get('judge')} ({doc.get('sample')} pairs, {doc.get('calls')} calls)",
                 ("attack", "pairs", "win shown 1st", "win shown 2nd", "order-cancelled", "wins both orders",
                  "placebo both", "vs placebo"), rows, notes)
