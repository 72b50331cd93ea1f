"""arena-hard-auto model judgments: `data/<bench>/model_judgment/<judge>/<model>.jsonl`, a line a question.

Schema (lmarena/arena-hard-auto): v2, src/arenahard/gen_judgment.py `judgment()`: `uid`, `category`,
`judge`, `model`, `baseline`, `games` = [game 1, game 2], each {"score", "judgment", "prompt"} or null when
the judge call failed. v0.1, gen_judgment.py: `question_id`, `model`, `judge`, `games` of {"user_prompt",
"judgment", "score"}; the baseline is not in the row (it is the config's `baseline_model`; pass
`--baseline`). Game 1 puts the baseline in slot A and the model in slot B; game 2 swaps them. `score` is the
verdict label the judge printed ([[A>>B]], [[A>B]], [[A=B]], [[B>A]], [[B>>A]]; show_result.py also accepts
A<B, A<<B, B=A, B<A, B<<A) or null when no label was found. `>>`/`<<` is a strong preference: kept as
`strength` = 2 (much better; one `>`: 1, slightly better; ties: null, docs/records.md) with the label itself
in `score`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from swapjudge.importers.base import FileImport, ImportResult, finish, make_record, pair_key, read_jsonl, read_paths

FORMAT = "arena-hard"


def label_verdict(label: Any) -> tuple[str, int | None] | None:
    """Map an arena-style label (A>>B, A>B, A=B, B>A, ... in the game's own A/B frame) to (slot, strength):
    strength 2 for a strong preference (`>>`, `<<`), 1 for a slight one, None for a tie.

    Returns None when the label is missing or not one of the known forms.
    """
    if not isinstance(label, str):
        return None
    text = label.strip().strip("[]").replace(" ", "").upper()
    if len(text) < 3 or text[0] not in "AB" or text[-1] not in "AB" or text[0] == text[-1]:
        return None
    left, op = text[0], text[1:-1]
    if op in ("=", "=="):
        return ("tie", None)
    strength = {">": 1, ">>": 2, "<": 1, "<<": 2}.get(op)
    if strength is None:
        return None
    left_wins = op.startswith(">")
    winner = left if left_wins else ("B" if left == "A" else "A")
    return ("first" if winner == "A" else "second", strength)


def read_game(imp: FileImport, where: str, number: int, game: Any, field: str, unit: str,
              failed: str) -> tuple[dict[str, Any], Any, tuple[str, int | None] | None]:
    """Game `number` of a two-game row (arena-hard's `games`, JudgeBench's `judgments`): its dict (empty when the
    call failed, which is flagged), the raw label in `field`, and that label as (slot, strength); None, flagged,
    when the label is not one of the known forms."""
    if not isinstance(game, dict):
        imp.flag(where, "null_verdict", f"{unit} {number} is null ({failed})")
        game = {}
    label = game.get(field)
    mapped = label_verdict(label)
    if game and mapped is None:
        imp.flag(where, "null_verdict", f"{unit} {number}: {field} is {label!r}")
    return game, label, mapped


def _judgment_text(game: dict[str, Any]) -> str | None:
    text = game.get("judgment")
    if isinstance(text, dict):  # v2 stores the API output object; its text is under "answer"
        text = text.get("answer", text.get("response"))
    return text if isinstance(text, str) else None


def read_file(imp: FileImport, *, baseline: str | None = None, judge_name: str | None = None) -> None:
    for _line, where, row in read_jsonl(imp):
        item = row.get("uid", row.get("question_id"))
        base = row.get("baseline", baseline)
        missing = [name for name, value in (("uid/question_id", item), ("model", row.get("model")),
                                            ("games", row.get("games"))) if value is None]
        if missing:
            imp.flag(where, "error", f"missing field {', '.join(missing)}")
            continue
        if base is None:
            imp.flag(where, "error", "no `baseline` field in the row and no baseline given (--baseline)")
            continue
        games = row["games"]
        if not isinstance(games, list) or not games:
            imp.flag(where, "error", "`games` is not a non-empty list")
            continue
        if len(games) > 2:
            imp.flag(where, "error", f"`games` has {len(games)} entries; expected 2")
            continue
        model, base = str(row["model"]), str(base)
        judge = judge_name if judge_name is not None else str(row.get("judge") or "")
        slots = [(base, model), (model, base)]  # game 1: baseline in A; game 2: swapped
        for index, raw_game in enumerate(games):
            first, second = slots[index]
            game, label, mapped = read_game(imp, where, index + 1, raw_game, "score", "game", "the judge call failed")
            imp.add(make_record(
                item=item, first=first, second=second, verdict=mapped[0] if mapped else None, judge=judge,
                raw=_judgment_text(game), strength=mapped[1] if mapped else None,
                score=label if isinstance(label, str) else None, category=row.get("category"),
                game=index + 1, _where=where,
            ))
        if len(games) == 1:
            imp.flag(where, "game_missing", "only game 1 is in the row (the swapped game 2 is absent)")
            imp.explained.add(pair_key(imp.records[-1]))


def import_arena_hard(paths: Sequence[Path], *, baseline: str | None = None,
                      judge_name: str | None = None) -> ImportResult:
    """Presentation records (two per row) from arena-hard-auto model judgment JSONL files."""
    return finish(read_paths(paths, FORMAT, read_file, baseline=baseline, judge_name=judge_name))
