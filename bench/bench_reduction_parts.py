"""Benchmark: the streaming engine's checked reduction against the floors' bare and checking queries, in one
process.

`bench_analyze_scale.py` times whole commands, each in a fresh process, so its ratio holds the CLI's fixed cost
(Python's start, the imports) beside the reading. This one times what is left once those are paid: in one
process, taking turns `--repeat` times, the floor's DuckDB query (read the records, count the verdicts per
judge, item and slots: no check) and `reading.streaming.StreamingSource` on the same file (the reduction with every
check of the in-memory reader, its tables and its checks' queries), and the checking floor's query (the bare
counts with the JSON types, a missing verdict and the one-pair structure checked). It prints each one's median and
spread and the reduction's ratio of the medians to each floor. The file is bench/data's generated JSON Lines (or
Parquet) file of --records records.

    python bench/bench_reduction_parts.py [--records 1000000] [--parquet] [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_analyze_scale import (  # noqa: E402  (the same files and floors)
    DATA,
    duckdb_checking_floor_query,
    duckdb_floor_query,
    generate,
)


def floor_seconds(path: Path, query=duckdb_floor_query) -> float:  # type: ignore[no-untyped-def]
    """One run of the floor's query on a fresh connection, with the reduction's memory settings."""
    import duckdb

    con = duckdb.connect(":memory:")
    con.execute(f"SET memory_limit = '{os.environ.get('SWAPJUDGE_MEMORY_LIMIT', '1GB')}'")
    con.execute("SET preserve_insertion_order = false")
    start = time.perf_counter()
    con.execute(query(str(path))).fetchall()
    seconds = time.perf_counter() - start
    con.close()
    return seconds


def reduction_seconds(path: Path) -> float:
    """One checked reduction of the file, from opening it to its checks passed (caches of earlier runs cleared)."""
    from swapjudge.reading import streaming

    streaming._key_count.cache_clear()
    streaming._key_occurs.cache_clear()
    start = time.perf_counter()
    source = streaming.StreamingSource(str(path))
    seconds = time.perf_counter() - start
    source.close()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--parquet", action="store_true", help="the Parquet file instead of JSON Lines")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    path = DATA / f"records_{args.records}.{'parquet' if args.parquet else 'jsonl'}"
    generate(args.records, path, 1)
    import duckdb  # imported before the clock starts: both sides run with it loaded

    reduction_seconds(path)  # warm-up: the first run pays swapjudge's imports
    floors, checking, reductions = [], [], []
    for _ in range(args.repeat):
        floors.append(floor_seconds(path))
        checking.append(floor_seconds(path, duckdb_checking_floor_query))
        reductions.append(reduction_seconds(path))
    print(f"{args.records:,} records, {path.suffix[1:]}, duckdb {duckdb.__version__}, cpus {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    for label, runs in (("floor query (no check)", floors), ("checking floor query", checking),
                        ("checked reduction", reductions)):
        print(f"  {label:<24} median {statistics.median(runs):6.3f} s  (runs {min(runs):.3f}-{max(runs):.3f} s)")
    reduction = statistics.median(reductions)
    print(f"  ratio of the medians {reduction / statistics.median(floors):.2f}x the bare floor, "
          f"{reduction / statistics.median(checking):.2f}x the checking floor")


if __name__ == "__main__":
    main()
