"""The Ray executor's throughput beside the synchronous engine's: N calls (default 2,000: 1,000 pairs, both
orders) through the real CLI (`swapjudge run`, analysis included) in a child process, against the judge server on
127.0.0.1 (tests/judge_server.py, in this process, answering after --delay seconds). Printed per engine: wall
time, calls per second, and the requests the server saw (one per call: nothing paid twice).

Usage: PYTHONPATH=src .venv/bin/python bench/bench_ray.py [--pairs 1000] [--delay 0.05] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from judge_server import JudgeServer  # noqa: E402
from runner_helpers import write_config, write_pairs  # noqa: E402


def one(engine: str, args: argparse.Namespace, tmp: Path) -> None:
    write_pairs(tmp, args.pairs)
    with JudgeServer(policy="better", delay_s=args.delay) as server:
        server.keep_bodies = False
        ray = {"num_cpus": 2, "concurrency": args.workers, "batch_size": args.batch}
        cfg = write_config(tmp, base_url=server.openai_url, ray=ray, judge={"max_concurrency": args.concurrency})
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "swapjudge", "run", str(cfg), "--no-progress", "--engine",
                               engine, "--format", "json"], cwd=tmp, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        wall = time.perf_counter() - started
    calls = 2 * args.pairs
    detail = (f"ray workers {args.workers}, batch {args.batch}" if engine == "ray"
              else f"max_concurrency {args.concurrency}")
    print(f"{engine:>4}: {calls:,} calls in {wall:.1f} s ({calls / wall:.0f} calls/s; {detail}); server saw "
          f"{server.total:,} requests; exit {done.returncode}", flush=True)
    if done.returncode:
        print(done.stderr[-2000:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--delay", type=float, default=0.05, help="server seconds per reply")
    ap.add_argument("--concurrency", type=int, default=8, help="the sync engine's max_concurrency")
    ap.add_argument("--workers", type=int, default=2, help="ray.concurrency")
    ap.add_argument("--batch", type=int, default=16, help="ray.batch_size")
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} at start; server delay "
          f"{args.delay:g} s", flush=True)
    for engine in ("sync", "ray"):
        with tempfile.TemporaryDirectory() as tmp:
            one(engine, args, Path(tmp))


if __name__ == "__main__":
    main()
