"""Answer sets for a best-of-N run, built from real AlpacaEval outputs in ../shared/data/alpaca_eval.

AlpacaEval's annotation files pair each of its 805 instructions with a baseline's output (`output_1`) and a
model's (`output_2`). Three of the files share the baseline gpt4_1106_preview, so each instruction has four real
answers from four systems: gpt4_1106_preview, gpt4, cohere and alpaca-7b (the files agree on the instruction at
each index; an index where they do not is skipped). A set keeps the N shortest-first items whose four answers
together stay under `--max-chars` (the embedded model's context), in file order, and carries no label (AlpacaEval
has no human label of the best of four).

    python examples/make_listwise_sets.py [--items 20] [--max-chars 2400] [-o answers.jsonl]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "alpaca_eval"
FILES = {"gpt4": "gpt4_alpaca_eval_cot_gpt4_turbo_fn.annotations.json",
         "cohere": "cohere_alpaca_eval_gpt4_turbo_fn.annotations.json",
         "alpaca-7b": "alpaca-7b_weighted_alpaca_eval_gpt4_turbo.annotations.json"}
BASELINE = "gpt4_1106_preview"


def answer_sets(items: int, max_chars: int, data: Path = DATA) -> list[dict]:
    rows = {name: json.loads((data / file).read_text(encoding="utf-8")) for name, file in FILES.items()}
    count = min(len(r) for r in rows.values())
    out = []
    for index in range(count):
        first = rows["gpt4"][index]
        if any(r[index]["instruction"] != first["instruction"] or r[index]["generator_1"] != BASELINE
               for r in rows.values()):
            continue
        answers = {BASELINE: first["output_1"], **{name: r[index]["output_2"] for name, r in rows.items()}}
        if sum(len(a) for a in answers.values()) + len(first["instruction"]) > max_chars:
            continue
        out.append({"item": f"alpaca-{index}", "task": first["instruction"], "answers": answers})
        if len(out) == items:
            break
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument("--max-chars", type=int, default=2400)
    parser.add_argument("-o", "--output", default="answers.jsonl")
    args = parser.parse_args()
    sets = answer_sets(args.items, args.max_chars)
    Path(args.output).write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in sets), encoding="utf-8")
    print(f"{len(sets)} answer sets of 4 written to {args.output}")


if __name__ == "__main__":
    main()
