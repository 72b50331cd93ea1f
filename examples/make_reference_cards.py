"""Regenerate the Shi et al. (2024) reference cards (src/swapjudge/suites/references/shi2024.json) from the copy
of their published verdicts in ../shared/data/shi2024.

Each judge of `verdicts_both_orders.csv` gets a card with one subset per benchmark (MTBench: 80 questions x 30
models against vicuna-13b-v1.3; DevBench: 112 items x 10 models against the human reference), made by the same
code as a live card (`swapjudge.workflows.card.subset_card`: `analyze` on the judge's records); repeat stability
comes from `repetition_sample_verdicts_both_orders.csv` (three runs of a sample) where the judge is in it, and the
source repository's own per-call log line ("N out of M answers are consistent", per judge call) is kept beside the
per-pair counts. The tables carry no labels and no answer texts: no accuracy, no length probe, and no pair that
could be matched to another suite's.
Source: github.com/Slimshilin/Position-Bias-Analyzer at commit 9f8b7e8e83862cf1ffd9dd2c33f589262efc66ee, MIT.

    python examples/make_reference_cards.py [--shared ../shared] [--out src/swapjudge/suites/references]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from swapjudge.importers import import_files, per_call_consistency
from swapjudge.probes.judge_card import SubsetInfo
from swapjudge.workflows.card import subset_card
from swapjudge.workflows.probe import repeat

SOURCE = "github.com/Slimshilin/Position-Bias-Analyzer at commit 9f8b7e8e83862cf1ffd9dd2c33f589262efc66ee"
LICENCE = "MIT (the Position-Bias-Analyzer repository)"
MEANING = {"MTBench": "no label: MT-Bench questions, 30 models each against vicuna-13b-v1.3 (Shi et al. 2024)",
           "DevBench": "no label: DevBench items, 10 models each against the human-written reference (Shi et al. 2024)"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parent.parent
    parser.add_argument("--shared", type=Path, default=root.parent / "shared")
    parser.add_argument("--out", type=Path, default=root / "src" / "swapjudge" / "suites" / "references")
    args = parser.parse_args()
    data = args.shared / "data" / "shi2024"
    table, repeats = data / "verdicts_both_orders.csv", data / "repetition_sample_verdicts_both_orders.csv"
    for path in (table, repeats):
        if not path.is_file():
            raise SystemExit(f"{path} not found: the shared data is needed (see ../shared/data/README.md)")
    records = import_files("shi2024", [table]).records
    repeated = import_files("shi2024", [repeats]).records
    logs = {row.judge: row for row in per_call_consistency(records)}
    cards = []
    for judge in sorted({r["judge"] for r in records}):
        benchmark, model = judge.split("/", 1)
        rows = [r for r in records if r["judge"] == judge]
        info = SubsetInfo(benchmark, f"shi2024/{benchmark}", f"{SOURCE}: verdicts_both_orders.csv", LICENCE,
                          MEANING[benchmark])
        subset = subset_card(info, rows, keep_pairs=False).to_dict()
        again = [r for r in repeated if r["judge"] == judge]
        stability = repeat(again, judge=judge)[0].to_dict() if again else None
        log = logs[judge]
        cards.append({
            "kind": "reference_card", "judge": model, "source": "Shi et al. 2024",
            "subsets": [subset],
            "repeat": None if stability is None else {"sample": "repetition_sample_verdicts_both_orders.csv",
                                                      "stability": stability},
            "published": {"log_file": f"repo_logs/{benchmark}__{model}.log.txt", "log_line": log.log_line(),
                          "per_call_consistent": log.consistent, "parsed_calls": log.parsed_calls,
                          "calls": log.calls},
            "note": "per pair (both calls parsed), as every card counts; the source's own log counts judge calls"})
    payload = {"source": SOURCE, "licence": LICENCE, "cards": cards}
    out = args.out / "shi2024.json"
    out.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(cards)} reference cards to {out}")


if __name__ == "__main__":
    main()
