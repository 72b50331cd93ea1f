"""An HTTP error on the provider batch path is one line and exit 2 (exit 1 means "the gate failed"): a refused
key, a bad request, a server error that outlasts the retries, and the 404 a server without a batch API gives
(vLLM's and llama.cpp's servers answer only the synchronous API)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from batch_server import BatchServer
from runner_helpers import write_config, write_pairs
from swapjudge.cli import app


def _cli(*args: str) -> Result:
    """The command in this process (the claim is about its exit code and its words, not about a process);
    an exception that escapes the command's error handling fails the test instead of becoming a result."""
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
@pytest.mark.parametrize(("status", "says"), [
    (401, "HTTP 401 (authentication refused; check the API key variable"),
    (400, "HTTP 400: {{\"error\": {{\"message\": \"Invalid request\""),
    (500, "HTTP 500 (the {backend} batch API kept failing"),
    (404, "HTTP 404 at /v1/{path}"),
])
def test_a_batch_api_error_is_one_line_and_exit_2(tmp_path: Path, backend: str, status: int, says: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_pairs(tmp_path, 3)
    with BatchServer(refuse=status) as server:
        url = server.anthropic_url if backend == "anthropic" else server.openai_url
        cfg = write_config(tmp_path, backend=backend, base_url=url, judge={"batch": True, "batch_poll_s": 0.01})
        out = _cli("run", str(cfg), "--no-progress")
    assert out.exit_code == 2, out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {backend} batch: "), out.stderr
    path = "messages/batches" if backend == "anthropic" else "batches"
    assert says.format(backend=backend, path=path) in lines[0]
    if status == 404:
        assert "the server has no batch API here" in lines[0] and "set judge.batch false" in lines[0]
    runs = _cli("runs", "--format", "json")
    assert runs.exit_code == 0 and '"status": "incomplete"' in runs.stdout  # resumable, nothing lost
