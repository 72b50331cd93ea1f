"""What checking a store costs: `PRAGMA quick_check` (run by every `swapjudge run` before its first call) and
`PRAGMA integrity_check` (`swapjudge runs --check`), on a store of N stored calls written through the store's own
write path (each call with a JSON verdict, settings and a cached reply, as a run stores them).

Usage: PYTHONPATH=src .venv/bin/python bench/bench_store_check.py [--calls 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from swapjudge.store import CallRecord, Store

RAW = '{"winner": "A", "reason": "Answer A follows every instruction and its arithmetic is right."}'
SETTINGS = {"model": "gpt-4o-mini", "temperature": 0.0, "max_tokens": 200, "structured": True, "logprobs": False}


def build(path: Path, calls: int) -> None:
    with Store(path) as store:
        run_id = store.create_run(config_hash="c", judge_hash="j", judge="openai:gpt-4o-mini", config={},
                                  config_path=None, pairs_digest="d", seed="s", orders="both", total_calls=calls)
        for start in range(0, calls, 5_000):
            store.record_calls(run_id, [
                CallRecord(item=f"item-{i // 2:06d}", first="a" if i % 2 == 0 else "b",
                           second="b" if i % 2 == 0 else "a", order_index=i % 2, verdict="first", source="api",
                           prompt_hash=f"{i:064x}", raw=RAW, settings=SETTINGS, input_tokens=812, output_tokens=21,
                           latency_s=0.61, cost_usd=0.000134)
                for i in range(start, min(calls, start + 5_000))], judge_hash="j")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "swapjudge.db"
        build(path, args.calls)
        size_mb = path.stat().st_size / 1e6
        with Store(path, read_only=True) as store:
            for full, name in ((False, "quick_check"), (True, "integrity_check")):
                times = []
                for _ in range(args.repeat):
                    started = time.perf_counter()
                    problems = store.check(full=full)
                    times.append(time.perf_counter() - started)
                    assert problems == [], problems
                print(f"{name}: {args.calls:,} calls, {size_mb:.0f} MB: median {statistics.median(times):.2f} s "
                      f"(min {min(times):.2f}, max {max(times):.2f}, {args.repeat} runs)")


if __name__ == "__main__":
    main()
