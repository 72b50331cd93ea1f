"""The fragility lines (`--fragility`): what a reader sees of drop, flip and the splits' worst case."""

from __future__ import annotations

from typing import Any

SHOWN_IDS = 10  # ids listed in a line; the JSON has them all


def _ids(ids: Any) -> str:
    ids = list(ids)
    if not ids:
        return ""
    more = f", ... {len(ids) - SHOWN_IDS:,} more" if len(ids) > SHOWN_IDS else ""
    return " (items " + ", ".join(str(i) for i in ids[:SHOWN_IDS]) + more + ")"


def _confirmed(change: Any) -> str:
    if getattr(change, "confirmed", None) is False:
        return "; NOT confirmed by recomputing"
    return "; confirmed by recomputing" if getattr(change, "confirmed", None) else ""


def fragility_rows(f: Any) -> list[tuple[str, str]]:
    """Labelled lines for a `Fragility` (a decision's) or a `RankFragility` (a ranking's)."""
    out = [("fragility: drop", f.drop.statement + _ids(f.drop.ids) + _confirmed(f.drop)),
           ("fragility: flip", f.flip.statement + _ids(f.flip.ids) + _confirmed(f.flip))]
    worst = getattr(f, "splits_worst_case", None)
    if worst is not None:
        out.append(("fragility: splits", worst.statement))
    out += [("fragility: note", n) for n in getattr(f, "notes", ())]
    return out
