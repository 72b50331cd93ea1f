"""Probes for what swapping cannot see."""
