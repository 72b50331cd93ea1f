"""AlpacaEval annotations: `results/<model>/<annotator>/annotations.json` (or the annotator's cache file).

Schema (tatsu-lab/alpaca_eval; written by annotators/base.py `BaseAnnotatorJSON.save`, a JSON array of
records): `instruction`, `output_1`, `generator_1`, `output_2`, `generator_2`, `annotator`, `preference`,
`raw_completion`, often `dataset`, `price_per_example`, `time_per_example`. `preference` is 1 (output_1
better), 2 (output_2 better), a float in [1, 2] for logprob-weighted annotators, 1.5 (or 0 in old files)
when the outputs are identical, or null when unparsed (annotators/pairwise_evaluator.py). Each pair is
judged once, in one order. The order shown to the judge is randomised per instruction by processors.py
`RandomSwitchTwoColumnsProcessor`, which swaps output_1/output_2 before the call and swaps them (and the
preference) back afterwards, so the stored fields are in the unswitched frame. Where the presented order
survives in the file we use it (`is_switched_outputs`, the judge's ranking in `raw_completion`,
`referenced_models` unless the judge ranked both outputs first, or the m/M token of the classifier annotators);
otherwise AlpacaEval 2's seeded coin is recomputed (`seed_switch`), after checking it against every order the
file records. Identical outputs (a draw AlpacaEval assigns without calling the judge) are skipped, or with
`identical_draws` written as tie records marked `identical_outputs` (AlpacaEval's leaderboard and its
length-controlled fit count them). Each record keeps the two outputs (`first_text`, `second_text`) and the row's
position in the file (`instruction_index`: AlpacaEval's instruction index, the key of its per-instruction
difficulty). Swap-consistency cannot be measured from these records (one order per pair); the first-slot rate can.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from swapjudge.importers.base import FileImport, ImportResult, finish, make_record, read_json_array, read_paths

FORMAT = "alpaca-eval"
OrderChoice = Literal["recorded", "as-stored"]
SINGLE_ORDER_NOTE = (
    "single-order data: each pair was judged in one presentation order only, so swap-consistency and flips "
    "cannot be measured; the first-slot rate and the first/second/tie split can"
)


def item_id(instruction: str) -> str:
    """A short stable id for an instruction (instructions are long free text)."""
    return "ae-" + hashlib.sha256(instruction.encode("utf-8")).hexdigest()[:12]


def _slot_token(raw: Any) -> str | None:
    """"m" or "M": the identifier the judge chose, in the presented frame ("m" = the output shown first).

    With logprobs (weighted annotators) the likelier of the two tokens counts, since the stored preference is
    computed from those logprobs; the sampled text can differ from it.
    """
    if isinstance(raw, str):
        return raw.strip() if raw.strip() in ("m", "M") else None
    if not isinstance(raw, dict):
        return None
    try:
        top = raw["logprobs"]["content"][0]["top_logprobs"]
        scores: dict[str, float] = {str(t["token"]): float(t["logprob"]) for t in top
                                    if t.get("token") in ("m", "M")}
    except (KeyError, IndexError, TypeError, ValueError):
        scores = {}
    if len(scores) == 2 and scores["m"] != scores["M"]:
        return "m" if scores["m"] > scores["M"] else "M"
    if len(scores) == 1:
        return next(iter(scores))
    text = raw.get("text")
    return text.strip() if isinstance(text, str) and text.strip() in ("m", "M") else None


# Identifiers AlpacaEval's ranking prompts give the output shown first and second ("m"/"M" in the AlpacaEval 2
# configs' `ranking_parser`, "model_1"/"model_2" in alpaca_eval_gpt4's prompt).
FIRST_SHOWN = ("m", "model_1")
SECOND_SHOWN = ("M", "model_2")


def seed_switch(instruction: str, seed: int = 0) -> bool:
    """Whether AlpacaEval 2 showed output_2 first: `RandomSwitchTwoColumnsProcessor`'s seeded coin.

    processors.py seeds `random.Random` with the switch column's name + the instruction + the annotator's seed
    (0 for the shipped annotators; 123 is only the processor's own default) and calls
    `utils.random_seeded_choice`, i.e. `.choices([False, True], k=1)[0]`.
    """
    return random.Random("is_switched_outputs" + instruction + str(seed)).choices([False, True], k=1)[0]


def _ranking(raw: Any) -> list[dict[str, Any]] | None:
    """The judge's ranking from `raw_completion`: a dict with `ordered_models` (function-calling annotators) or
    a Python-repr / JSON list of {'model': ..., 'rank': ...} (alpaca_eval_gpt4's ranking parser)."""
    if isinstance(raw, str) and raw.lstrip().startswith(("[", "{")):
        try:
            raw = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError:
                return None
    if isinstance(raw, dict):
        raw = raw.get("ordered_models")
    if not isinstance(raw, list) or not all(isinstance(m, dict) for m in raw):
        return None
    return raw


def _ranking_switch(ranking: list[dict[str, Any]], preferred: int | None) -> bool | None:
    """Whether output_2 was shown first, from the identifier ranked first and the stored preference."""
    top = [m.get("model") for m in ranking if m.get("rank") == 1]
    if len(top) != 1 or preferred not in (1, 2):
        return None
    if top[0] in FIRST_SHOWN:  # the preferred output sat first
        return preferred == 2
    if top[0] in SECOND_SHOWN:
        return preferred == 1
    return None


def _double_first(ranking: list[dict[str, Any]] | None) -> bool:
    """The judge ranked both outputs first: AlpacaEval's `referenced_models` then reuses a stale name."""
    return ranking is not None and sum(1 for m in ranking if m.get("rank") == 1) > 1


def _recorded_switch(row: dict[str, Any], preferred: int | None) -> tuple[bool | None, str]:
    """Whether output_2 was shown first according to the file itself, and where that was read from."""
    for column in ("is_switched_outputs", "is_switch_output_1_output_2"):
        value = row.get(column)
        if isinstance(value, bool):
            return value, column
    ranking = _ranking(row.get("raw_completion"))
    if ranking is not None:
        switched = _ranking_switch(ranking, preferred)
        if switched is not None:
            return switched, "ranking"
    refs = row.get("referenced_models")
    if (not _double_first(ranking) and isinstance(refs, dict) and refs.get("m") in ("output_1", "output_2")
            and set(refs.values()) == {"output_1", "output_2"}):
        return refs["m"] == "output_2", "referenced_models"
    token = _slot_token(row.get("raw_completion"))
    if token is not None and preferred in (1, 2):
        # the preferred output sat in the slot the token names: first for "m", second for "M"
        return (preferred == 2) if token == "m" else (preferred == 1), "raw_completion"
    return None, ""


def _preferred(preference: Any) -> tuple[int | None, bool]:
    """(1, 2 or 0 for tie) from a preference value; second is False when the value is unusable."""
    if isinstance(preference, bool) or not isinstance(preference, int | float):
        return None, False
    value = float(preference)
    if math.isnan(value):
        return None, False
    if value == 0 or value == 1.5:  # 0 is the old encoding of identical outputs
        return 0, True
    if not 1 <= value <= 2:
        return None, False
    return (1 if value < 1.5 else 2), True


# The seed rule is trusted in a file only if it agrees with at least this share of the orders the file records
# (a different seeding gives about half).
SEED_RULE_MIN_AGREEMENT = 0.95


def _identical_draw(row: dict[str, Any], preferred: int | None) -> bool:
    """AlpacaEval gives identical outputs a draw without calling the judge (pairwise_evaluator.py)."""
    return preferred == 0 and row.get("output_1") is not None and row.get("output_1") == row.get("output_2")


def read_file(imp: FileImport, *, order: OrderChoice = "recorded", judge_name: str | None = None,
              seed: int = 0, identical_draws: bool = False) -> None:
    imp.notes.append(SINGLE_ORDER_NOTE)
    rows: list[tuple[str, dict[str, Any], int | None, bool, bool | None, str]] = []
    positions: dict[str, int] = {}
    draws = 0
    for index, where, row in read_json_array(imp):
        missing = [k for k in ("instruction", "generator_1", "generator_2") if row.get(k) is None]
        if missing:
            imp.flag(where, "error", f"missing field {', '.join(missing)}")
            continue
        preferred, usable = _preferred(row.get("preference"))
        if usable and _identical_draw(row, preferred):
            if not identical_draws:
                imp.flag(where, "skipped", "identical outputs, not judged (AlpacaEval counts it as a draw)")
                continue
            draws += 1
        switched, source = _recorded_switch(row, preferred if usable else None)
        rows.append((where, row, preferred, usable, switched, source))
        positions[where] = index
    if draws:
        imp.notes.append(f"{draws} rows with identical outputs written as ties marked identical_outputs: AlpacaEval "
                         "gives them a draw without calling the judge")
    # cross-check the seed rule against every order the file records
    checked = [(sw, seed_switch(str(row["instruction"]), seed)) for _w, row, _p, _u, sw, _s in rows
               if sw is not None]
    agree = sum(1 for recorded, by_seed in checked if recorded == by_seed)
    trusted = not checked or agree >= SEED_RULE_MIN_AGREEMENT * len(checked)
    unrecorded = sum(1 for *_rest, sw, _s in rows if sw is None)
    if checked:
        imp.notes.append(f"seed rule (AlpacaEval 2 switch, seed {seed}) agrees with the recorded order on "
                         f"{agree} of {len(checked)} rows" + ("" if trusted else
                                                              "; not used for rows without a recorded order"))
    elif unrecorded and order != "as-stored":
        imp.notes.append(f"no row records its presentation order: the order of all {unrecorded} rows comes from "
                         f"the AlpacaEval 2 seed rule (seed {seed}) and could not be cross-checked; files "
                         "written by releases that seeded with Python's salted hash() have no recoverable "
                         "order")
    for where, row, preferred, usable, switched, source in rows:
        if switched is None:
            if order == "as-stored":
                switched, source = False, "as-stored"
            elif trusted:
                switched, source = seed_switch(str(row["instruction"]), seed), "seed"
            else:
                imp.flag(where, "error", "presentation order unknown (the file records none for this row and "
                                         "the seed rule disagrees with the orders it records elsewhere); use "
                                         "--order as-stored if the annotator did not randomise the order")
                continue
        if _double_first(_ranking(row.get("raw_completion"))):
            imp.flag(where, "warning", "judge ranked both outputs first; referenced_models is unreliable, "
                                       f"order from {source}; verdict from the stored preference")
        gen_1, gen_2 = str(row["generator_1"]), str(row["generator_2"])
        first, second = (gen_2, gen_1) if switched else (gen_1, gen_2)
        if not usable:
            imp.flag(where, "null_verdict", f"preference is {row.get('preference')!r}")
            verdict = None
        elif preferred == 0:
            verdict = "tie"
        else:
            winner = gen_1 if preferred == 1 else gen_2
            verdict = "first" if winner == first else "second"
        raw = row.get("raw_completion")
        texts = {gen_1: row.get("output_1"), gen_2: row.get("output_2")}
        marked: dict[str, Any] = {"identical_outputs": True} if _identical_draw(row, preferred) else {}
        imp.add(make_record(
            item=item_id(str(row["instruction"])), first=first, second=second, verdict=verdict,
            judge=judge_name if judge_name is not None else str(row.get("annotator") or ""),
            raw=raw if isinstance(raw, str) or raw is None else json.dumps(raw, ensure_ascii=False),
            preference=row.get("preference"), order_source=source, instruction=row["instruction"],
            dataset=row.get("dataset"), instruction_index=positions[where],
            first_text=_text(texts[first]), second_text=_text(texts[second]), **marked, _where=where,
        ))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def import_alpaca_eval(paths: Sequence[Path], *, order: OrderChoice = "recorded",
                       judge_name: str | None = None, seed: int = 0, identical_draws: bool = False) -> ImportResult:
    """Presentation records (one per annotation) from AlpacaEval annotation JSON files; `identical_draws` writes
    the rows whose two outputs are identical (never judged) as ties instead of skipping them."""
    return finish(read_paths(paths, FORMAT, read_file, order=order, judge_name=judge_name, seed=seed,
                             identical_draws=identical_draws), pair_check=False)
