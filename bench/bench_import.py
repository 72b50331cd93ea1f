"""Benchmark: `swapjudge import` end to end (read, convert, check pairs, write) on the Shi et al. table.

Copies ../shared/data/shi2024/verdicts_both_orders.csv (25,600 calls) `--copies` times with distinct judge
names (so every copy is a separate set of pairs), runs `swapjudge import shi2024 ... -o` in a fresh process, and
prints wall time, records per second and peak memory. No target is set; the figure shows where imports stand
next to `analyze` (bench_analyze.py).
    python bench/bench_import.py [--copies 1 10]
"""

from __future__ import annotations

import argparse
import csv
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT.parent / "shared" / "data" / "shi2024" / "verdicts_both_orders.csv"


def build(path: Path, copies: int) -> int:
    with SOURCE.open(newline="") as f:
        rows = list(csv.DictReader(f))
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        for k in range(copies):
            for row in rows:
                writer.writerow({**row, "judge": f"{row['judge']}#{k}"})
    return len(rows) * copies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 10])
    args = parser.parse_args()
    if not SOURCE.exists():
        sys.exit(f"missing {SOURCE}")
    cli = str(Path(sys.executable).parent / "swapjudge")
    with tempfile.TemporaryDirectory() as tmp:
        for copies in args.copies:
            table = Path(tmp) / f"shi_x{copies}.csv"
            n = build(table, copies)
            out = Path(tmp) / "records.jsonl"
            start = time.perf_counter()
            proc = subprocess.run([cli, "import", "shi2024", str(table), "-o", str(out), "--max-listed", "0"],
                                  capture_output=True, text=True)
            wall = time.perf_counter() - start
            if proc.returncode != 0:
                sys.exit(proc.stderr)
            peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            print(f"{n:>9,} calls: {wall:6.2f} s  {n / wall:>9,.0f} calls/s  peak {peak_mb:,.0f} MB "
                  f"(peak is the largest child so far)")


if __name__ == "__main__":
    main()
