"""FastChat `llm_judge` pairwise judgments (MT-Bench), e.g. `data/mt_bench/model_judgment/gpt-4_pair.jsonl`.

Schema (lm-sys/FastChat, fastchat/llm_judge/common.py, `play_a_match_pair`; written by gen_judgment.py
--mode pairwise-baseline|pairwise-all): one JSON object per line with `question_id`, `model_1`, `model_2`,
`g1_winner`, `g2_winner`, `judge` = [judge model, prompt name], `g1_judgment`, `g2_judgment`, `turn`,
`tstamp`. Game 1 shows model_1 as assistant A, game 2 shows model_2 as A. Winners are already mapped back to
identities: "model_1" / "model_2" (the literal strings), "tie", or "error" (no [[A]]/[[B]]/[[C]] found).
Hand-made files sometimes hold the model names themselves, and human-vote files use tie variants such as
"tie (bothbad)"; FastChat's compute_agreement.py treats any value containing "tie" as a tie, and so do we. A
row from single-answer grading (`m1_score`/`m2_score`, or the `*_single.jsonl` rows of `play_a_match_single`:
`model`, `score`, `judgment`) has no presentation order and is skipped; a file holding nothing else is skipped
with one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from swapjudge.importers.base import FileImport, ImportResult, finish, make_record, pair_key, read_jsonl, read_paths

FORMAT = "fastchat"


def judge_name_of(value: Any) -> str:
    """FastChat stores the judge as [model, prompt name]; join it as `model/prompt`."""
    if isinstance(value, list | tuple):
        return "/".join(str(v) for v in value)
    return "" if value is None else str(value)


def _winner(value: Any, model_1: str, model_2: str) -> str | None:
    """The identity a game's winner names, "tie", or None when there is no usable verdict."""
    if not isinstance(value, str):
        return None
    if value == "model_1" or value == model_1:
        return model_1
    if value == "model_2" or value == model_2:
        return model_2
    if "tie" in value.lower():
        return "tie"
    return None


def _slot(winner: str | None, first: str, second: str) -> str | None:
    if winner is None:
        return None
    if winner == "tie":
        return "tie"
    return "first" if winner == first else "second"


def _single_grading(row: dict[str, Any]) -> bool:
    """A `play_a_match_single` row: one model's answer scored alone (`*_single.jsonl`)."""
    return "model" in row and "score" in row and "model_1" not in row


def read_file(imp: FileImport, *, judge_name: str | None = None) -> None:
    single: list[str] = []
    for _line, where, row in read_jsonl(imp):
        if _single_grading(row):
            single.append(where)
            continue
        if "m1_score" in row or ("winner" in row and "g1_winner" not in row):
            imp.flag(where, "skipped", "single-answer grading (one combined winner, no presentation order)")
            continue
        missing = [k for k in ("question_id", "model_1", "model_2") if row.get(k) is None]
        if missing:
            imp.flag(where, "error", f"missing field {', '.join(missing)}")
            continue
        model_1, model_2 = str(row["model_1"]), str(row["model_2"])
        turn = row.get("turn", 1)
        judge = judge_name if judge_name is not None else judge_name_of(row.get("judge"))
        item = f"{row['question_id']}:turn{turn}"
        games = [(1, model_1, model_2), (2, model_2, model_1)]
        present = [g for g in games if f"g{g[0]}_winner" in row]
        if not present:
            imp.flag(where, "error", "neither g1_winner nor g2_winner present")
            continue
        for game, first, second in present:
            value = row[f"g{game}_winner"]
            winner = _winner(value, model_1, model_2)
            if winner is None:
                imp.flag(where, "null_verdict", f"game {game}: g{game}_winner is {value!r}")
            rec = make_record(
                item=item, first=first, second=second, verdict=_slot(winner, first, second), judge=judge,
                raw=row.get(f"g{game}_judgment"), question_id=row["question_id"], turn=turn, game=game,
                _where=where,
            )
            imp.add(rec)
        if len(present) == 1:
            game = present[0][0]
            imp.flag(where, "game_missing", f"g{3 - game}_winner absent: only game {game} is in the row")
            imp.explained.add(pair_key(imp.records[-1]))
    if single and len(single) == imp.rows:
        imp.flag(str(imp.path), "skipped", f"single-answer grading file ({len(single)} rows, each one model's "
                                           "answer scored alone): no pair, no presentation order")
    else:
        for where in single:
            imp.flag(where, "skipped", "single-answer grading (one model scored alone, no presentation order)")


def import_fastchat(paths: Sequence[Path], *, judge_name: str | None = None) -> ImportResult:
    """Presentation records (two per row: game 1 and game 2) from FastChat pairwise judgment JSONL files."""
    return finish(read_paths(paths, FORMAT, read_file, judge_name=judge_name))
