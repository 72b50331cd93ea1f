"""A full disk, for real: a small tmpfs mounted in a private mount namespace (tests/mounts.py) under the store,
the report, the export and the review sheet, with the real CLI as a subprocess and a real judge server on
127.0.0.1.

Why a tmpfs and not SQLite's `PRAGMA max_page_count`: the user's failure was the file system's ENOSPC. SQLite
meets it while appending to the write-ahead log (and a capped page count never fills a WAL), and the report,
the export and the sheet are plain files that SQLite's cap does not touch at all.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from judge_server import JudgeServer
from mounts import copy_out, fill, in_namespace, script, swapjudge, tmpfs
from runner_helpers import stored_calls, write_config, write_pairs
from swapjudge.cli import app
from swapjudge.config import load_config
from swapjudge.runner.session import run_session

PAIRS = 60
FULL = re.compile(r"disk full \((\d+) (?:reply|replies) not stored\)")


def _new_store(path: Path) -> str:
    """The shell line that creates an empty store at `path` (its schema, then closed: no write-ahead log left)."""
    import sys

    return f"{sys.executable} -c 'from swapjudge.store import Store; Store(\"{path}\").close()'"


def test_a_run_that_fills_the_disk_keeps_every_committed_reply_and_counts_the_rest(tmp_path: Path) -> None:
    disk, out = tmp_path / "disk", tmp_path / "out"
    disk.mkdir()
    out.mkdir()
    write_pairs(tmp_path, PAIRS)
    with JudgeServer(policy="better", delay_s=0.01) as server:
        write_config(tmp_path, base_url=server.openai_url, store=str(disk / "swapjudge.db"))
        # an empty store, then the disk filled but for ~200 KiB: room for a few commits to the write-ahead log
        done = in_namespace(script(tmpfs(disk, 2048), _new_store(disk / "swapjudge.db"), fill(disk, 200 * 1024),
                                   swapjudge("run", "run.yaml", "--no-progress"), copy_out(disk, out),
                                   keep_status_of=3), cwd=tmp_path)
        paid = server.replied
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, done.stderr
        assert len(lines) == 1 and "Traceback" not in done.stderr and "another process" not in done.stderr, lines
        found = FULL.search(lines[0])
        assert found, lines[0]
        unstored = int(found.group(1))
        db = out / "swapjudge.db"
        stored = [c for c in stored_calls(db) if c["source"] == "api"]
        # every paid reply is stored or counted in the message; some were stored, some could not be
        assert len(stored) + unstored == paid
        assert 0 < len(stored) < 2 * PAIRS and unstored >= 1
        con = sqlite3.connect(db)
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        con.close()
        # room again (the store moved to a roomy disk): the same command makes only the calls that are missing
        roomy = tmp_path / "roomy"
        shutil.copytree(out, roomy)
        write_config(tmp_path, base_url=server.openai_url, store=str(roomy / "swapjudge.db"))
        before = server.total
        rerun = in_namespace(swapjudge("run", "run.yaml", "--no-progress"), cwd=tmp_path)
        assert rerun.returncode == 0, rerun.stderr
        assert server.total - before == 2 * PAIRS - len(stored)
    assert len(stored_calls(roomy / "swapjudge.db")) == 2 * PAIRS


def _store_with_a_run(tmp_path: Path) -> Path:
    write_pairs(tmp_path, 12)
    with JudgeServer(policy="better") as server:
        # the store the commands below read: made in this process (only those commands meet the full disk)
        outcome = run_session(load_config(write_config(tmp_path, base_url=server.openai_url)), progress=False)
        assert outcome.stats.made == 2 * 12
    return tmp_path / "swapjudge.db"


def test_export_and_report_on_a_full_disk_say_so_and_leave_nothing_behind(tmp_path: Path) -> None:
    db = _store_with_a_run(tmp_path)
    disk, out = tmp_path / "disk", tmp_path / "out"
    disk.mkdir()
    out.mkdir()
    commands = [swapjudge("export", "1", "-o", disk / "e.csv", "--store", db),
                swapjudge("export", "1", "-o", disk / "e.jsonl", "--store", db),
                swapjudge("report", db, "--html", disk / "r.html"),
                swapjudge("report", db, "--markdown", disk / "r.md")]
    for command in commands:
        done = in_namespace(script(tmpfs(disk, 64), fill(disk, 0), command, copy_out(disk, out), keep_status_of=2),
                            cwd=tmp_path)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, (command, done.stderr)
        assert len(lines) == 1 and "disk full: nothing written" in lines[0], (command, lines)
        assert sorted(p.name for p in out.iterdir()) == [".filler"], command  # no output, no temporary file
        (out / ".filler").unlink()


def test_the_review_sheet_and_its_key_are_written_both_or_neither(tmp_path: Path) -> None:
    """Room for the sheet but not for its key: neither is written (a sheet without its key cannot be tallied)."""
    long = "A long answer, line after line, so that the sheet is large. " * 40
    write_pairs(tmp_path, 30, extra=[])
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(pairs.read_text().replace("CORRECT answer to question", f"{long} CORRECT answer to question"))
    sizes = tmp_path / "sizes"
    sizes.mkdir()
    # the sizes on a roomy disk: the same command in this process
    roomy = CliRunner().invoke(app, ["review", "sheet", str(pairs), "-o", str(sizes / "s.csv"), "--key",
                                     str(sizes / "k.csv"), "--seed", "7"], catch_exceptions=False)
    assert roomy.exit_code == 0, roomy.output
    sheet_bytes, key_bytes = (sizes / "s.csv").stat().st_size, (sizes / "k.csv").stat().st_size
    assert sheet_bytes > 4 * key_bytes > 0
    disk, out = tmp_path / "disk", tmp_path / "out"
    disk.mkdir()
    out.mkdir()
    leave = -(-sheet_bytes // 4096) * 4096  # the pages the sheet needs, and not one more: the key does not fit
    done = in_namespace(script(tmpfs(disk, 4096), fill(disk, leave),
                               swapjudge("review", "sheet", pairs, "-o", disk / "s.csv", "--key", disk / "k.csv",
                                         "--seed", "7"), copy_out(disk, out), keep_status_of=2), cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "k.csv" in lines[0] and "disk full: nothing written" in lines[0], lines
    assert sorted(p.name for p in out.iterdir()) == [".filler"]  # neither the sheet nor its key, no staged file


def test_batch_request_files_on_a_full_disk_are_one_line(tmp_path: Path) -> None:
    """`batch: files` with its `batch_dir` on a full disk: the request file cannot be written; one line and exit 2,
    not a traceback, and the run stays resumable (its calls are planned in the store, which has room)."""
    disk, out = tmp_path / "disk", tmp_path / "out"
    disk.mkdir()
    out.mkdir()
    write_pairs(tmp_path, PAIRS)
    write_config(tmp_path, base_url="http://127.0.0.1:9/v1", judge={"batch": "files", "batch_dir": str(disk)})
    done = in_namespace(script(tmpfs(disk, 64), fill(disk, 0), swapjudge("run", "run.yaml", "--no-progress"),
                               copy_out(disk, out), keep_status_of=2), cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr and "disk full" in lines[0], lines
    assert not list(out.glob("*.requests.jsonl")), sorted(p.name for p in out.iterdir())  # no half request file
    assert not list(out.glob("*.partial")), sorted(p.name for p in out.iterdir())  # nor a half-written partial
    # room again (the tmpfs is gone; `disk` is a plain folder now): the same command writes the request file
    again = in_namespace(swapjudge("run", "run.yaml", "--no-progress"), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    (request,) = disk.glob("swapjudge-*.requests.jsonl")
    assert len(request.read_text().splitlines()) == 2 * PAIRS
