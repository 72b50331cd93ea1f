"""swapjudge's pytest plugin (entry point `pytest11`, name `swapjudge`): a decision as a test.

    def test_the_new_prompt_ships(swapjudge_decide):
        swapjudge_decide("records.jsonl", "decision.yaml")

`swapjudge_decide` (a fixture) and `assert_ships` (importable: `from swapjudge.integrations.pytest_plugin import
assert_ships`) run `swapjudge.decide` and fail the test with the verdict's text when the candidate does not ship;
an inconclusive verdict fails with its own message (or is skipped, or passes, with `inconclusive="skip"` or
`"pass"`). Both return the verdict when they let the test go on.

The plugin is loaded in every pytest run of anyone who installs swapjudge, so this module imports nothing of
swapjudge's statistics until a test asks for a decision (`-p no:swapjudge` turns it off).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from swapjudge.decision.verdict import Verdict

INCONCLUSIVE_CHOICES = ("fail", "skip", "pass")


def assert_ships(records: Any, decision: str | Path | Mapping[str, Any], *, run: int | None = None,
                 allow_missing: int = 0, store: str | Path | None = None, inconclusive: str = "fail") -> Verdict:
    """Decide, and fail the calling test unless the candidate ships (see the module docstring)."""
    if inconclusive not in INCONCLUSIVE_CHOICES:
        raise ValueError(f"inconclusive must be one of {', '.join(INCONCLUSIVE_CHOICES)}, got {inconclusive!r}")
    from swapjudge.outcome import Conclusion
    from swapjudge.report.decision import render_text
    from swapjudge.workflows.decide import decide

    verdict = decide(records, decision, run=run, allow_missing=allow_missing, store=store)
    if verdict.outcome is Conclusion.failed:
        pytest.fail(f"swapjudge: {verdict.candidate} does not ship (keep)\n\n{render_text(verdict)}", pytrace=False)
    if verdict.outcome is Conclusion.inconclusive:
        message = (f"swapjudge: inconclusive: the data do not decide whether {verdict.candidate} ships yet "
                   f"({verdict.reasons[-1]})\n\n{render_text(verdict)}")
        if inconclusive == "fail":
            pytest.fail(message, pytrace=False)
        if inconclusive == "skip":
            pytest.skip(message)
    return verdict


@pytest.fixture
def swapjudge_decide() -> Callable[..., Verdict]:
    """`assert_ships`, as a fixture: `swapjudge_decide(records, decision, **options)`."""
    return assert_ships
