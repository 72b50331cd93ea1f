"""End to end through llama.cpp's own OpenAI-compatible server (llama-cpp-python[server]) with the small test
model: the `openai` backend, the runner, the store and the analysis against a real local inference server."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runner_helpers import stored_calls, write_config, write_pairs
from swapjudge.cli import app
from swapjudge.core.analysis import analyze_records
from swapjudge.judges.model_files import TEST_MODEL, resolve_model
from swapjudge.reading.records import read_records

ALIAS = "smollm2-135m"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(resolve_model(TEST_MODEL)),
           "--model_alias", ALIAS, "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
           # one thread for the prompt too: the server's default is one per core, and two spinning threads on a
           # busy 2-core machine took 12 s for a 242-token prompt that one thread evaluates in 4 s
           "--n_threads", "1", "--n_threads_batch", "1", "--verbose", "False"]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama.cpp server exited with {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2) as reply:
                    assert ALIAS in reply.read().decode()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"llama.cpp server did not come up: {log.read_text()[-2000:]}")
                time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.slow
def test_run_through_llama_cpp_server(llama_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_pairs(tmp_path, 4)
    write_config(tmp_path, base_url=llama_server,
                 judge={"model": ALIAS, "structured_output": False, "max_concurrency": 1, "timeout_s": 120})
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(app, ["run", "run.yaml"])
    # exit 0 (gate passed) or 1 (gate failed) are both honest outcomes for a 135M judge; 2 would be a broken run
    assert out.exit_code in (0, 1), out.output
    calls = stored_calls(tmp_path / "swapjudge.db")
    # every pair judged exactly once in each order, every reply kept
    keys = [(c["item"], c["first"], c["second"]) for c in calls]
    assert len(keys) == len(set(keys)) == 8
    assert {(c["item"], frozenset((c["first"], c["second"]))) for c in calls} == {
        (f"q{i:03d}", frozenset(("good", "bad"))) for i in range(4)}
    assert all(c["raw"] for c in calls)
    # the exported records analyse to exactly what the stored verdicts say
    exported = CliRunner().invoke(app, ["export", "--latest", "-o", "calls.jsonl"])
    assert exported.exit_code == 0, exported.output
    [result] = analyze_records(read_records(tmp_path / "calls.jsonl"), a="good", b="bad", min_consistency=0)
    verdict = {(c["item"], c["first"]): c["verdict"] for c in calls}
    consistent = 0
    complete = 0
    for i in range(4):
        v_good, v_bad = verdict[(f"q{i:03d}", "good")], verdict[(f"q{i:03d}", "bad")]
        if v_good is None or v_bad is None:
            continue
        complete += 1
        named_good = {"first": "good", "second": "bad", "tie": "tie"}
        named_bad = {"first": "bad", "second": "good", "tie": "tie"}
        consistent += named_good[v_good] == named_bad[v_bad]
    assert result.outcomes.complete == complete
    assert result.outcomes.consistent == consistent
    json.dumps(result.to_dict())
