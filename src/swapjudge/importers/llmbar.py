"""LLMBar evaluator results: `Dataset/<set>/evaluators/<model>/<method>/result.json`.

Schema (princeton-nlp/LLMBar, LLMEvaluator/evaluate.py `annotate` and `__main__`): a JSON array of the
dataset instances (`input`, `output_1`, `output_2`, `label` 1 or 2) each with `results`, a list whose dict
entries are rounds {"swap = False": {...}, "swap = True": {...}}; for methods with auxiliary prompts
(Metrics, Reference) the list also holds [text, finish_reason] pairs before the round, which are not
verdicts. With `swap = False` output_1 is shown first; with `swap = True` output_2 is. Each side's `winner`
is already mapped back to the output index ("1", "2") or null when the completion matched no parsing rule;
`completion` is [text, reason]. Swap-based methods (Swap, Swap_CoT) have a second round (the synthesis) when
the first round disagreed; the evaluator scores the last round, so `--round last` is the default and
`--round first` takes the initial one. Rating methods (`score_1`/`score_2`) derive both "sides" from two
scores with no presentation order: skipped. Identities on the records are `output_1` and `output_2`; `label`
becomes the identity of the better output.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from swapjudge.importers.base import (
    FileImport,
    ImportResult,
    finish,
    make_record,
    pair_key,
    read_json_array,
    read_paths,
)

FORMAT = "llmbar"
RoundChoice = Literal["first", "last"]
OUTPUT_1, OUTPUT_2 = "output_1", "output_2"
SIDES = (("swap = False", OUTPUT_1, OUTPUT_2), ("swap = True", OUTPUT_2, OUTPUT_1))


def names_from_path(path: Path) -> tuple[str, str]:
    """(dataset, judge) from `.../<dataset>/evaluators/<model>/<method>/result.json`, else (stem, stem)."""
    parts = path.parts
    if "evaluators" in parts[:-1]:
        at = len(parts) - 1 - parts[::-1].index("evaluators")
        dataset = parts[at - 1] if at >= 1 else path.stem
        judge = "/".join(parts[at + 1:-1]) or path.stem
        return dataset, judge
    return path.parent.name or path.stem, path.parent.name or path.stem


def _rounds(results: list[Any]) -> list[dict[str, Any]]:
    return [r for r in results if isinstance(r, dict) and any(side in r for side, _, _ in SIDES)]


def read_file(imp: FileImport, *, round_choice: RoundChoice = "last", judge_name: str | None = None) -> None:
    dataset, path_judge = names_from_path(imp.path)
    judge = judge_name if judge_name is not None else path_judge
    for index, where, inst in read_json_array(imp):
        results = inst.get("results")
        if not isinstance(results, list):
            imp.flag(where, "error", "missing `results` list")
            continue
        rounds = _rounds(results)
        if any("score_1" in r for r in results if isinstance(r, dict)):
            imp.flag(where, "skipped", "rating evaluator (two independent scores, no presentation order)")
            continue
        if not rounds:
            imp.flag(where, "error", "no round with `swap = False`/`swap = True` in `results`")
            continue
        chosen = rounds[0] if round_choice == "first" else rounds[-1]
        gold = inst.get("label")
        label = {"1": OUTPUT_1, "2": OUTPUT_2}.get(str(gold))
        if gold is not None and label is None:
            imp.flag(where, "warning", f"label {gold!r} is not 1 or 2; written without a label")
        written = 0
        for side, first, second in SIDES:
            if side not in chosen:
                imp.flag(where, "game_missing", f"round has no `{side}` entry")
                continue
            entry = chosen[side] if isinstance(chosen[side], dict) else {}
            winner = entry.get("winner")
            # winners are output indices: output_1 won -> the slot output_1 sat in
            verdict = {"1": "first" if first == OUTPUT_1 else "second",
                       "2": "first" if first == OUTPUT_2 else "second"}.get(str(winner))
            if verdict is None:
                imp.flag(where, "null_verdict", f"`{side}` winner is {winner!r}")
            completion = entry.get("completion")
            raw = completion[0] if isinstance(completion, list) and completion else completion
            imp.add(make_record(
                item=f"{dataset}:{index}", first=first, second=second, verdict=verdict, judge=judge,
                label=label, raw=raw if isinstance(raw, str) else None, dataset=dataset, index=index,
                llmbar_round=rounds.index(chosen), rounds=len(rounds), _where=where,
            ))
            written += 1
        if written == 1:
            imp.explained.add(pair_key(imp.records[-1]))


def import_llmbar(paths: Sequence[Path], *, round_choice: RoundChoice = "last",
                  judge_name: str | None = None) -> ImportResult:
    """Presentation records (two per instance: swap = False, swap = True) from LLMBar result.json files."""
    return finish(read_paths(paths, FORMAT, read_file, round_choice=round_choice, judge_name=judge_name))
