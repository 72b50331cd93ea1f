"""Across runs and months: history, compare, releases, anchored scoring, adaptive-swap analysis."""
