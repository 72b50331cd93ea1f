"""The named choices of a ranking (tie model, interval method, what a battle is) and the default bootstrap size,
in a module with no heavy import so the CLI can offer them without loading numpy or scipy."""

from __future__ import annotations

import enum

DEFAULT_ROUNDS = 1000
FEW_ITEMS = 30  # below this many items the item bootstrap's intervals run narrow (see docs/rank.md)


class Model(enum.StrEnum):
    """The tie model fitted."""

    rao_kupper = "rao-kupper"
    davidson = "davidson"
    bt_half = "bt-half"


class IntervalMethod(enum.StrEnum):
    """How bootstrap draws become an interval: plain percentiles, or bias-corrected and accelerated."""

    percentile = "percentile"
    bca = "bca"


class OutcomeSource(enum.StrEnum):
    swap = "swap"
    calls = "calls"
