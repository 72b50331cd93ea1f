"""Crash safety of the batch path: the real CLI in a subprocess, killed with SIGKILL at every step (before the
upload, after it, after the batch is created, while polling, while downloading, half-way through storing), then
run again. The fake provider counts every call it received in a created batch: each exactly once, and the store
ends complete."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from batch_server import BatchServer
from runner_helpers import stored_calls, write_config, write_pairs

N = 12
SRC = str(Path(__file__).resolve().parents[2] / "src")
# Results are committed 5 at a time here, so `storing:2` dies with some of a batch's results stored.
RUN = "import swapjudge.runner.batch.engine as e; e.STORE_CHUNK = 5; from swapjudge.cli import main; main()"


def _run(tmp: Path, cfg: Path, fault: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    env.pop("SWAPJUDGE_BATCH_FAULT", None)
    if fault:
        env["SWAPJUDGE_BATCH_FAULT"] = fault
    return subprocess.run([sys.executable, "-c", RUN, "run", str(cfg), "--no-progress"], cwd=tmp,
                          capture_output=True, text=True, env=env, timeout=120)


STEPS = {
    "openai": ["before_upload", "after_upload", "after_create", "polling:2", "download", "storing:2"],
    "anthropic": ["before_upload", "after_create", "polling:2", "download", "storing:2"],
}


@pytest.mark.parametrize(("backend", "step"), [(b, s) for b, steps in STEPS.items() for s in steps])
def test_kill_9_at_every_step_then_resume_pays_each_call_once(tmp_path: Path, backend: str, step: str) -> None:
    write_pairs(tmp_path, N)
    with BatchServer(polls_to_end=2) as server:
        url = server.anthropic_url if backend == "anthropic" else server.openai_url
        cfg = write_config(tmp_path, backend=backend, base_url=url, judge={"batch": True, "batch_poll_s": 0.02})
        killed = _run(tmp_path, cfg, step)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        resumed = _run(tmp_path, cfg, None)
        assert resumed.returncode == 0, resumed.stderr
        assert len(server.received) == 2 * N and set(server.received.values()) == {1}
        assert server.created == 1
    calls = stored_calls(tmp_path / "swapjudge.db")
    assert len(calls) == 2 * N and all(c["error"] is None and c["verdict"] == (
        "first" if c["first"] == "good" else "second") for c in calls)
