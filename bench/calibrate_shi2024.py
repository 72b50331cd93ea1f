"""Real-data check of `calibrate` (docs/correcting.md): gpt-4-0613 stands in for people on 150 random MT-Bench
items, a cheaper judge scores all items (question x candidate vs vicuna-13b-v1.3), and the target is gpt-4-0613's
own win rate on every item. Prints coverage, width ratio and lambda over 1,000 random samples per judge.
Run: PYTHONPATH=src .venv/bin/python bench/calibrate_shi2024.py [../shared/data/shi2024/verdicts_both_orders.csv]
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np
import polars as pl

from swapjudge.core.ppi import ppi_mean
from swapjudge.probes.calibrate import item_score_frame
from swapjudge.reading.records import records_from_dicts

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "shi2024" / "verdicts_both_orders.csv"
VERDICTS = {"A": "first", "B": "second", "C": "tie", "": None}
BASELINE = "vicuna-13b-v1.3"


def pooled(path: Path, judge: str) -> pl.DataFrame:
    rows = []
    with path.open(newline="") as f:
        for r in csv.DictReader(f):
            if r["benchmark"] != "MTBench" or r["judge"] != judge:
                continue
            cand = r["model_second"] if r["model_first"] == BASELINE else r["model_first"]
            rows.append({"judge": judge, "item": f"{r['question_id']}|{cand}",
                         "first": "candidate" if r["model_first"] == cand else "vicuna",
                         "second": "candidate" if r["model_second"] == cand else "vicuna",
                         "verdict": VERDICTS[r["verdict"]]})
    return item_score_frame(records_from_dicts(rows, allow_unpaired=True).frame, "candidate", "vicuna", "half_credit",
                            source=str(path))


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA
    reference = pooled(path, "gpt-4-0613")
    truth = float(reference.get_column("score").mean())
    print(f"reference gpt-4-0613 on all {reference.height} items: {truth:.4f}")
    rng = np.random.default_rng(2024)
    for judge in ("gpt-3.5-turbo-1106", "gemini-pro"):
        scores = pooled(path, judge)
        both = reference.join(scores, on="item", suffix="_judge")
        y, f = both.get_column("score").to_numpy(), both.get_column("score_judge").to_numpy()
        covered, ratios, lams = 0, [], []
        for _ in range(1000):
            labelled = np.zeros(both.height, dtype=bool)
            labelled[rng.choice(both.height, 150, replace=False)] = True
            result = ppi_mean(y[labelled], f[labelled], f[~labelled])
            covered += result.corrected.low <= truth <= result.corrected.high
            ratios.append(result.width_ratio)
            lams.append(result.lam)
        print(f"{judge}: judge alone {float(scores.get_column('score').mean()):.4f}, {both.height} joint items, "
              f"item correlation {float(np.corrcoef(y, f)[0, 1]):.3f}; 1,000 samples of 150: coverage "
              f"{covered / 1000:.3f}, width / reference-only {np.mean(ratios):.3f}, mean lambda {np.mean(lams):.3f}")


if __name__ == "__main__":
    main()
