"""Benchmark: `swapjudge analyze` on records larger than memory, against the same reduction written directly.

For each size it generates (once, into bench/data/, git-ignored) a Parquet file of presentation records
(bench/scale_records.py: four judges, eight systems, one pair of systems per item and judge, both orders;
`--pairs-per-item 2` for items holding two pairs), then runs, each in a
fresh process, side by side:

- `swapjudge analyze FILE --format json` (the streaming engine: DuckDB within SWAPJUDGE_MEMORY_LIMIT);
- the floor in DuckDB: read the file and count the verdicts per judge, item and slots
  (`GROUP BY judge, item, first, second`), under the same memory limit;
- the checking floor in DuckDB: the same counts with what swapjudge checks on the way (each field's JSON type, a
  missing or unknown verdict, each pair judged once in each order), under the same memory limit;
- the floor in polars: the same counts with `scan_parquet(...).group_by(...).collect(engine="streaming")`
  (it holds every group in memory, so it is skipped above --polars-up-to records).

and the same for one JSON Lines file (--jsonl records), where the polars floor reads with `read_ndjson` as the
issue's measurement did. `--report` adds `swapjudge report FILE --engine streaming --html --markdown` (every
judge's analysis, ranking with the report's 200 bootstrap rounds, and review queue), and `--report-memory` the
same report with `--engine memory`. Each line prints wall seconds, CPU seconds (user + system, every thread) and the
process's peak RSS from `os.wait4`; the first ratio is swapjudge's wall time over the faster bare floor's,
the second over the checking floor's. This machine's run-to-run spread is wide, so `--repeat N` runs every command
N times, taking turns, and prints the median run.
The children run with bytecode caching on and swapjudge compiled first, as an installed package starts (the
floors' duckdb and polars come with their bytecode from pip); PYTHONDONTWRITEBYTECODE in the environment is dropped.

    python bench/bench_analyze_scale.py [--sizes 1000000 10000000 100000000] [--jsonl 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"

def duckdb_floor_query(path: str) -> str:
    """The floor in DuckDB: read the file and count the verdicts per judge, item and slots, nothing checked."""
    quoted = "'" + path.replace("'", "''") + "'"
    source = (f"read_parquet({quoted})" if path.endswith(".parquet") else
              f"read_json({quoted}, format='newline_delimited', columns={{'judge': 'VARCHAR', 'item': 'VARCHAR', "
              "'first': 'VARCHAR', 'second': 'VARCHAR', 'verdict': 'VARCHAR'})")
    return f"""
        SELECT count(*), sum(f), sum(s), sum(t), sum(u) FROM (
          SELECT judge, item, first, second, count(*) FILTER (WHERE verdict = 'first') AS f,
                 count(*) FILTER (WHERE verdict = 'second') AS s, count(*) FILTER (WHERE verdict = 'tie') AS t,
                 count(*) FILTER (WHERE verdict IS NULL) AS u
          FROM {source} GROUP BY judge, item, first, second)"""


def duckdb_checking_floor_query(path: str) -> str:
    """The checking floor: the bare floor's counts plus what swapjudge checks on the way, in one DuckDB query:
    every field's JSON type (judge, item, first, second are strings; a verdict is a string or absent), a missing
    or unknown verdict, and the one-pair structure (each judge, item and pair of systems judged once in each
    order). Its last column counts the pairs that break a rule (0 on the generated files)."""
    quoted = "'" + path.replace("'", "''") + "'"
    names = ("judge", "item", "first", "second", "verdict")
    if path.endswith(".parquet"):
        source = f"SELECT {', '.join(names)}, true AS typed FROM read_parquet({quoted})"  # Parquet carries types
    else:
        columns = ", ".join(f"'{n}': 'JSON'" for n in names)
        texts = ", ".join(f"json_extract_string({n}, '$') AS {n}" for n in names)
        typed = " AND ".join(f"json_type({n}) = 'VARCHAR'" for n in names[:4])
        source = (f"SELECT {texts}, {typed} AND (verdict IS NULL OR json_type(verdict) = 'VARCHAR') AS typed "
                  f"FROM read_json({quoted}, format='newline_delimited', columns={{{columns}}})")
    return f"""
        SELECT count(*), sum(f), sum(s), sum(t), sum(u),
               count(*) FILTER (WHERE NOT typed OR unknown > 0 OR n_xf <> 1 OR n_yf <> 1) FROM (
          SELECT judge, item, least(first, second) AS x, greatest(first, second) AS y, bool_and(typed) AS typed,
                 count(*) FILTER (WHERE first < second) AS n_xf, count(*) FILTER (WHERE first > second) AS n_yf,
                 count(*) FILTER (WHERE verdict = 'first') AS f, count(*) FILTER (WHERE verdict = 'second') AS s,
                 count(*) FILTER (WHERE verdict = 'tie') AS t, count(*) FILTER (WHERE verdict IS NULL) AS u,
                 count(*) FILTER (WHERE verdict NOT IN ('first', 'second', 'tie')) AS unknown
          FROM ({source}) GROUP BY judge, item, least(first, second), greatest(first, second))"""


# the floor's process: DuckDB with the reduction's settings, running the query it is given
DUCKDB_FLOOR = textwrap.dedent("""
    import atexit, os, shutil, sys, tempfile, duckdb
    spill = tempfile.mkdtemp()
    atexit.register(shutil.rmtree, spill, True)
    con = duckdb.connect(":memory:")
    con.execute("SET memory_limit = '" + os.environ.get("SWAPJUDGE_MEMORY_LIMIT", "1GB") + "'")
    con.execute("SET temp_directory = '" + spill + "'")
    con.execute("SET preserve_insertion_order = false")
    print(con.execute(sys.argv[1]).fetchall())
""")

POLARS_FLOOR = textwrap.dedent("""
    import sys, polars as pl
    path = sys.argv[1]
    schema = {"judge": pl.String, "item": pl.String, "first": pl.String, "second": pl.String, "verdict": pl.String}
    frame = pl.scan_parquet(path) if path.endswith(".parquet") else pl.read_ndjson(path, schema=schema).lazy()
    counts = frame.group_by("judge", "item", "first", "second").agg(
        (pl.col("verdict") == "first").sum().alias("f"), (pl.col("verdict") == "second").sum().alias("s"),
        (pl.col("verdict") == "tie").sum().alias("t"), pl.col("verdict").is_null().sum().alias("u"))
    print(counts.select(pl.len(), pl.col("f").sum(), pl.col("s").sum(), pl.col("t").sum(), pl.col("u").sum())
          .collect(engine="streaming").rows())
""")


def measure(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds (user + system of the process and its threads) and peak RSS (MiB) of one run,
    from the kernel's accounting of that child alone; and its stdout."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if process.returncode not in (0, 1):  # 1: a failed gate, still a full analysis
        raise SystemExit(f"{' '.join(command[:3])} failed ({process.returncode}): {stderr.strip()[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, stdout


def line(label: str, result: tuple[float, float, float, str], floor: float | None = None,
         checking: float | None = None) -> str:
    wall, cpu, rss, _ = result
    ratio = "" if floor is None else f"  {wall / floor:4.2f}x the floor"
    ratio += "" if checking is None else f", {wall / checking:4.2f}x the checking floor"
    return f"  {label:<36} {wall:8.2f} s wall {cpu:8.2f} s cpu {rss:8.0f} MiB peak{ratio}"


def report_run(path: Path, env: dict[str, str], cli: str, engine: str) -> tuple[float, float, float, str]:
    """`swapjudge report` of the file with this engine, its HTML and Markdown written to a temporary folder."""
    with tempfile.TemporaryDirectory() as out:
        return measure([cli, "report", str(path), "--engine", engine, "--html", f"{out}/r.html", "--markdown",
                        f"{out}/r.md", "--min-consistency", "0"], env)


def median_run(runs: list[tuple[float, float, float, str]]) -> tuple[float, float, float, str]:
    """The run of median wall time among repeats (its CPU, peak and output), so one figure is one real run."""
    return sorted(runs, key=lambda r: r[0])[(len(runs) - 1) // 2]


def compare(path: Path, polars: bool, env: dict[str, str], cli: str,
            reports: tuple[str, ...] = (), repeat: int = 1) -> dict[str, tuple[float, float, float, str]]:
    """Each command `repeat` times, the commands taking turns (so a slow spell of the machine falls on all of
    them); each line is the run of median wall time, with the spread of the walls beside it."""
    python = sys.executable
    commands: dict[str, list[str]] = {"duckdb floor": [python, "-c", DUCKDB_FLOOR, duckdb_floor_query(str(path))],
                                      "duckdb checking floor": [python, "-c", DUCKDB_FLOOR,
                                                                duckdb_checking_floor_query(str(path))]}
    if polars:
        commands["polars floor"] = [python, "-c", POLARS_FLOOR, str(path)]
    commands["swapjudge analyze"] = [cli, "analyze", str(path), "--format", "json", "--min-consistency", "0"]
    every: dict[str, list[tuple[float, float, float, str]]] = {label: [] for label in commands}
    for _ in range(repeat):
        for label, command in commands.items():
            every[label].append(measure(command, env))
        json.loads(every["swapjudge analyze"][-1][3])  # a whole JSON document came out
        for engine in reports:
            every.setdefault(f"swapjudge report --engine {engine}", []).append(report_run(path, env, cli, engine))
    runs = {label: median_run(results) for label, results in every.items()}
    floor = min(runs[k][0] for k in runs if k.endswith("floor") and "checking" not in k)
    checking = runs["duckdb checking floor"][0]
    for label, result in runs.items():
        walls = [r[0] for r in every[label]]
        spread = f"  (walls {min(walls):.2f}-{max(walls):.2f} s over {len(walls)} runs)" if len(walls) > 1 else ""
        floors = (None, None) if label.endswith("floor") else (floor, checking)
        print(line(label, result, *floors) + spread)
    return runs


def generate(size: int, path: Path, pairs_per_item: int) -> None:
    """The records file, written once by bench/scale_records.py in its own process (this one stays small: a
    child's peak RSS is counted from this process's size at the fork)."""
    if path.exists():
        return
    start = time.perf_counter()
    subprocess.run([sys.executable, str(HERE / "scale_records.py"), str(size), str(path), str(pairs_per_item)],
                   check=True)
    print(f"generated {path.name} in {time.perf_counter() - start:.0f} s")


def setting() -> tuple[str, dict[str, str]]:
    """The CLI beside this interpreter and the children's environment (DuckDB's memory limit 1 GB unless set;
    bytecode caching on, swapjudge's modules compiled first), printed with the machine, the versions and the
    load, as every scale figure is read against them."""
    cli = str(Path(sys.executable).parent / "swapjudge")
    # bytecode caching on, as an installed package starts (the floors' duckdb and polars have theirs from pip)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("SWAPJUDGE_MEMORY_LIMIT", "1GB")
    package = importlib.util.find_spec("swapjudge")  # locates it without importing it
    if package is not None and package.submodule_search_locations:
        subprocess.run([sys.executable, "-m", "compileall", "-q", *package.submodule_search_locations],
                       check=True, env=env, stdout=subprocess.DEVNULL)
    from importlib.metadata import version  # not the packages themselves: a child's peak RSS starts at ours

    print(f"cpus: {os.cpu_count()}  python {sys.version.split()[0]}  duckdb {version('duckdb')}  "
          f"polars {version('polars')}  SWAPJUDGE_MEMORY_LIMIT={env['SWAPJUDGE_MEMORY_LIMIT']}  "
          f"load average {os.getloadavg()[0]:.1f}")
    return cli, env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000_000, 10_000_000, 100_000_000])
    parser.add_argument("--jsonl", type=int, nargs="*", default=[1_000_000])
    parser.add_argument("--polars-up-to", type=int, default=10_000_000,
                        help="largest file the in-memory polars floor is run on (it holds every group)")
    parser.add_argument("--pairs-per-item", type=int, default=1, help="pairs of systems per item and judge")
    parser.add_argument("--memory-in-memory-engine", action="store_true",
                        help="also run `analyze --engine memory` on the JSON Lines files")
    parser.add_argument("--report", action="store_true", help="also run `report --engine streaming`")
    parser.add_argument("--report-memory", action="store_true", help="also run `report --engine memory`")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each command, taking turns; each line shows the run of median wall time")
    args = parser.parse_args()
    reports = (("streaming",) if args.report else ()) + (("memory",) if args.report_memory else ())
    cli, env = setting()
    growth = []
    prefix = "records" if args.pairs_per_item == 1 else f"records_{args.pairs_per_item}pairs"
    for size in args.sizes:
        path = DATA / f"{prefix}_{size}.parquet"
        generate(size, path, args.pairs_per_item)
        print(f"{size:,} records, Parquet ({path.stat().st_size / 1e6:,.0f} MB):")
        runs = compare(path, size <= args.polars_up_to, env, cli, reports, args.repeat)
        growth.append((size, runs["swapjudge analyze"]))
    for size in args.jsonl:
        path = DATA / f"{prefix}_{size}.jsonl"
        generate(size, path, args.pairs_per_item)
        print(f"{size:,} records, JSON Lines ({path.stat().st_size / 1e6:,.0f} MB):")
        runs = compare(path, True, env, cli, reports, args.repeat)
        if args.memory_in_memory_engine:
            floor = min(runs[k][0] for k in runs if k.endswith("floor"))
            print(line("swapjudge analyze --engine memory", measure(
                [cli, "analyze", str(path), "--format", "json", "--min-consistency", "0", "--engine", "memory"], env),
                floor))
    if len(growth) > 1:
        (n0, r0) = growth[0]
        for n1, r1 in growth[1:]:
            print(f"growth {n0:,} -> {n1:,} records ({n1 / n0:.0f}x): wall {r1[0] / r0[0]:.1f}x, cpu "
                  f"{r1[1] / r0[1]:.1f}x, peak memory {r1[2] / r0[2]:.2f}x")


if __name__ == "__main__":
    main()
