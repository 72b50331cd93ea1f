"""One run, one payer: the figures of issue 14, through the real CLI in subprocesses against a judge server on
127.0.0.1 (tests/judge_server.py, in this process, counting every request and every 200 reply it writes).

  two     two `swapjudge run` of one configuration and store started together: requests sent vs calls planned
  ctrlc   Ctrl-C mid-run: replies the server wrote (paid) vs replies stored
  dead    nothing listening at base_url: seconds until the run stops, exit code, what it printed
  kills   `kill -9` at random moments, again and again, then a run to the end: per kill, the calls in flight
          (sent, not stored) and the requests later paid a second time; every (pair, order) stored once and
          `PRAGMA integrity_check`

Usage: PYTHONPATH=src .venv/bin/python bench/one_payer.py kills [--pairs 400] [--concurrency 16] [--kills 20]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from judge_server import JudgeServer  # noqa: E402
from runner_helpers import write_config, write_pairs  # noqa: E402

CLI = [sys.executable, "-c", "from swapjudge.cli import main; main()"]


def _stored(db: Path, where: str = "1") -> int:
    if not db.exists():
        return 0
    for _ in range(50):
        try:
            con = sqlite3.connect(db, timeout=10)
            n = con.execute(f"SELECT COUNT(*) FROM calls WHERE {where}").fetchone()[0]
            con.close()
            return int(n)
        except sqlite3.OperationalError:
            time.sleep(0.1)
    raise RuntimeError("store unreadable")


def _popen(cfg: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([*CLI, "run", str(cfg), "--no-progress", *extra], cwd=cfg.parent,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def two(args: argparse.Namespace, tmp: Path) -> None:
    write_pairs(tmp, args.pairs)
    with JudgeServer(policy="better", delay_s=args.delay) as server:
        server.keep_bodies = False
        cfg = write_config(tmp, base_url=server.openai_url, judge={"max_concurrency": args.concurrency})
        procs = [_popen(cfg), _popen(cfg)]
        results = [p.communicate() for p in procs]
        planned = 2 * args.pairs
        paid_twice = sum(n - 1 for n in server.first_requests.values() if n > 1)
        print(f"two processes: {planned} calls planned, {server.total} requests sent, {paid_twice} calls paid twice; "
              f"exit codes {[p.returncode for p in procs]}")
        for p, (_, err) in zip(procs, results, strict=True):
            last = err.strip().splitlines()[-1] if err.strip() else ""
            print(f"  pid {p.pid} exit {p.returncode}: {last[:200]}")


def ctrlc(args: argparse.Namespace, tmp: Path) -> None:
    write_pairs(tmp, args.pairs)
    db = tmp / "swapjudge.db"
    with JudgeServer(policy="better", delay_s=args.delay) as server:
        server.keep_bodies = False
        cfg = write_config(tmp, base_url=server.openai_url,
                           judge={"max_concurrency": args.concurrency, "timeout_s": 30})
        proc = _popen(cfg)
        while _stored(db) < args.pairs // 2:
            time.sleep(0.05)
        time.sleep(args.delay / 2)
        attempts = server.total
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        time.sleep(0.2)
        stored = _stored(db, "source='api'")
        print(f"Ctrl-C: {attempts} requests sent at the signal, {server.total} in all; {server.replied} replies "
              f"paid, {stored} stored; exit {proc.returncode}")
        said = [line for line in err.strip().splitlines() if "Ctrl-C" in line or "interrupted" in line]
        print("  " + " | ".join(said))


def dead(args: argparse.Namespace, tmp: Path) -> None:
    write_pairs(tmp, args.pairs)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # The retry settings a user has by default: 5 retries, backoff from 1 s up to 60 s.
    cfg = write_config(tmp, base_url=f"http://127.0.0.1:{port}/v1",
                       judge={"max_concurrency": 8, "backoff_s": 1.0, "max_backoff_s": 60.0, "max_retries": 5})
    # What starting the CLI costs on this machine (imports, planning): a dry run of the same configuration.
    started = time.monotonic()
    subprocess.run([*CLI, "run", str(cfg), "--dry-run"], cwd=tmp, capture_output=True, timeout=600)
    startup = time.monotonic() - started
    started = time.monotonic()
    done = subprocess.run([*CLI, "run", str(cfg), "--no-progress"], cwd=tmp, capture_output=True, text=True,
                          timeout=600)
    print(f"dead server: {2 * args.pairs} calls planned; stopped after {time.monotonic() - started:.1f} s, "
          f"exit {done.returncode} (a dry run of the same configuration, calling nothing: {startup:.1f} s); "
          f"stdout {len(done.stdout)} characters; stderr:")
    print("  " + done.stderr.strip().replace("\n", "\n  ")[-600:])


def kills(args: argparse.Namespace, tmp: Path) -> None:
    rng = random.Random(args.seed)
    write_pairs(tmp, args.pairs)
    db = tmp / "swapjudge.db"
    planned = 2 * args.pairs
    with JudgeServer(policy="better", delay_s=args.delay) as server:
        server.keep_bodies = False
        cfg = write_config(tmp, base_url=server.openai_url, judge={"max_concurrency": args.concurrency})
        snapshots: list[Counter[str]] = []
        in_flight: list[int] = []
        for _ in range(args.kills):
            before = server.total
            proc = _popen(cfg)
            while server.total == before and proc.poll() is None:  # wait until it is sending
                time.sleep(0.005)
            if proc.poll() is not None:
                break
            time.sleep(rng.uniform(0.05, args.max_wait))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            time.sleep(args.delay + 0.05)  # let the server finish writing what was in flight
            with server.lock:
                snap = Counter(server.first_requests)
            snapshots.append(snap)
            in_flight.append(len(snap) - _stored(db, "source='api'"))
        final = subprocess.run([*CLI, "run", str(cfg), "--no-progress"], cwd=tmp, capture_output=True, text=True,
                               timeout=600)
        with server.lock:
            snapshots.append(Counter(server.first_requests))
    twice_per_kill = []
    for k in range(len(snapshots) - 1):
        now, later = snapshots[k], snapshots[k + 1]
        twice_per_kill.append(sum(1 for p, n in now.items() if later[p] > n))
    con = sqlite3.connect(db)
    rows = con.execute("SELECT COUNT(*), COUNT(DISTINCT item || '|' || first || '|' || second) FROM calls").fetchone()
    integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
    con.close()
    total_twice = sum(n - 1 for n in snapshots[-1].values() if n > 1)
    print(f"kill -9 campaign: {planned} calls planned, concurrency {args.concurrency}, {len(in_flight)} kills; "
          f"final run exit {final.returncode}")
    print("  kill  in flight  paid twice")
    for k, (f, t) in enumerate(zip(in_flight, twice_per_kill, strict=True), start=1):
        print(f"  {k:>4}  {f:>9}  {t:>10}")
    print(f"  total: {sum(in_flight)} in flight at the kills, {total_twice} requests paid twice "
          f"({server.total} requests for {planned} calls)")
    print(f"  store: {rows[0]} calls, {rows[1]} distinct (pair, order); integrity_check {integrity}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["two", "ctrlc", "dead", "kills"])
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--delay", type=float, default=0.2, help="server seconds per reply")
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--max-wait", type=float, default=1.0, help="longest wait before a kill (seconds)")
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        {"two": two, "ctrlc": ctrlc, "dead": dead, "kills": kills}[args.what](args, Path(tmp))


if __name__ == "__main__":
    main()
