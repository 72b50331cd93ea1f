"""The best-of-N prompt frame and its verdict parser: N answers named by slot only ("Answer 1" .. "Answer N"),
never by system, each framed by tags carrying a code that none of the texts contains, and a reply read as
"Answer 3", "[[3]]", "Best answer: 3" or JSON {"best": 3}. The embedded judge reads the pick from the next-token
probabilities of the N slot labels after `PICK_PREFIX` instead."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from swapjudge.judges.prompts import code_is_free, code_word

PROMPT_VERSION = "swapjudge-listwise-v1"
PICK_PREFIX = "Best answer: "

RUBRIC = ("Judge which answer best follows the user's instruction: correct, helpful, complete and honest. Style "
          "matters only when the answers are otherwise equal. The order of the answers means nothing.")


@dataclass(frozen=True)
class ListwisePrompt:
    """One rendered best-of-N call: `system` (shared by every call), `user` (the task and the N answers by slot),
    the slot labels ("1".."N") and the hash of what the judge saw."""

    system: str
    user: str
    labels: tuple[str, ...]
    prompt_hash: str
    prefix: str = PICK_PREFIX


def render_listwise_system(n: int, rubric: str = RUBRIC) -> str:
    return (f"You compare {n} answers to one user instruction and pick the best one.\n{rubric}\n"
            f"Reply with one line `{PICK_PREFIX}K`, where K is the number of the best answer (1 to {n}), "
            "and nothing else.")


def frame_code(task: str, answers: Sequence[str]) -> str:
    """A tag code derived from the texts that none of them contains (so an answer cannot close its frame)."""
    texts = (task, *answers)
    seed = hashlib.sha256("\x00".join(texts).encode("utf-8")).digest()
    for attempt in range(64):
        code = code_word(hashlib.sha256(seed + bytes([attempt])).digest())
        if code_is_free(code, texts):
            return code
    raise ValueError("no free frame code")  # 64 codes of 4 syllables all inside the texts: not seen in practice


def render_listwise_user(task: str, answers: Sequence[str]) -> str:
    code = frame_code(task, answers)
    parts = [f"<instruction-{code}>\n{task}\n</instruction-{code}>"]
    for slot, text in enumerate(answers, start=1):
        parts.append(f"<answer-{slot}-{code}>\n{text}\n</answer-{slot}-{code}>")
    parts.append(f"Which answer is best, 1 to {len(answers)}? Reply `{PICK_PREFIX}K`.")
    return "\n\n".join(parts)


def render(task: str, answers: Sequence[str], rubric: str = RUBRIC) -> ListwisePrompt:
    """The call for `answers` in slot order; nothing in it names a system."""
    n = len(answers)
    system, user = render_listwise_system(n, rubric), render_listwise_user(task, answers)
    digest = hashlib.sha256(f"{PROMPT_VERSION}\x00{system}\x00{user}".encode()).hexdigest()[:16]
    return ListwisePrompt(system, user, tuple(str(s) for s in range(1, n + 1)), digest)


_JSON = re.compile(r"\{.*\}", re.DOTALL)
_PATTERNS = (
    re.compile(r"\[\[\s*(\d+)\s*\]\]"),
    re.compile(r"best\s+answer\s*(?:is|:)?\s*(?:answer\s*)?#?\s*(\d+)\b", re.IGNORECASE),
    re.compile(r"\banswer\s*#?\s*(\d+)\b", re.IGNORECASE),
)
_JSON_KEYS = ("best", "pick", "winner", "answer", "choice")


def parse_pick(text: str, n: int) -> int | None:
    """The 1-based slot a reply names, or None when it names none, names one outside 1..N, or names several
    different ones in the first form it uses (an ambiguous reply is no verdict)."""
    if not text or not text.strip():
        return None
    found = _JSON.search(text)
    if found:
        try:
            data = json.loads(found.group(0))
        except ValueError:
            data = None
        if isinstance(data, dict):
            for key in _JSON_KEYS:
                if key in data:
                    value = data[key]
                    if isinstance(value, bool):
                        return None
                    if isinstance(value, str):
                        digits = re.fullmatch(r"\s*(?:answer\s*)?(\d+)\s*", value, re.IGNORECASE)
                        value = int(digits.group(1)) if digits else None
                    return value if isinstance(value, int) and 1 <= value <= n else None
    for pattern in _PATTERNS:
        picks = {int(m) for m in pattern.findall(text)}
        if picks:
            if len(picks) != 1:
                return None
            pick = picks.pop()
            return pick if 1 <= pick <= n else None
    bare = re.fullmatch(r"\s*(\d+)\s*\.?\s*", text)
    if bare:
        pick = int(bare.group(1))
        return pick if 1 <= pick <= n else None
    return None

