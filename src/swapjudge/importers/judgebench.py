"""JudgeBench judge outputs: `outputs/dataset=...,judge_name=...,judge_model=....jsonl`, one line per pair.

Schema (ScalerLab/JudgeBench, run_judge.py `judge_pairs` and utils/judges.py `get_judgment`): the input pair
(`pair_id`, `original_id`, `source`, `question`, `response_model`, `response_A`, `response_B`, `label` =
"A>B" or "B>A") plus `judge_name` and `judgments` = [judgment of (A, B), judgment of (B, A)] (one element
with --single_game). Each judgment is {"judgment": {"judge_model", "prompt", "response"}, "decision"} or
null when the call raised. `decision` is "A>B", "B>A", "A=B" or null, in that call's own presentation frame:
in the second call response_B sits in slot A (utils/metrics.py flips it back before scoring). Identities on
the records are `response_A` and `response_B`; the gold label becomes `label`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from swapjudge.importers.arena_hard import read_game
from swapjudge.importers.base import FileImport, ImportResult, finish, make_record, pair_key, read_jsonl, read_paths

FORMAT = "judgebench"
RESPONSE_A, RESPONSE_B = "response_A", "response_B"
_GOLD = {"A>B": RESPONSE_A, "B>A": RESPONSE_B, "A=B": "tie"}


def _judge_model(row: dict[str, Any], path: Path) -> str | None:
    for game in row.get("judgments") or []:
        if isinstance(game, dict) and isinstance(game.get("judgment"), dict):
            model = game["judgment"].get("judge_model")
            if model:
                return str(model)
    match = re.search(r"judge_model=([^,]+?)(?:\.jsonl)?$", path.name)
    return match.group(1) if match else None


def _raw(game: dict[str, Any]) -> str | None:
    judgment = game.get("judgment")
    if isinstance(judgment, dict):
        text = judgment.get("response")
        if isinstance(text, str):
            return text
        if "scores" in judgment:  # reward-model judges keep two scores, not text
            return str(judgment["scores"])
    return None


def read_file(imp: FileImport, *, judge_name: str | None = None) -> None:
    for _line, where, row in read_jsonl(imp):
        if row.get("pair_id") is None or not isinstance(row.get("judgments"), list):
            imp.flag(where, "error", "missing `pair_id` or `judgments` list")
            continue
        games = row["judgments"]
        if not games or len(games) > 2:
            imp.flag(where, "error", f"`judgments` has {len(games)} entries; expected 2")
            continue
        if judge_name is not None:
            judge = judge_name
        else:
            model = _judge_model(row, imp.path)
            judge = "/".join(str(p) for p in (row.get("judge_name"), model) if p)
        gold = row.get("label")
        label = _GOLD.get(str(gold).replace(" ", "")) if gold is not None else None
        if gold is not None and label is None:
            imp.flag(where, "warning", f"label {gold!r} is not A>B, B>A or A=B; written without a label")
        slots = [(RESPONSE_A, RESPONSE_B), (RESPONSE_B, RESPONSE_A)]
        for index, raw_game in enumerate(games):
            first, second = slots[index]
            game, decision, mapped = read_game(imp, where, index + 1, raw_game, "decision", "judgment",
                                               "the judge call raised")
            imp.add(make_record(
                item=row["pair_id"], first=first, second=second, verdict=mapped[0] if mapped else None,
                judge=judge, label=label, raw=_raw(game), strength=mapped[1] if mapped else None,
                decision=decision if isinstance(decision, str) else None,
                source=row.get("source"), original_id=row.get("original_id"), game=index + 1, _where=where,
            ))
        if len(games) == 1:
            imp.flag(where, "game_missing", "one judgment only (run with --single_game?): no swapped call")
            imp.explained.add(pair_key(imp.records[-1]))


def import_judgebench(paths: Sequence[Path], *, judge_name: str | None = None) -> ImportResult:
    """Presentation records (two per pair) from JudgeBench output JSONL files."""
    return finish(read_paths(paths, FORMAT, read_file, judge_name=judge_name))
