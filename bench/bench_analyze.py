"""Benchmark: `swapjudge analyze` end to end (load, validate, analyse, JSON out) on generated records.

Generates 100k and 1M presentation records (half as many pairs, four judges, a few systems, ties and nulls),
runs the CLI on each in a fresh process, and prints wall time and peak memory. Targets on a 2-core machine:
1M records under 3 s and under 1.5 GB, growing linearly.
    python bench/bench_analyze.py [--sizes 100000 1000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

JUDGES = ["judge-a", "judge-b", "judge-c", "judge-d"]
SYSTEMS = ["baseline", "v1", "v2", "v3", "v4", "v5"]
VERDICTS = ["first", "second", "tie", None]


def generate(path: Path, n_records: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    with path.open("w") as f:
        for k in range(n_records // 2):
            judge = JUDGES[k % len(JUDGES)]
            x, y = rng.sample(SYSTEMS, 2)
            item = f"q{k // len(JUDGES)}"
            for first, second in ((x, y), (y, x)):
                verdict = rng.choices(VERDICTS, weights=(45, 40, 14, 1))[0]
                f.write(json.dumps({"item": item, "first": first, "second": second, "verdict": verdict,
                                    "judge": judge}) + "\n")


def run(path: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one `swapjudge analyze --format json` in a fresh process."""
    cli = Path(sys.executable).parent / "swapjudge"
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    out = subprocess.run([str(cli), "analyze", str(path), "--format", "json", "--min-consistency", "0"],
                         capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"analyze failed: {out.stderr.strip()}")
    json.loads(out.stdout)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None, help="Directory to keep the generated files in.")
    args = parser.parse_args()
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="swapjudge-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"cpus: {os.cpu_count()}  python: {sys.version.split()[0]}")
    results = []
    for size in args.sizes:
        path = workdir / f"records_{size}.jsonl"
        if not path.exists():
            generate(path, size)
        mb = path.stat().st_size / 1e6
        runs = [run(path) for _ in range(args.repeat)]
        best = min(w for w, _ in runs)
        peak = max(m for _, m in runs)
        results.append((size, best))
        print(f"{size:>9,} records ({mb:6.1f} MB): best of {args.repeat} {best:6.2f} s, "
              f"peak RSS {peak:7.0f} MiB, {size / best / 1e6:5.2f} M records/s")
    if len(results) >= 2:
        (n0, t0), (n1, t1) = results[0], results[-1]
        print(f"growth: {n1 / n0:.0f}x records -> {t1 / t0:.1f}x time")


if __name__ == "__main__":
    main()
