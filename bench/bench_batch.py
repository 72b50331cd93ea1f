"""The batch path at scale, and its crash campaign.

1. Scale: N calls (default 100,000: 50,000 pairs, both orders) through the fake OpenAI Batch API
   (tests/batch_server.py, in its own process, so its simulated processing is not in the harness's figures).
   The harness is the real CLI (`swapjudge run`, analysis included) in a child process; printed: its wall time,
   its own CPU time (user + system: the harness's time, excluding the server's processing) and its peak memory
   (max RSS), from the child's resource usage.
2. Campaign (--kills K, default 20): the CLI killed with SIGKILL at each step in turn, shuffled (before/after
   upload, after create, polling, download, mid-storage), then run again, over and over, with the fake provider
   (OpenAI and Anthropic in turn) counting every call it received in a created batch. Printed: kills, runs, calls paid
   twice (must be 0), stores complete.
Usage: .venv/bin/python bench/bench_batch.py [--calls 100000] [--kills 20] [--skip-scale] [--skip-campaign]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from batch_server import BatchServer  # noqa: E402
from runner_helpers import write_config, write_pairs  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
RUN = "import swapjudge.runner.batch.engine as e; e.STORE_CHUNK = {chunk}; from swapjudge.cli import main; main()"


def child(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, float, float, float]:
    """(exit status, wall s, CPU s, peak RSS MB) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, -signal.SIGKILL) and proc.stderr is not None:
        sys.stderr.write(proc.stderr.read().decode()[-2000:])
    return proc.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def scale(calls: int) -> None:
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "batch_server.py"), "--polls", "2"],
                              stdout=subprocess.PIPE, text=True, env=ENV)
    assert server.stdout is not None
    port = int(server.stdout.readline())
    try:
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            write_pairs(d, calls // 2)
            cfg = write_config(d, base_url=f"http://127.0.0.1:{port}/v1",
                               judge={"batch": True, "batch_poll_s": 1.0, "timeout_s": 600})
            cmd = [sys.executable, "-m", "swapjudge", "run", str(cfg), "--no-progress", "--format", "json"]
            code, wall, cpu, rss = child(cmd, d, ENV)
            stored = sqlite3.connect(d / "swapjudge.db").execute("SELECT COUNT(*) FROM calls").fetchone()[0]
            batches = sqlite3.connect(d / "swapjudge.db").execute(
                "SELECT COUNT(*) FROM batch_submissions").fetchone()[0]
            print(f"scale: {calls:,} calls in {batches} batches, exit {code}, {stored:,} stored; harness wall "
                  f"{wall:.1f} s (includes waiting on the fake provider), harness CPU {cpu:.1f} s, "
                  f"peak memory {rss:.0f} MB")
    finally:
        server.terminate()
        server.wait()


STEPS = ["before_upload", "after_upload", "after_create", "polling", "polling:2", "download", "storing",
         "storing:2", "storing:3"]


def campaign(kills: int, pairs: int, seed: int) -> None:
    rng = random.Random(seed)
    # Every step in turn (shuffled): a step a process cannot reach (an upload once all is submitted) lets that
    # process finish the round, and the step is tried again first thing in the next round.
    order = rng.sample(STEPS, len(STEPS))
    done_kills = runs = rounds = twice = incomplete = 0
    while done_kills < kills:
        backend = ("openai", "anthropic")[rounds % 2]
        rounds += 1
        with BatchServer(polls_to_end=2) as server, tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            write_pairs(d, pairs)
            url = server.anthropic_url if backend == "anthropic" else server.openai_url
            cfg = write_config(d, backend=backend, base_url=url, judge={"batch": True, "batch_poll_s": 0.05})
            cmd = [sys.executable, "-c", RUN.format(chunk=7), "run", str(cfg), "--no-progress"]
            while True:
                step = order[done_kills % len(order)] if done_kills < kills else None
                if backend == "anthropic" and step == "after_upload":
                    step = "before_upload"  # no upload step on Anthropic: the create call carries the requests
                env = {**ENV, **({"SWAPJUDGE_BATCH_FAULT": step} if step else {})}
                code, *_ = child(cmd, d, env)
                runs += 1
                if code == -signal.SIGKILL:
                    done_kills += 1
                    print(f"  kill {done_kills}: {backend} at {step}", flush=True)
                    continue
                if code != 0:
                    raise SystemExit(f"run exited {code}")
                break
            twice += server.paid_twice()
            stored = sqlite3.connect(d / "swapjudge.db").execute(
                "SELECT COUNT(*) FROM calls WHERE error IS NULL").fetchone()[0]
            incomplete += stored != 2 * pairs or len(server.received) != 2 * pairs
    print(f"campaign: {done_kills} kills over {rounds} rounds (a fresh store and fake provider each; "
          f"{runs} processes); calls paid twice: {twice}; stores incomplete: {incomplete}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--pairs", type=int, default=30, help="pairs per campaign round")
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--skip-scale", action="store_true")
    ap.add_argument("--skip-campaign", action="store_true")
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} at start")
    if not args.skip_scale:
        scale(args.calls)
    if not args.skip_campaign:
        campaign(args.kills, args.pairs, args.seed)
    print(f"bench process peak memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
