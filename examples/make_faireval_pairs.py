"""Write examples/faireval_20.jsonl: the first 20 FairEval pairs (human labels) from LLMBar, as a pairs file.

Source: ../shared/data/llmbar/dataset__Processed__FairEval.json (github.com/princeton-nlp/LLMBar at commit
900616bff90b6c6c8e1681f7d079250637c55992, MIT). `output_1`/`output_2` become systems `out1`/`out2`; the label
names the better one. Run from the project root: python examples/make_faireval_pairs.py
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT.parent / "shared" / "data" / "llmbar" / "dataset__Processed__FairEval.json"


def main() -> None:
    rows = json.loads(SOURCE.read_text(encoding="utf-8"))[:20]
    out = ROOT / "examples" / "faireval_20.jsonl"
    with out.open("w", encoding="utf-8") as f:
        for i, r in enumerate(rows):
            rec = {
                "item": f"faireval-{i:03d}",
                "prompt": r["input"],
                "answers": {"out1": r["output_1"], "out2": r["output_2"]},
                "label": f"out{r['label']}",
            }
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(f"wrote {out} ({len(rows)} pairs)")


if __name__ == "__main__":
    main()
