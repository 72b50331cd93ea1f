"""Bridges that let other evaluation frameworks call swapjudge (each needs its framework's extra installed)."""
