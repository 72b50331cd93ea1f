"""The counts-only calculator (`swapjudge calc`): consistency, flip direction and the order-could-decide check
from counts alone. It loads no polars, so the command starts fast."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swapjudge.core import arguments
from swapjudge.core.display import Displayable
from swapjudge.core.policy import Decision, decision
from swapjudge.core.swap import Consistency, FlipDirection, consistency, flip_direction
from swapjudge.errors import ArgumentError


@dataclass(frozen=True)
class Calculation(Displayable):
    """The counts-only calculator: consistency from counts, flip direction when the flips' slots are known, and
    the order-could-decide check when a margin is given."""

    consistency: Consistency
    flip_direction: FlipDirection | None
    decision: Decision | None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"consistency": self.consistency.to_dict()}
        out["flip_rate"] = {"rate": self.consistency.flip_rate, "low": self.consistency.flip_rate_low,
                            "high": self.consistency.flip_rate_high}
        if self.flip_direction is not None:
            out["flip_direction"] = self.flip_direction.to_dict()
        if self.decision is not None:
            out["decision"] = self.decision.to_dict()
        return out

    def to_frame(self, backend: str = "polars") -> Any:
        """One row of the flattened `to_dict()`: polars, or pandas with `backend="pandas"`."""
        from swapjudge.core import documents  # polars, loaded only when asked: `calc` starts without it

        return documents.frame([documents.flatten(self.to_dict())], backend)


def calculate(pairs: int, consistent: int, *, to_first: int | None = None, to_second: int | None = None,
              margin: float | None = None, confidence: float = 0.95) -> Calculation:
    """Swap-consistency figures from counts alone (`swapjudge calc`)."""
    pairs = arguments.integer(pairs, "pairs")
    consistent = arguments.integer(consistent, "consistent")
    to_first = arguments.integer(to_first, "to_first", optional=True)
    to_second = arguments.integer(to_second, "to_second", optional=True)
    margin = arguments.number(margin, "margin", optional=True)
    confidence = arguments.number(confidence, "confidence")
    if pairs <= 0:
        raise ArgumentError(f"{{pairs}} must be positive, got {pairs}", "pairs")
    if not 0 <= consistent <= pairs:
        raise ArgumentError(f"{{consistent}} must be between 0 and {{pairs}} ({pairs}), got {consistent}",
                            "consistent", "pairs")
    if not 0 < confidence < 1:
        raise ArgumentError(f"{{confidence}} must be between 0 and 1, got {confidence}", "confidence")
    if (to_first is None) != (to_second is None):
        raise ArgumentError("give both {to_first} and {to_second}, or neither", "to_first", "to_second")
    direction = None
    if to_first is not None and to_second is not None:
        if to_first < 0 or to_second < 0 or to_first + to_second > pairs - consistent:
            raise ArgumentError(f"{{to_first}} + {{to_second}} must be between 0 and the {pairs - consistent} "
                                 "inconsistent pairs", "to_first", "to_second")
        direction = flip_direction(to_first, to_second, confidence)
    cons = consistency(consistent, pairs, confidence)
    if margin is not None and not 0 <= margin <= 1:
        raise ArgumentError(f"{{margin}} must be a share between 0 and 1, got {margin}", "margin")
    return Calculation(cons, direction, None if margin is None else decision(margin, cons.flip_rate_high))
