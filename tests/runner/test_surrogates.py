"""A judge reply whose JSON carries a lone surrogate (`\\udced`, which no UTF-8 file can hold) is a paid reply like
any other: stored with the surrogate replaced by U+FFFD, parsed from the very text that is stored, never lost.
Through the real CLI against a real judge server on 127.0.0.1 (synchronous path) and an offline engine's output
file (`batch: files`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from judge_server import JudgeServer
from runner_helpers import stored_calls, write_config, write_pairs

SRC = str(Path(__file__).resolve().parents[2] / "src")
LONE = "\udced"  # what a model's broken UTF-16 decoding leaves behind: a low surrogate with no high one


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "swapjudge", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": SRC}, timeout=120)


class SurrogateServer(JudgeServer):
    """The fake judge, with a lone surrogate in every reply's reason (and, for `broken_label` prompts, in the
    label itself, which then no longer parses)."""

    def __init__(self, broken_label: str | None = None) -> None:
        super().__init__(policy="better")
        self.broken_label = broken_label

    def handle(self, path: str, body: dict[str, Any], auth: str) -> tuple[int, dict[str, str], bytes]:
        status, headers, payload = super().handle(path, body, auth)
        reply = json.loads(payload)
        if status == 200 and "choices" in reply:
            message = reply["choices"][0]["message"]
            message["content"] = surrogate_reply(message["content"], body["messages"][1]["content"],
                                                 self.broken_label)
            payload = json.dumps(reply).encode()  # the wire carries the escape \udced: valid JSON, no UTF-8
        return status, headers, payload


def surrogate_reply(content: str, prompt: str, broken_label: str | None) -> str:
    if content.startswith("{"):
        verdict = json.loads(content)
        if broken_label is not None and broken_label in prompt:
            verdict["winner"] += LONE
        verdict["reason"] = f"picked {LONE} for its accuracy"
        return json.dumps(verdict, ensure_ascii=False)
    return content  # the label follow-up: a bare label


def test_sync_run_stores_every_reply_with_a_lone_surrogate(tmp_path: Path) -> None:
    write_pairs(tmp_path, 9)
    with SurrogateServer(broken_label="Question 4:") as server:
        write_config(tmp_path, base_url=server.openai_url)
        done = _cli(tmp_path, "run", "run.yaml", "--no-progress", "--format", "json")
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        paid = server.replied
        calls = stored_calls(tmp_path / "swapjudge.db")
        assert len(calls) == 18 and paid == 18 + 2  # item 4's two calls took the label follow-up
        again = _cli(tmp_path, "run", "run.yaml", "--no-progress")
        assert again.returncode == 0 and server.replied == paid  # nothing asked again: nothing paid twice
    assert all("\ufffd for its accuracy" in c["raw"] for c in calls)
    by_call = {(c["item"], c["first"]): c["verdict"] for c in calls}
    assert by_call == {(f"q{i:03d}", first): ("first" if first == "good" else "second")
                       for i in range(9) for first in ("good", "bad")}
    # the unparsable first reply of item 4 is kept with its follow-up, its surrogate replaced too
    assert all('\ufffd"' in c["raw"] and "[follow-up]" in c["raw"] for c in calls if c["item"] == "q004")
    exported = _cli(tmp_path, "export", "1", "-o", "e.csv")
    assert exported.returncode == 0, exported.stderr
    assert (tmp_path / "e.csv").read_text(encoding="utf-8").count("\ufffd for its accuracy") == 18


def test_batch_files_store_all_twenty_lines_when_one_carries_a_lone_surrogate(tmp_path: Path) -> None:
    """`batch: files`: one output line of 20 with a lone surrogate in its reason and one in its label; all 20 are
    stored, the broken label unparsed (a batch has no follow-up turn) with its text kept."""
    write_pairs(tmp_path, 10)
    write_config(tmp_path, base_url="http://127.0.0.1:9/v1", judge={"batch": "files", "batch_dir": "batches"})
    first = _cli(tmp_path, "run", "run.yaml", "--no-progress")
    assert first.returncode == 0, first.stderr
    (request,) = (tmp_path / "batches").glob("swapjudge-*.requests.jsonl")
    judge = JudgeServer()
    lines = []
    for n, raw in enumerate(request.read_text().splitlines()):
        r = json.loads(raw)
        _, _, reply = judge.handle(r["url"], r["body"], "")
        body = json.loads(reply)
        prompt = r["body"]["messages"][1]["content"]
        if "Question 3:" in prompt or "Question 6:" in prompt:
            message = body["choices"][0]["message"]
            message["content"] = surrogate_reply(message["content"], prompt, "Question 6:")
        lines.append(json.dumps({"id": f"vllm-{n}", "custom_id": r["custom_id"], "error": None,
                                 "response": {"status_code": 200, "request_id": f"req-{n}", "body": body}}))
    assert len(lines) == 20 and sum("\\udced" in line for line in lines) == 4
    request.with_name(request.name.replace(".requests.", ".output.")).write_text("\n".join(lines) + "\n")
    done = _cli(tmp_path, "run", "run.yaml", "--no-progress", "--format", "json")
    assert "Traceback" not in done.stderr, done.stderr
    calls = stored_calls(tmp_path / "swapjudge.db")
    assert len(calls) == 20 and all(c["error"] is None for c in calls)
    unparsed = [c for c in calls if c["verdict"] is None]
    assert sorted(c["item"] for c in unparsed) == ["q006", "q006"]
    assert all("\ufffd for its accuracy" in c["raw"] for c in calls if c["item"] in ("q003", "q006"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["run"]["stats"]["unparsed_stored"] == 2
