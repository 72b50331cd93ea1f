"""Small studies for the fragility tests: items of a few kinds, each kind one pattern of both calls."""

from __future__ import annotations

from typing import Any

# (verdict with the candidate A in slot 1, verdict with the incumbent B in slot 1)
PATTERNS: dict[str, tuple[str | None, str | None]] = {
    "W": ("first", "second"),  # A wins in both orders
    "L": ("second", "first"),  # B wins in both orders
    "F": ("first", "first"),  # a flip: slot 1 wins both times
    "H": ("tie", "second"),  # a half-tie: tie, then A
    "T": ("tie", "tie"),  # a consistent tie
    "M": ("first", None),  # one call without a verdict
}

DECISION = dict(candidate="A", incumbent="B", hypothesis="superior", margin=0.0, tie_policy="half_credit",
                min_consistency=0.7, alpha=0.05, power=0.8, monitoring="fixed")


def kinds_in_order(counts: dict[str, int]) -> list[str]:
    """The items' kinds, interleaved so that no kind sits in one block (a fixed order, no randomness)."""
    left = dict(counts)
    out: list[str] = []
    while any(left.values()):
        for kind in sorted(left):
            if left[kind]:
                out.append(kind)
                left[kind] -= 1
    return out


def study(counts: dict[str, int]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Records of one study and each item's kind."""
    rows: list[dict[str, Any]] = []
    kind_of: dict[str, str] = {}
    for i, kind in enumerate(kinds_in_order(counts)):
        item = f"q{i:03d}"
        kind_of[item] = kind
        a_first, b_first = PATTERNS[kind]
        rows.append(dict(item=item, first="A", second="B", verdict=a_first))
        rows.append(dict(item=item, first="B", second="A", verdict=b_first))
    return rows, kind_of
