"""Shared helpers for the runner tests: write a pairs file and a configuration into a directory."""

from __future__ import annotations

import json
import os
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml


def write_pairs(
    directory: Path,
    n: int,
    *,
    identical: int = 0,
    name: str = "pairs.jsonl",
    extra: list[dict[str, Any]] | None = None,
) -> Path:
    """n items; system `good` answers CORRECT, system `bad` does not; the label is `good`."""
    rows = []
    for i in range(n):
        good = f"CORRECT answer to question {i}: the result is {i * 7}."
        bad = f"A weaker answer to question {i}: maybe {i * 7 + 1}?"
        if i < identical:
            bad = good
        rows.append(
            {
                "item": f"q{i:03d}",
                "prompt": f"Question {i}: what is {i} times 7?",
                "answers": {"good": good, "bad": bad},
                "label": "good",
            }
        )
    rows += extra or []
    path = directory / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_config(
    directory: Path,
    *,
    backend: str = "openai",
    base_url: str,
    name: str = "run.yaml",
    judge: dict[str, Any] | None = None,
    **top: Any,
) -> Path:
    cfg: dict[str, Any] = {
        "protocol": "pairwise",
        "orders": ["ab", "ba"],
        "schema": "forced_choice",
        "tie_policy": "half_credit",
        "judge": {
            "backend": backend,
            "model": "judge-model",
            "base_url": base_url,
            "max_concurrency": 8,
            "timeout_s": 5,
            "backoff_s": 0.05,
            "max_backoff_s": 0.2,
            **(judge or {}),
        },
        "pairs": {"path": "pairs.jsonl", "a": "good", "b": "bad"},
        "store": "swapjudge.db",
    }
    cfg.update(top)
    path = directory / name
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def stored_calls(db: Path, run_id: int | None = None) -> list[dict[str, Any]]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    if run_id is None:
        run_id = con.execute("SELECT MAX(id) FROM runs").fetchone()[0]
    rows = [dict(r) for r in con.execute("SELECT * FROM calls WHERE run_id=?", (run_id,))]
    con.close()
    return rows


def listwise_config(directory: Path, url: str, *, model: str = "gpt-4o-mini", max_retries: int = 2,
                    **judge: Any) -> Path:
    """A best-of-N run configuration (`protocol: listwise`, Latin-square rotations) against an OpenAI-wire server,
    judging the answer sets of `answers.jsonl` into `swapjudge.db` beside it."""
    cfg = {"protocol": "listwise", "rotations": "latin", "seed": 3, "pairs": {"path": "answers.jsonl"},
           "store": "swapjudge.db",
           "judge": {"backend": "openai", "model": model, "base_url": url, "max_retries": max_retries,
                     "backoff_s": 0.01, "timeout_s": 10, **judge}}
    path = directory / "run.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def cli_in(directory: Path, *args: str) -> Any:
    """A swapjudge command run in this process from `directory` (a configuration's relative paths resolve there)."""
    from typer.testing import CliRunner

    from swapjudge.cli import app

    old = os.getcwd()
    os.chdir(directory)
    try:
        return CliRunner().invoke(app, list(args))
    finally:
        os.chdir(old)


def every_stored_call(db: Path) -> list[dict[str, Any]]:
    """Every run's stored calls, in (run, item, slots) order, each call's `settings` read from its JSON."""
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    rows = [dict(r) for r in con.execute("SELECT * FROM calls ORDER BY run_id, item, first")]
    con.close()
    for r in rows:
        r["settings"] = json.loads(r["settings"]) if r["settings"] else {}
    return rows


def pair_verdicts(calls: list[dict[str, Any]]) -> dict[str, dict[str, str | None]]:
    """item -> {identity in slot 1: the identity the verdict names (or tie/None)}."""
    out: dict[str, dict[str, str | None]] = defaultdict(dict)
    for c in calls:
        named = {"first": c["first"], "second": c["second"], "tie": "tie"}.get(c["verdict"] or "")
        out[c["item"]][c["first"]] = named
    return dict(out)
