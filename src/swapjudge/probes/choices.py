"""The named choices of the length probe, in a module with no heavy import so the CLI can offer them without
loading numpy or scipy."""

from __future__ import annotations

import enum


class LengthUnit(enum.StrEnum):
    chars = "chars"
    tokens = "tokens"  # whitespace-separated words: model-free and reproducible


class SplitHandling(enum.StrEnum):
    half = "half"
    exclude = "exclude"
