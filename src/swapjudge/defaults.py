"""Default values the CLI shows in its options and help, kept in a module with no heavy import (each is used
from its home module too: config, workflows.report, drift.adaptive_replay, judges.model_files)."""

from __future__ import annotations

DEFAULT_STORE = "swapjudge.db"  # the run store, in the working directory
DEFAULT_REPORT_ROUNDS = 200  # bootstrap rounds of the ranking in a report
ADAPTIVE_THRESHOLDS: tuple[float, ...] = (0.6, 0.7, 0.8, 0.9, 0.95)  # `swapjudge adaptive` replays these
DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"  # the local backend's packaged judge model
