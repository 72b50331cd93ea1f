"""Judge backends: each sees only a rendered prompt with two neutral slots and returns a positional verdict."""

from swapjudge.judges.base import Judge, JudgeReply, JudgeRequest, Verdict

__all__ = ["Judge", "JudgeReply", "JudgeRequest", "Verdict"]
