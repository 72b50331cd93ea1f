"""Runner throughput: 2,000 calls (1,000 pairs, both orders) against a local judge server on 127.0.0.1.

1. a server that answers after a fixed 200 ms, concurrency 64: ideal 2,000 x 0.2 / 64 = 6.25 s;
2. a server that answers at once: sustained calls/s end to end (store writes included) and harness CPU
   per call;
3. a cached re-run of the same 2,000 calls: no calls, wall time.
The server runs in its own process (it is not part of the harness's CPU figure). Prints the figures.
Usage: .venv/bin/python bench/bench_runner.py [--pairs 1000] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from rich.console import Console

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from runner_helpers import write_config, write_pairs  # noqa: E402
from swapjudge.config import load_config  # noqa: E402
from swapjudge.runner.session import run_async  # noqa: E402


def start_server(delay: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "judge_server.py"), "--delay", str(delay)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}/v1"


def server_total(url: str) -> int:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/stats") as r:
        return int(json.load(r)["total"])


def timed_run(cfg: Path) -> tuple[float, float, object]:
    # The progress bar renders as in a terminal (to a buffer), so its cost is in the figures.
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    cpu0, t0 = time.process_time(), time.perf_counter()
    outcome = asyncio.run(run_async(load_config(cfg), console=console, progress=True))
    return time.perf_counter() - t0, time.process_time() - cpu0, outcome


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--delay", type=float, default=0.2)
    args = ap.parse_args()
    calls = 2 * args.pairs
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} at start")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        write_pairs(d, args.pairs)
        judge = {"max_concurrency": args.concurrency, "timeout_s": 30}

        proc, url = start_server(args.delay)
        try:
            cfg = write_config(d, base_url=url, judge=judge, name="slow.yaml", store="slow.db")
            wall, cpu, out = timed_run(cfg)
            ideal = calls * args.delay / args.concurrency
            made = server_total(url)
            lat = sqlite3.connect(d / "slow.db").execute("SELECT AVG(latency_s) FROM calls").fetchone()[0]
            print(
                f"[{args.delay * 1000:.0f} ms server] {made} requests, concurrency {args.concurrency}: "
                f"wall {wall:.2f} s, ideal {ideal:.2f} s, ratio {wall / ideal:.3f} (target <= 1.15); "
                f"harness CPU {cpu:.2f} s; mean call latency seen by the harness {lat * 1000:.0f} ms"
            )
            assert made == calls, out
        finally:
            proc.kill()

        proc, url = start_server(0.0)
        try:
            cfg = write_config(d, base_url=url, judge=judge, name="fast.yaml", store="fast.db")
            wall, cpu, out = timed_run(cfg)
            made = server_total(url)
            print(
                f"[instant server] {made} requests: wall {wall:.2f} s, {made / wall:.0f} calls/s end to end "
                f"(target >= 500), harness CPU {cpu:.2f} s = {cpu / made * 1000:.2f} ms per call"
            )
            assert made == calls, out
            wall, cpu, out = timed_run(cfg)
            again = server_total(url) - made
            print(
                f"[cached re-run] {again} requests, {out.stats.cached} calls from cache: "  # type: ignore[attr-defined]
                f"wall {wall:.3f} s (target < 1 s), CPU {cpu:.3f} s"
            )
        finally:
            proc.kill()


if __name__ == "__main__":
    main()
