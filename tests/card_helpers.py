"""A labelled suite for the judge-card tests: every fourth task carries a marker that the test judge server answers
with slot 1 (`JudgeServer(first_marker=MARK)`); otherwise it names the answer containing CORRECT."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MARK = "SLOT-ONE"
SUBSETS = ("alpha", "beta", "gamma")


def write_suite(directory: Path, n: int = 48) -> tuple[Path, list[dict[str, Any]]]:
    """n items in three subsets; every fourth item's task carries the marker; the better answer (CORRECT, and
    longer) sits under output_1 or output_2 by turns, so a slot-1 judge is right only when it sits in slot 1."""
    rows = []
    for i in range(n):
        good = f"CORRECT: the answer to question {i} is {i * 7}, because " + "seven times over. " * (1 + i % 9)
        bad = f"Perhaps {i * 7 + 1}."
        better_first = (i // 3) % 2 == 0
        answers = {"output_1": good, "output_2": bad} if better_first else {"output_1": bad, "output_2": good}
        rows.append({"item": f"{SUBSETS[i % 3]}#{i}", "prompt": f"Question {i}: what is {i} times 7?"
                     + (f" {MARK}" if i % 4 == 0 else ""), "answers": answers,
                     "label": "output_1" if better_first else "output_2"})
    path = directory / "suite.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path, rows
