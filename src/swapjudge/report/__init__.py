"""Renderers: they take result objects and lay them out; no statistic is computed here."""
