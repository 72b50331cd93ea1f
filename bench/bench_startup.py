"""Benchmark: how fast the CLI starts (`swapjudge --help`, the counts-only `calc`, and `analyze` of a 1,000-record
JSON Lines file, the whole command: start-up, reading, analysis and the text report).

Runs each command `--repeat` times in a fresh process (`python -m swapjudge`, so the checkout's code is what
runs when PYTHONPATH points at src) and prints, best and median of the runs, the wall time and the child's CPU time
(user + sys, from the finished child's own rusage), with the load average at the start. CPU time is the figure
to compare on a shared machine: wall time includes waiting for a core. Target: under 0.5 s each. The child runs
with bytecode caching on (PYTHONDONTWRITEBYTECODE removed) after one warm-up run, as an installed package starts;
`--no-bytecode` measures recompiling every swapjudge module from source on each start instead.
`analyze`'s file is written by bench/scale_records.py (`--records N`, default 1000) into a temporary folder.
Target for `analyze`: a median wall time of at most 0.4 s on a quiet machine.
    python bench/bench_startup.py [--repeat 10] [--no-bytecode] [--records 1000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "--help": ["--help"],
    "calc": ["calc", "--pairs", "400", "--consistent", "292"],
}


def one_run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + sys) of one fresh `python -m swapjudge ARGS`."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "swapjudge", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)  # the child's own rusage, not every child's so far
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        error = proc.stderr.read().decode() if proc.stderr else ""
        sys.exit(f"swapjudge {' '.join(args[:1])} exited {proc.returncode}: {error}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--no-bytecode", action="store_true", help="set PYTHONDONTWRITEBYTECODE=1 in the child")
    parser.add_argument("--records", type=int, default=1000, help="records in analyze's JSON Lines file")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if args.no_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    folder = tempfile.TemporaryDirectory()
    records = Path(folder.name) / f"records_{args.records}.jsonl"
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from scale_records import records as generated  # the scale bench's records, at this size

    generated(args.records).sink_ndjson(records)
    # min-consistency 0 so the gate passes and the command exits 0 (the generated judges sit near 0.85)
    commands = {**COMMANDS, f"analyze ({args.records:,} records)": ["analyze", str(records), "--min-consistency", "0"]}
    width = max(map(len, commands))
    print(f"{'command':<{width}} {'cpu best':>9} {'cpu median':>11} {'wall best':>10} {'wall median':>12}")
    for name, argv in commands.items():
        one_run(argv, env)  # warm-up: writes the bytecode caches, fills the page cache
        runs = [one_run(argv, env) for _ in range(args.repeat)]
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        print(f"{name:<{width}} {min(cpus):>8.3f}s {statistics.median(cpus):>10.3f}s {min(walls):>9.3f}s "
              f"{statistics.median(walls):>11.3f}s")
    folder.cleanup()


if __name__ == "__main__":
    main()
