"""What a run records so that later runs stay comparable (judge model and version, the rubric in effect and its
hash, the prompt template's hash, the schema and the tie policy), and the store opened with that knowledge.

The store keeps provenance in columns; it does not know prompt templates or backends, so whoever opens it for
use hands it `stored_provenance`, and a run registered without provenance (by a swapjudge older than the
columns) gets it filled in from its stored configuration when the store is opened this way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swapjudge.config import text_hash
from swapjudge.errors import ConfigError
from swapjudge.judges.prompts import default_rubric, template_hash
from swapjudge.judges.registry import supports_structured
from swapjudge.store import Store


def run_provenance(config: dict[str, Any], *, structured: bool) -> dict[str, Any]:
    """The provenance columns (all but the pair set's hash) from a normalised configuration: the rubric in
    effect is the built-in one when none is configured."""
    judge = config.get("judge") or {}
    schema = str(config.get("schema") or "forced_choice")
    allow_tie = schema == "allow_tie"
    rubric = (config.get("rubric") or {}).get("text") or default_rubric(allow_tie)
    version = judge.get("version")
    return {
        "judge_model": judge.get("model"),
        "judge_version": None if version is None else str(version),
        "rubric_text": rubric,
        "rubric_hash": text_hash(rubric),
        "template_hash": template_hash(
            allow_tie=allow_tie, chain_of_thought=bool(config.get("chain_of_thought")), structured=structured,
            graded=judge.get("verdict_scale") == "graded",
        ),
        "schema": schema,
        "tie_policy": str(config.get("tie_policy") or "half_credit"),
    }


def stored_provenance(config: dict[str, Any]) -> dict[str, Any]:
    """Provenance derived from a stored configuration; whether the verdict was asked for as JSON follows the
    backend's support, as the runner decides it (plain text when the backend cannot be loaded here)."""
    if not config:
        return {}
    if config.get("protocol") == "listwise":
        return {}  # a listwise run registers its provenance itself (runner.listwise_run)
    judge = config.get("judge") or {}
    structured = False
    if judge.get("structured_output", True) and judge.get("backend"):
        try:
            structured = supports_structured(str(judge["backend"]))
        except ConfigError:
            structured = False
    return run_provenance(config, structured=structured)


def open_store(path: str | Path, *, read_only: bool = False) -> Store:
    """The run store, with runs registered without provenance given theirs (`stored_provenance`); `read_only`:
    an existing store, read without writing to it (see `StoreFile`)."""
    return Store(path, provenance_of=stored_provenance, read_only=read_only)
