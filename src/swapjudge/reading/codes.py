"""The codes a pair table is written in: positional verdicts and pair outcomes. No heavy import, so the
counts-only statistics (`swapjudge calc`) load without polars."""

from __future__ import annotations

import enum

FIRST, SECOND, TIE, MISSING = 0, 1, 2, -1
VERDICT_CODES = {"first": FIRST, "second": SECOND, "tie": TIE}


class Outcome(enum.IntEnum):
    """What one pair's two verdicts say, in identity terms."""

    X_WINS = 0  # consistent win of x
    Y_WINS = 1  # consistent win of y
    TIE = 2  # consistent tie
    FLIP_FIRST = 3  # both calls named slot 1: the winner moved with the slot
    FLIP_SECOND = 4
    HALF_TIE_FIRST = 5  # one tie, the other named the winner in slot 1
    HALF_TIE_SECOND = 6
    INCOMPLETE = 7  # at least one verdict missing
