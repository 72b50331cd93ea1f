"""docs/decide.md stays true: its real-data example (MT-Bench, gpt-4-0613 in both orders) and its Python block."""

from __future__ import annotations

import re
from pathlib import Path

from decision_streams import DECISION, decision_yaml, stream, write
from swapjudge.workflows.decide import decide

ROOT = Path(__file__).resolve().parents[2]
MTBENCH = ROOT / "examples" / "mtbench_gpt4_vs_vicuna.jsonl"


def test_the_mtbench_example_gives_the_figures_the_page_prints():
    gpt4 = decide(MTBENCH, {"candidate": "gpt-4", "incumbent": "vicuna-13b-v1.3", "items": 80})
    assert gpt4.headline == ("Ship: the candidate gpt-4 wins 90.6% of 80 items (lower bound 85.9% > 50%); judge "
                             "consistency 85% (gate 70%)")
    assert (gpt4.counts.wins, gpt4.counts.losses, gpt4.counts.splits) == (66, 1, 13) and gpt4.judge == "gpt-4-0613"
    small = decide(MTBENCH, {"candidate": "vicuna-7b-v1.3", "incumbent": "vicuna-13b-v1.3", "items": 80})
    assert small.verdict == "keep" and small.consistency is not None and small.consistency.rate == 0.675
    page = (ROOT / "docs" / "decide.md").read_text()
    assert gpt4.headline in page and "67.5%, below the gate" in page


def test_the_python_block_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "records.jsonl", stream(400, 0.5, 0.25, seed=1))
    decision_yaml(tmp_path / "decision.yaml", **{k: v for k, v in DECISION.items() if k != "candidate"})
    page = (ROOT / "docs" / "decide.md").read_text()
    namespace: dict[str, object] = {}
    for block in re.findall(r"```python\n(.*?)```", page, flags=re.S):
        if "swapjudge_decide" in block:
            continue  # the pytest example: run by tests/integrations/test_pytest_plugin.py
        exec(compile(block, "decide.md", "exec"), namespace)
    assert namespace["verdict"].verdict == "ship"  # type: ignore[attr-defined]
    assert namespace["plan"].items is not None  # type: ignore[attr-defined]
