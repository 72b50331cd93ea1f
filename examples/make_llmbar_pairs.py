"""Regenerate examples/llmbar_natural_30.jsonl from the LLMBar copy in ../shared/data/llmbar.

Selection (documented, reproducible, no judgement involved): the first 30 pairs, by index 0..29, of
`dataset__LLMBar__Natural.json` (expert gold labels). Item ids keep the source index: `llmbar-natural-NNN`.
Source: github.com/princeton-nlp/LLMBar at commit 900616bff90b6c6c8e1681f7d079250637c55992, license MIT.

    python examples/make_llmbar_pairs.py [--shared ../shared] [--out examples/llmbar_natural_30.jsonl]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

SOURCE = "llmbar/dataset__LLMBar__Natural.json"
COUNT = 30


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parent.parent
    parser.add_argument("--shared", type=Path, default=root.parent / "shared")
    parser.add_argument("--out", type=Path, default=root / "examples" / "llmbar_natural_30.jsonl")
    args = parser.parse_args()
    source = args.shared / "data" / SOURCE
    if not source.is_file():
        raise SystemExit(f"{source} not found: the shared data is needed (see ../shared/data/README.md)")
    pairs = json.loads(source.read_text(encoding="utf-8"))
    with args.out.open("w", encoding="utf-8") as out:
        for index, pair in enumerate(pairs[:COUNT]):
            row = {
                "item": f"llmbar-natural-{index:03d}",
                "prompt": pair["input"],
                "answers": {"output_1": pair["output_1"], "output_2": pair["output_2"]},
                "label": f"output_{pair['label']}",
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {COUNT} pairs to {args.out}")


if __name__ == "__main__":
    main()
