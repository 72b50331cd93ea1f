"""Review server under load: 20 reviewers voting at once, 10,000 votes in all, against `swapjudge review serve`
in its own process on 127.0.0.1 with its store on disk (every vote committed, fsync included, before its answer).

Each reviewer is a thread with its own HTTP connection: GET /api/next, then POST /api/vote, as fast as the
server answers (no think time: far harder than people). Prints the vote latency (p50, p99, max, as the client
measures it: request sent to answer read), the throughput, and checks that the store holds every acknowledged
vote exactly once and nothing else.
Usage: .venv/bin/python bench/bench_review.py [--reviewers 20] [--votes 10000]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from review_server import ReviewServer, simple_pairs, vote  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reviewers", type=int, default=20)
    parser.add_argument("--votes", type=int, default=10_000)
    args = parser.parse_args()
    names = [f"r{i:02d}" for i in range(args.reviewers)]
    per_reviewer = args.votes // args.reviewers
    with tempfile.TemporaryDirectory(dir=ROOT) as folder:  # on the project's disk, not a RAM disk
        pairs = simple_pairs(Path(folder) / "pairs.jsonl", per_reviewer)
        store = Path(folder) / "review.db"
        # every reviewer gets every pair (overlap = reviewers), no re-shows: exactly `votes` tasks
        server = ReviewServer(pairs, store, names, "--overlap", str(args.reviewers), "--reshow", "0",
                              "--seed", "1").start()
        latencies: list[float] = []
        acknowledged: list[tuple[str, str]] = []
        failures: list[str] = []
        lock = threading.Lock()

        def reviewer(name: str) -> None:
            mine, acks = [], []
            with server.client(name) as client:
                while (task := client.get("/api/next").json())["task"] is not None:
                    choice = ("1", "2", "tie", "both_bad")[len(acks) % 4]
                    start = time.perf_counter()
                    reply = vote(client, task["task"], choice)
                    mine.append(time.perf_counter() - start)
                    if reply.status_code != 200:
                        failures.append(f"{name}: {reply.status_code} {reply.text[:100]}")
                        return
                    acks.append((task["task"], choice))
            with lock:
                latencies.extend(mine)
                acknowledged.extend(acks)

        threads = [threading.Thread(target=reviewer, args=(n,)) for n in names]
        began = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - began
        server.stop()
        db = sqlite3.connect(store)
        stored = db.execute("SELECT task, choice FROM votes WHERE undone_at IS NULL").fetchall()
        db.close()
    lat = np.array(latencies) * 1000
    tasks = [t for t, _ in stored]
    lost = len(set(acknowledged) - set(stored))
    print(f"review server: {len(names)} reviewers voting at once, {len(acknowledged):,} votes acknowledged "
          f"in {wall:.1f} s ({len(acknowledged) / wall:,.0f} votes/s, GET /api/next between votes)")
    print(f"vote latency: p50 {np.percentile(lat, 50):.1f} ms, p99 {np.percentile(lat, 99):.1f} ms, "
          f"max {lat.max():.1f} ms")
    print(f"store: {len(stored):,} votes, {len(tasks) - len(set(tasks))} duplicated, {lost} acknowledged votes "
          f"missing, {len(failures)} refused")
    if failures or lost or len(stored) != len(acknowledged) or len(tasks) != len(set(tasks)) \
            or len(acknowledged) != per_reviewer * len(names):
        print("FAILED: " + "; ".join(failures[:5]))
        raise SystemExit(1)


if __name__ == "__main__":
    main()
