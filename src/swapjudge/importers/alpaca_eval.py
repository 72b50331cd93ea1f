"""AlpacaEval annotations: `results/<model>/<annotator>/annotations.json` (or the annotator's cache file).

Schema (tatsu-lab/alpaca_eval; written by annotators/base.py `BaseAnnotatorJSON.save`, a JSON array of
records): `instruction`, `output_1`, `generator_1`, `output_2`, `generator_2`, `annotator`, `preference`,
`raw_completion`, often `dataset`, `price_per_example`, `time_per_example`. `preference` is 1 (output_1
better), 2 (output_2 better), a float in [1, 2] for logprob-weighted annotators, 1.5 (or 0 in old files)
when the outputs are identical, or null when unparsed (annotators/pairwise_evaluator.py). Each pair is
judged once, in one order. The order shown to the judge is randomised per instruction by processors.py
`RandomSwitchTwoColumnsProcessor`, which swaps output_1/output_2 before the call and swaps them (and the
preference) back afterwards, so the stored fields are in the unswitched frame. Where the presented order
survives in the file we use it:
  * `is_switched_outputs` (or `is_switch_output_1_output_2`): true when output_2 was shown first;
  * `referenced_models` (chain-of-thought annotators, processors.py `ChainOfThoughtProcessor`): maps the
    prompt's model identifiers to the unswitched outputs; the identifier of the first-shown output is "m"
    (the configs' `ranking_parser: model_1_name: "m"`), so output_2 was shown first when it maps "m" to
    "output_2";
  * `raw_completion` of the m/M classifier annotators (`alpaca_eval_clf_gpt4_turbo`, and the logprob-weighted
    `weighted_alpaca_eval_gpt4_turbo`, whose top logprobs are used): the token names the winner's presented
    slot, and the stored preference names the winner's output, so together they give the order (not for a
    preference of exactly 1.5).

Otherwise the order is unknown and the row is reported, unless `--order as-stored` says the annotator ran
with `is_randomize_output_order: False` (output_1 shown first). Old releases seeded the switch with Python's
salted `hash()`, so it cannot be recomputed. Swap-consistency cannot be measured from these records (one
order per pair); the first-slot rate can.
"""

from __future__ import annotations

import hashlib
import json
import math
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


def _switched(row: dict[str, Any], preferred: int | None) -> tuple[bool | None, str]:
    """Whether output_2 was shown first, and where that was read from."""
    for column in ("is_switched_outputs", "is_switch_output_1_output_2"):
        value = row.get(column)
        if isinstance(value, bool):
            return value, column
    refs = row.get("referenced_models")
    if isinstance(refs, dict) and refs.get("m") in ("output_1", "output_2"):
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


def read_file(imp: FileImport, *, order: OrderChoice = "recorded", judge_name: str | None = None) -> None:
    imp.notes.append(SINGLE_ORDER_NOTE)
    for _index, where, row in read_json_array(imp):
        missing = [k for k in ("instruction", "generator_1", "generator_2") if row.get(k) is None]
        if missing:
            imp.flag(where, "error", f"missing field {', '.join(missing)}")
            continue
        preferred, usable = _preferred(row.get("preference"))
        switched, source = _switched(row, preferred if usable else None)
        if switched is None:
            if order != "as-stored":
                imp.flag(where, "error", "presentation order unknown (no is_switched_outputs, "
                                         "referenced_models or m/M completion with a decided preference); "
                                         "use --order as-stored if the annotator did not randomise the order")
                continue
            switched, source = False, "as-stored"
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
        imp.add(make_record(
            item=item_id(str(row["instruction"])), first=first, second=second, verdict=verdict,
            judge=judge_name if judge_name is not None else str(row.get("annotator") or ""),
            raw=raw if isinstance(raw, str) or raw is None else json.dumps(raw, ensure_ascii=False),
            preference=row.get("preference"), order_source=source, instruction=row["instruction"],
            dataset=row.get("dataset"), _where=where,
        ))


def import_alpaca_eval(paths: Sequence[Path], *, order: OrderChoice = "recorded",
                       judge_name: str | None = None) -> ImportResult:
    """Presentation records (one per annotation) from AlpacaEval annotation JSON files."""
    return finish(read_paths(paths, FORMAT, read_file, order=order, judge_name=judge_name), pair_check=False)
