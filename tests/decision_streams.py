"""Simulated presentation records for the decision tests: one pair per item (both orders), or several rounds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np


def stream(n: int, win: float, loss: float, *, seed: int = 0, candidate: str = "v2", incumbent: str = "v1",
           judge: str | None = None, rounds: int = 1, split: str = "flip", start: int = 0) -> list[dict[str, Any]]:
    """Records of `n` items: each pair a consistent candidate win with probability `win`, a consistent loss with
    `loss`, else a split (`flip`: both calls name slot 1; `tie`: both say tie; `half`: one tie, one slot 1)."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for i in range(start, start + n):
        for r in range(rounds):
            u = rng.random()
            if u < win:
                a, b = "first", "second"  # candidate first: it wins; incumbent first: the second slot wins
            elif u < win + loss:
                a, b = "second", "first"
            else:
                a, b = {"flip": ("first", "first"), "tie": ("tie", "tie"), "half": ("tie", "first")}[split]
            for first, second, verdict in ((candidate, incumbent, a), (incumbent, candidate, b)):
                row: dict[str, Any] = {"item": f"q{i}", "first": first, "second": second, "verdict": verdict}
                if judge is not None:
                    row["judge"] = judge
                if rounds > 1:
                    row["round"] = r
                rows.append(row)
    return rows


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


DECISION = {"candidate": "v2", "incumbent": "v1", "hypothesis": "superior", "margin": 0.0,
            "tie_policy": "half_credit", "min_consistency": 0.70, "alpha": 0.05, "power": 0.80, "items": 400,
            "monitoring": "fixed", "judge": None}


def decision_yaml(path: Path, **changes: Any) -> Path:
    import yaml

    path.write_text(yaml.safe_dump({**DECISION, **changes}, sort_keys=False), encoding="utf-8")
    return path
