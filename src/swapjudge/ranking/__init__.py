"""Ranking many systems: tie-aware Bradley-Terry fits with item-bootstrap intervals."""
