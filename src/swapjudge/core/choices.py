"""The named choices of the analysis (tie policies) and the gate's default, in a module with no heavy import so
the CLI can offer them in its options and its help without loading numpy or polars."""

from __future__ import annotations

import enum


class TiePolicy(enum.StrEnum):
    half_credit = "half_credit"
    exclude = "exclude"
    no_credit = "no_credit"
    separate = "separate"


DEFAULT_MIN_CONSISTENCY = 0.70
