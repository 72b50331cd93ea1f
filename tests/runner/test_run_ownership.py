"""One run, one payer: the run lock, Ctrl-C that keeps paid replies, through the real CLI in subprocesses
against a real HTTP judge server, counting requests and replies at the server."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from judge_server import JudgeServer
from runner_helpers import stored_calls, write_config, write_pairs

CLI = [sys.executable, "-c", "from swapjudge.cli import main; main()"]


def _count(db: Path, where: str = "1") -> int:
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(db, timeout=5)
        n = con.execute(f"SELECT COUNT(*) FROM calls WHERE {where}").fetchone()[0]
        con.close()
        return int(n)
    except sqlite3.OperationalError:
        return 0


def _wait_for(predicate, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert predicate()


@pytest.mark.slow
def test_two_processes_on_one_run_pay_once(tmp_path: Path) -> None:
    n_pairs = 100
    write_pairs(tmp_path, n_pairs)
    db = tmp_path / "swapjudge.db"
    with JudgeServer(policy="better", delay_s=0.01) as server:
        server.hold = threading.Event()  # the first run's calls wait at the server until both others started
        cfg = write_config(tmp_path, base_url=server.openai_url, judge={"max_concurrency": 16, "timeout_s": 120})
        cmd = [*CLI, "run", str(cfg), "--no-progress", "--format", "json"]
        first = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_for(lambda: server.total > 0)
        second = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and f"swapjudge process {first.pid}" in lines[0] and "--wait" in lines[0]
        # With --wait the second process waits for the first, then finds every call stored or cached.
        waiting = subprocess.Popen([*cmd, "--wait"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        # Two processes now want the run: the waiting one announces itself, then the first may go on.
        assert waiting.stderr is not None
        assert f"waiting for swapjudge process {first.pid}" in waiting.stderr.readline()
        server.hold.set()
        _, err1 = first.communicate(timeout=120)
        _, err2 = waiting.communicate(timeout=120)
        assert first.returncode == 0, err1
        assert waiting.returncode == 0, err2
        assert "200 from cache, 0 made" in err2
        assert server.total == 2 * n_pairs  # every planned call sent once, by one process
    keys = [(c["item"], c["first"]) for c in stored_calls(db, 1)]
    assert len(keys) == len(set(keys)) == 2 * n_pairs


@pytest.mark.slow
def test_kill_9_leaves_a_stale_lock_that_the_next_run_takes_over(tmp_path: Path) -> None:
    write_pairs(tmp_path, 60)
    db = tmp_path / "swapjudge.db"
    with JudgeServer(policy="better", delay_s=0.03) as server:
        cfg = write_config(tmp_path, base_url=server.openai_url, judge={"max_concurrency": 4})
        cmd = [*CLI, "run", str(cfg), "--no-progress"]
        proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _wait_for(lambda: _count(db) >= 20)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        locks = list(tmp_path.glob("swapjudge.db.run-*.lock"))
        assert len(locks) == 1 and f'"pid": {proc.pid}' in locks[0].read_text()
        again = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr
        assert f"took over the run from swapjudge process {proc.pid}" in again.stderr
        assert locks[0].read_text() == ""  # released cleanly this time
        assert server.total - 120 <= 4  # only calls in flight at the kill were paid twice
    assert len(stored_calls(db)) == 120


@pytest.mark.slow
def test_two_configurations_on_one_store_run_together(tmp_path: Path) -> None:
    write_pairs(tmp_path, 40)
    db = tmp_path / "swapjudge.db"
    with JudgeServer(policy="better", delay_s=0.02) as server:
        cfgs = [write_config(tmp_path, base_url=server.openai_url, name=f"{m}.yaml", judge={"model": m})
                for m in ("judge-x", "judge-y")]
        procs = [subprocess.Popen([*CLI, "run", str(c), "--no-progress"], cwd=tmp_path, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for c in cfgs]
        results = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], results
        assert server.total == 160
    con = sqlite3.connect(db)
    assert con.execute("SELECT run_id, COUNT(*) FROM calls GROUP BY run_id").fetchall() == [(1, 80), (2, 80)]


@pytest.mark.slow
def test_ctrl_c_waits_for_calls_in_flight_and_stores_every_paid_reply(tmp_path: Path) -> None:
    write_pairs(tmp_path, 60)
    db = tmp_path / "swapjudge.db"
    with JudgeServer(policy="better", delay_s=0.5) as server:
        cfg = write_config(tmp_path, base_url=server.openai_url, judge={"max_concurrency": 16})
        cmd = [*CLI, "run", str(cfg), "--no-progress", "--store", str(db)]
        proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_for(lambda: _count(db) >= 20)
        time.sleep(0.25)  # mid-flight: 16 calls sent, half-way through the server's 0.5 s
        sent_at_signal = server.total
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert "Ctrl-C: sending nothing new; waiting up to 5 s for" in err and "Traceback" not in err
        assert f"Resume with: swapjudge run {cfg} --store {db} --no-progress" in err
        time.sleep(0.1)
        paid, stored = server.replied, _count(db, "source='api'")
        assert server.total == sent_at_signal  # nothing new was sent after the Ctrl-C
        assert paid == stored and stored > 20  # every reply paid for is stored
        status = sqlite3.connect(db).execute("SELECT status FROM runs").fetchall()
        assert status == [("interrupted",)]


@pytest.mark.slow
def test_second_ctrl_c_abandons_the_calls_in_flight(tmp_path: Path) -> None:
    write_pairs(tmp_path, 40)
    db = tmp_path / "swapjudge.db"
    with JudgeServer(policy="better", delay_s=3.0) as server:
        cfg = write_config(tmp_path, base_url=server.openai_url, judge={"max_concurrency": 8, "timeout_s": 10})
        proc = subprocess.Popen([*CLI, "run", str(cfg), "--no-progress"], cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        _wait_for(lambda: server.total >= 8)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert time.monotonic() - started < 2.5  # did not wait out the server's 3 s
        assert _count(db) == 0
