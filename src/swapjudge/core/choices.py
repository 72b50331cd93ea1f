"""The named choices the CLI offers (tie policies, length units, tie models, interval methods, what a battle is)
and the defaults behind them, in one module with no heavy import, so the CLI can offer them in its options and
its help without loading numpy, scipy or polars. Each is used from its home module too (core.policy,
probes.length, ranking.bradley_terry)."""

from __future__ import annotations

import enum

DEFAULT_MIN_CONSISTENCY = 0.70  # the self-consistency gate
DEFAULT_ROUNDS = 1000  # bootstrap rounds of a ranking
FEW_ITEMS = 30  # below this many items the item bootstrap's intervals run narrow (see docs/rank.md)


class TiePolicy(enum.StrEnum):
    """What a split pair (anything but a consistent win) is worth."""

    half_credit = "half_credit"
    exclude = "exclude"
    no_credit = "no_credit"
    separate = "separate"


class ReadEngine(enum.StrEnum):
    """How a records file is read: `auto` streams Parquet and large JSON Lines files when DuckDB is installed,
    `streaming` always (files larger than memory), `memory` reads it whole. The figures are the same."""

    auto = "auto"
    memory = "memory"
    streaming = "streaming"


class LengthUnit(enum.StrEnum):
    """How the length probe measures an answer."""

    chars = "chars"
    tokens = "tokens"  # whitespace-separated words: model-free and reproducible


class SplitHandling(enum.StrEnum):
    """What the length probe does with a split pair."""

    half = "half"
    exclude = "exclude"


class Model(enum.StrEnum):
    """The tie model a ranking fits."""

    rao_kupper = "rao-kupper"
    davidson = "davidson"
    bt_half = "bt-half"


class IntervalMethod(enum.StrEnum):
    """How bootstrap draws become an interval: plain percentiles, or bias-corrected and accelerated."""

    percentile = "percentile"
    bca = "bca"


class OutcomeSource(enum.StrEnum):
    """What a battle is: one order-cancelled outcome per pair, every call on its own, or one graded pair."""

    swap = "swap"
    calls = "calls"
    graded = "graded"  # a pair's order-averaged graded score as a weighted win (graded verdicts only)
