"""swapjudge: pairwise LLM-as-judge evaluation that judges every pair in both orders and reports honestly."""

__version__ = "0.1.0"
