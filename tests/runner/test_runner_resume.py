"""Resume after `kill -9`, through the real CLI in a subprocess, counting requests at the server."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from judge_server import JudgeServer, frame_answers
from runner_helpers import stored_calls, write_config, write_pairs


def _call_of(body: dict[str, Any]) -> tuple[str, str]:
    """(item, system in slot 1) of a request, read back from the prompt the server received."""
    user = body["messages"][1]["content"]
    answers = frame_answers(user)
    assert answers is not None
    item = re.search(r"Question (\d+):", user).group(1)  # type: ignore[union-attr]
    return f"q{int(item):03d}", "good" if "CORRECT" in answers[0] else "bad"


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(db, timeout=5)
        n = con.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        con.close()
        return int(n)
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
def test_sigkill_half_way_then_resume_makes_each_call_once(tmp_path: Path) -> None:
    n_pairs, concurrency = 60, 4
    write_pairs(tmp_path, n_pairs)
    db = tmp_path / "swapjudge.db"
    with JudgeServer(policy="better", delay_s=0.04) as server:
        cfg = write_config(tmp_path, base_url=server.openai_url, judge={"max_concurrency": concurrency})
        cmd = [
            sys.executable,
            "-c",
            "from swapjudge.cli import main; main()",
            "run",
            str(cfg),
            "--no-progress",
        ]
        proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while _count(db) < 2 * n_pairs // 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        before = {(c["item"], c["first"]): c["prompt_hash"] for c in stored_calls(db)}
        assert 0 < len(before) < 2 * n_pairs  # killed half-way, some calls stored
        requests_before = server.total
        status = sqlite3.connect(db).execute("SELECT status FROM runs").fetchall()
        assert status == [("running",)]  # the kill left the run unfinished, the file readable

        done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "(resumed)" in done.stderr
    calls = stored_calls(db)
    keys = [(c["item"], c["first"], c["second"]) for c in calls]
    assert len(keys) == len(set(keys)) == 2 * n_pairs  # exactly one stored call per (pair, order)
    assert all(c["error"] is None and c["verdict"] is not None for c in calls)
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*), MIN(status) FROM runs").fetchone() == (1, "done")
    # No call stored before the kill was made again: every request after it was for a missing call.
    after = [_call_of(b) for b in server.bodies[requests_before:]]
    assert not set(after) & set(before)
    assert set(after) == {(c["item"], c["first"]) for c in calls} - set(before)
    # A call in flight at the kill (sent, not yet stored) is the only kind that can be sent twice.
    assert len(after) - len(set(after)) == 0
    assert server.total - 2 * n_pairs <= concurrency


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_says_how_to_resume(tmp_path: Path) -> None:
    n_pairs = 60
    write_pairs(tmp_path, n_pairs)
    db = tmp_path / "swapjudge.db"
    with JudgeServer(policy="better", delay_s=0.04) as server:
        cfg = write_config(tmp_path, base_url=server.openai_url, judge={"max_concurrency": 4})
        cmd = [
            sys.executable,
            "-c",
            "from swapjudge.cli import main; main()",
            "run",
            str(cfg),
            "--no-progress",
        ]
        proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while _count(db) < 30 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert f"Resume with: swapjudge run {cfg}" in err and "Traceback" not in err
        con = sqlite3.connect(db)
        assert con.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]
        stored = con.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        con.close()
        assert 30 <= stored < 2 * n_pairs
        done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert f"{stored:,} already stored" in done.stderr
    assert len(stored_calls(db)) == 2 * n_pairs
