"""inspect_ai's entry point (`[project.entry-points.inspect_ai]`): importing registers the scorer and its metrics
under the `swapjudge/` prefix, so `inspect eval` and `inspect score --scorer swapjudge/swap_judge` find them."""

from swapjudge.integrations.inspect import (  # noqa: F401
    first_slot_share,
    gate_passed,
    swap_consistency,
    swap_judge,
    win_rate,
)
