"""Benchmark: `swapjudge decide` on 100,000 items, and the confidence sequence updated after each of 10,000 items.

1. Writes 100,000 items (200,000 calls, both orders) to a records file and times `swapjudge decide` in a fresh
   process, fixed and sequential, and the library call alone.
2. Feeds 10,000 item scores to `BettingSequence.update` one at a time (the incremental update: O(grid) per item,
   whatever the length so far) and, for comparison, refits the whole sequence from scratch after each of the
   first 2,000 items (what a tool without the incremental state would do).
    python bench/bench_decide.py [--items 100000] [--updates 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from swapjudge.decision.bounds import BettingSequence, betting_sequence  # noqa: E402


def write_records(path: Path, items: int, seed: int = 3) -> None:
    rng = np.random.default_rng(seed)
    u = rng.random(items)
    with path.open("w") as fh:
        for i in range(items):
            a, b = ("first", "second") if u[i] < 0.45 else (("second", "first") if u[i] < 0.75 else ("first", "first"))
            fh.write(json.dumps({"item": f"q{i}", "first": "v2", "second": "v1", "verdict": a}) + "\n")
            fh.write(json.dumps({"item": f"q{i}", "first": "v1", "second": "v2", "verdict": b}) + "\n")


def cli_seconds(args: list[str], cwd: Path) -> tuple[float, int, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "swapjudge", *args], capture_output=True, text=True, cwd=cwd,
                         env=env)
    return time.perf_counter() - start, out.returncode, out.stdout.splitlines()[0] if out.stdout else out.stderr


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--updates", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        write_records(d / "records.jsonl", args.items)
        for monitoring in ("fixed", "sequential"):
            (d / f"{monitoring}.json").write_text(json.dumps({"candidate": "v2", "incumbent": "v1",
                                                              "items": args.items, "monitoring": monitoring}))
            decision = f"{monitoring}.yaml"
            (d / decision).write_text((d / f"{monitoring}.json").read_text())  # JSON is YAML
            seconds, code, head = cli_seconds(["decide", decision, "records.jsonl", "--store", "ledger.db"], d)
            print(f"swapjudge decide, {args.items:,} items, {monitoring}: {seconds:.2f} s (exit {code}): {head}")
        from swapjudge.workflows.decide import decide

        for monitoring in ("fixed", "sequential"):
            start = time.perf_counter()
            decide(d / "records.jsonl", d / f"{monitoring}.yaml")
            print(f"  library decide(), {monitoring}: {time.perf_counter() - start:.2f} s")
    x = np.random.default_rng(1).choice([0.0, 0.5, 1.0], size=args.updates, p=[0.3, 0.3, 0.4])
    seq = BettingSequence(0.5, 0.05)
    start = time.perf_counter()
    for v in x:
        seq.update(float(v))
    inc = time.perf_counter() - start
    print(f"sequence updated after each of {args.updates:,} items (incremental): {inc:.3f} s, "
          f"{1e6 * inc / args.updates:.1f} us per update; bounds {seq.low:.3f} to {seq.high:.3f}, "
          f"shipped at item {seq.ship_at}")
    refits = min(2000, args.updates)
    start = time.perf_counter()
    for n in range(1, refits + 1):
        betting_sequence(x[:n], 0.5, 0.05)
    refit = time.perf_counter() - start
    print(f"refitted from scratch after each of the first {refits:,} items: {refit:.2f} s "
          f"({1e3 * refit / refits:.2f} ms per look, growing with the items so far)")


if __name__ == "__main__":
    main()
