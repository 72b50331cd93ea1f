"""The runner on real pairs (LLMBar FairEval, human labels) against a real HTTP judge server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge_server import JudgeServer, frame_answers
from runner_helpers import write_config
from swapjudge.config import load_config
from swapjudge.runner.session import run_session
from swapjudge.store import Store
from swapjudge.store.analysis import analyze_run

SOURCE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "llmbar" / "dataset__Processed__FairEval.json"


def _pairs(tmp_path: Path) -> list[dict[str, object]]:
    if not SOURCE.exists():
        pytest.fail(f"real test data missing: {SOURCE} (the project expects ../shared/data beside its root)")
    rows = json.loads(SOURCE.read_text(encoding="utf-8"))
    pairs = [
        {
            "item": f"fe{i:03d}",
            "prompt": r["input"],
            "answers": {"out1": r["output_1"], "out2": r["output_2"]},
            "label": f"out{r['label']}",
        }
        for i, r in enumerate(rows)
    ]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs), encoding="utf-8")
    return pairs


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
def test_length_judge_on_real_pairs_is_consistent_and_its_accuracy_maps_back(tmp_path: Path, backend: str) -> None:
    pairs = _pairs(tmp_path)
    with JudgeServer(policy="longer") as server:
        url = server.openai_url if backend == "openai" else server.anthropic_url
        cfg = write_config(
            tmp_path, backend=backend, base_url=url, pairs={"path": "pairs.jsonl", "a": "out1", "b": "out2"}
        )
        outcome = run_session(load_config(cfg), progress=False)
        # Real answers (markdown, code, quotes) never break the frame: the server recovers each exactly.
        for body in server.bodies:
            user = body["messages"][1]["content"] if backend == "openai" else body["messages"][0]["content"][0]["text"]
            assert frame_answers(user) is not None
    assert outcome.complete and outcome.stats.made == 2 * len(pairs)
    with Store(tmp_path / "swapjudge.db") as store:
        (analysis,) = analyze_run(store, outcome.run_id)
    result = analysis.to_dict()
    # A judge that always picks the longer answer ignores position: every pair with unequal lengths is
    # consistent, and its accuracy is the share of pairs whose labelled answer is the longer one.
    unequal = [p for p in pairs if len(p["answers"]["out1"]) != len(p["answers"]["out2"])]  # type: ignore[index]
    assert result["outcomes"]["consistent"] == len(pairs)
    assert result["consistency"]["rate"] == 1.0
    longer_is_label = sum(
        (len(p["answers"]["out1"]) > len(p["answers"]["out2"])) == (p["label"] == "out1")  # type: ignore[index]
        for p in unequal
    )
    assert result["accuracy"]["both"] == pytest.approx(longer_is_label / len(pairs))
    assert result["accuracy"]["pairs"] == len(pairs) == 66
