"""Benchmark: `swapjudge rank` on records larger than memory (the streaming engine's counts) against the same
ranking from records read whole (`--engine memory`).

For each size it generates (once, into bench/data/, git-ignored) the Parquet file of bench/scale_records.py (four
judges, eight systems, both orders of every pair), then runs, each in a fresh process, side by side:

- `swapjudge rank FILE --judge judge-a --format json --engine streaming` (DuckDB within SWAPJUDGE_MEMORY_LIMIT);
- `swapjudge rank FILE --judge judge-a --format json --engine memory` (every record read into memory);

with `--bootstrap` rounds (default 1000, as `rank`'s default), and checks that both print the same document.
Each line prints wall seconds, CPU seconds (user + system, every thread) and the process's peak RSS from
`os.wait4`. `--bootstrap 0` is also run to show the reading apart from the intervals. `--memory-up-to` skips the
in-memory engine above that many records (it holds every record: 3.6 GB at 10M), as for the 100M file:

    python bench/bench_rank_scale.py [--sizes 1000000 10000000] [--bootstrap 1000]
    python bench/bench_rank_scale.py --sizes 100000000 --bootstrap 200 --memory-up-to 10000000
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_analyze_scale import DATA, generate, line, measure, setting


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000_000, 10_000_000])
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap rounds of the ranking")
    parser.add_argument("--judge", default="judge-a", help="the judge ranked (the file has four)")
    parser.add_argument("--memory-up-to", type=int, default=10_000_000,
                        help="run --engine memory only up to this many records")
    args = parser.parse_args()
    cli, env = setting()
    for size in args.sizes:
        path = DATA / f"records_{size}.parquet"
        generate(size, path, 1)
        print(f"{size:,} records, Parquet ({path.stat().st_size / 1e6:,.0f} MB), rank --judge {args.judge}:")
        for rounds in dict.fromkeys([args.bootstrap, 0]):
            documents = {}
            engines = ("streaming", "memory") if size <= args.memory_up_to else ("streaming",)
            for engine in engines:
                result = measure([cli, "rank", str(path), "--judge", args.judge, "--format", "json",
                                  "--min-consistency", "0", "--bootstrap", str(rounds), "--engine", engine], env)
                documents[engine] = json.loads(result[3])
                print(line(f"--engine {engine} --bootstrap {rounds}", result))
            if len(documents) < 2:
                continue
            same = documents["streaming"] == documents["memory"]
            print(f"  same document from both engines: {same}")
            if not same:
                raise SystemExit("the two engines disagree")


if __name__ == "__main__":
    main()
