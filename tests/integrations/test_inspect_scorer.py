"""The inspect_ai scorer end to end: a real inspect eval of real LLMBar pairs, judged through a real HTTP server
on 127.0.0.1 speaking the OpenAI wire format (inspect's openai-api provider), then `swapjudge import inspect`
of the log and `swapjudge analyze` of the import, compared figure by figure with the log's metrics."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog, write_eval_log
from inspect_ai.model import ModelOutput, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver
from typer.testing import CliRunner

from conftest import shared_data
from judge_server import JudgeServer, frame_answers, frame_text
from swapjudge.cli import app
from swapjudge.integrations.inspect import PLACEHOLDER_VALUE, swap_judge

MODEL = "mockllm/model"
JUDGE = "openai-api/local/judge"


def llmbar_pairs(n: int) -> list[dict[str, Any]]:
    pairs: list[dict[str, Any]] = json.loads(shared_data("llmbar", "dataset__LLMBar__Natural.json")
                                             .read_text(encoding="utf-8"))
    return pairs[:n]


class MarkedJudge(JudgeServer):
    """Names the better answer of each task (by the pair's gold label), except on the tasks in `slot_one`,
    where it names slot 1 whatever sits there; on the tasks in `garbage` it replies with no verdict."""

    def __init__(self, better: dict[str, str], slot_one: set[str], garbage: set[str] = frozenset()) -> None:
        super().__init__(policy="better")
        self.better, self.slot_one, self.garbage = better, slot_one, set(garbage)

    def decide(self, user: str, allow_tie: bool) -> str:
        task, answers = frame_text(user, "task"), frame_answers(user)
        assert task is not None and answers is not None, "the prompt frame is broken"
        if task in self.garbage:
            return "neither"
        if task in self.slot_one:
            return "A"
        return "A" if answers[0] == self.better[task] else "B"


@solver
def answer_from_metadata() -> Solver:
    """The evaluated model's answer is the sample's `answer` (a real LLMBar output), not a generation."""
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.output = ModelOutput.from_content(model=str(state.model), content=state.metadata["answer"])
        return state
    return solve


def samples(pairs: list[dict[str, Any]]) -> list[Sample]:
    """The evaluated model answers with output_1 on even items and output_2 on odd ones; the other output is
    the baseline; `label` says which of the two is better."""
    out = []
    for i, p in enumerate(pairs):
        mine, base = ("output_1", "output_2") if i % 2 == 0 else ("output_2", "output_1")
        better = "output_1" if p["label"] == 1 else "output_2"
        out.append(Sample(input=p["input"], id=f"natural-{i}", metadata={
            "answer": p[mine], "baseline": p[base], "label": "model" if better == mine else "baseline"}))
    return out


def run_eval(server: MarkedJudge, dataset: list[Sample], log_dir: Path, **scorer_args: Any) -> EvalLog:
    # not memoized: inspect would otherwise reuse the client of an earlier test's (closed) server
    judge = get_model(JUDGE, base_url=server.openai_url, api_key="test-key", memoize=False)
    task = Task(dataset=dataset, solver=answer_from_metadata(), scorer=swap_judge(model=judge, **scorer_args))
    logs = inspect_eval(task, model=MODEL, log_dir=str(log_dir), display="none", log_format="eval")
    assert logs[0].status == "success", logs[0].error
    return logs[0]


def metrics(log: EvalLog) -> dict[str, float]:
    assert log.results is not None
    return {name: m.value for name, m in log.results.scores[0].metrics.items()}


@dataclass(frozen=True)
class Done:
    returncode: int
    stdout: str
    stderr: str


def cli(*args: str) -> Done:
    """The real CLI app in this process (typer's runner): a subprocess would import inspect again each time."""
    res = CliRunner().invoke(app, list(args))
    return Done(res.exit_code, res.stdout, res.stderr)


def test_forty_llmbar_pairs_log_metrics_equal_the_import_analysis(tmp_path: Path) -> None:
    pairs = llmbar_pairs(40)
    better = {p["input"]: p["output_1"] if p["label"] == 1 else p["output_2"] for p in pairs}
    slot_one = {p["input"] for i, p in enumerate(pairs) if i % 4 == 3}  # every fourth item
    with MarkedJudge(better, slot_one) as server:
        log = run_eval(server, samples(pairs), tmp_path / "logs")
    assert server.total == 80  # two calls per pair, no retries, no follow-ups
    assert all(b["response_format"]["type"] == "json_schema" for b in server.bodies)  # structured verdicts

    # independent expectation from the labels: 30 consistent pairs, 10 flips toward slot 1
    model_better = [i for i, s in enumerate(samples(pairs)) if s.metadata and s.metadata["label"] == "model"]
    model_wins = sum(1 for i in model_better if i % 4 != 3)
    expected_win = (model_wins + 0.5 * 10) / 40
    got = metrics(log)
    assert got["swap_consistency"] == 0.75
    assert got["gate_passed"] == 1.0
    assert got["first_slot_share"] == pytest.approx((30 + 20) / 80)  # consistent pairs: one slot-1 win each
    assert got["win_rate"] == pytest.approx(expected_win)

    # every sample's score: value under half credit, both positional verdicts and who sat in slot 1
    assert log.samples is not None
    for s in log.samples:
        score = s.scores["swap_judge"] if s.scores else None
        assert score is not None and score.metadata is not None
        calls = score.metadata["swapjudge"]["calls"]
        assert {(c["first"], c["second"]) for c in calls} == {(MODEL, "baseline"), ("baseline", MODEL)}
        index = int(str(s.id).split("-")[1])
        if index % 4 == 3:
            assert [c["verdict"] for c in calls] == ["first", "first"] and score.value == 0.5
        else:
            assert score.value == (1.0 if index in model_better else 0.0)

    eval_path = Path(log.location)
    json_path = tmp_path / "log.json"
    write_eval_log(log, str(json_path), format="json")
    print("log metrics:", got)  # the figures of this run, for the record (pytest -s shows them)
    for path in (eval_path, json_path):
        records = tmp_path / f"records-{path.suffix[1:]}.jsonl"
        done = cli("import", "inspect", str(path), "-o", str(records))
        assert done.returncode == 0, done.stderr
        rows = [json.loads(line) for line in records.read_text(encoding="utf-8").splitlines()]
        assert len(rows) == 80
        assert {r["judge"] for r in rows} == {JUDGE}
        assert {r["first"] for r in rows} == {MODEL, "baseline"}
        assert {r["item"] for r in rows} == {f"natural-{i}" for i in range(40)}
        labels = {r["item"]: r["label"] for r in rows}
        assert sum(1 for v in labels.values() if v == MODEL) == len(model_better)
        analysis = cli("analyze", str(records), "--a", MODEL, "--b", "baseline", "--format", "json")
        assert analysis.returncode == 0, analysis.stderr
        out = json.loads(analysis.stdout)
        assert out["consistency"]["rate"] == got["swap_consistency"]
        assert out["verdicts"]["first_slot_rate"] == pytest.approx(got["first_slot_share"])
        assert out["win_rate"]["value"] == pytest.approx(got["win_rate"])
        assert out["gate"]["passed"] is True
        assert out["outcomes"]["flips_first"] == 10


def test_unparsed_and_excluded_samples_still_count_where_they_should(tmp_path: Path) -> None:
    """inspect drops a NaN-valued sample from every metric: the unparsed pair must still count in the
    first-slot share's calls-that-parsed (none) and nowhere else, and the split excluded from the win rate under
    `exclude` must still count as an inconsistent pair in swap_consistency."""
    pairs = llmbar_pairs(8)
    better = {p["input"]: p["output_1"] if p["label"] == 1 else p["output_2"] for p in pairs}
    with MarkedJudge(better, slot_one={pairs[1]["input"]}, garbage={pairs[0]["input"]}) as server:
        log = run_eval(server, samples(pairs), tmp_path / "logs", tie_policy="exclude")
    assert server.total == 16
    got = metrics(log)
    # item 0 unparsed (incomplete), item 1 a flip (complete, inconsistent), items 2-7 consistent
    assert got["swap_consistency"] == pytest.approx(6 / 7)  # were item 1 dropped, this would read 1.0
    data = samples(pairs)
    model_wins = sum(1 for i in range(2, 8) if data[i].metadata and data[i].metadata["label"] == "model")
    assert got["win_rate"] == pytest.approx(model_wins / 6)  # exclude: the split is out of the win rate only
    assert got["first_slot_share"] == pytest.approx((6 + 2) / 14)  # 14 parsed calls, item 1 gave 2 slot-1 wins
    assert got["gate_passed"] == 1.0
    assert log.samples is not None
    by_id = {s.id: s.scores["swap_judge"] for s in log.samples if s.scores}
    for item in ("natural-0", "natural-1"):
        assert by_id[item].value == PLACEHOLDER_VALUE and not math.isnan(float(str(by_id[item].value)))
        assert by_id[item].metadata is not None and by_id[item].metadata["swapjudge"]["scored"] is False
    assert [c["verdict"] for c in by_id["natural-0"].metadata["swapjudge"]["calls"]] == [None, None]
    # the import keeps the unparsed calls as null verdicts, and analyze agrees with the log
    records = tmp_path / "records.jsonl"
    done = cli("import", "inspect", str(log.location), "-o", str(records))
    assert done.returncode == 0, done.stderr
    assert "2 null verdict" in done.stderr
    out = json.loads(cli("analyze", str(records), "--a", MODEL, "--b", "baseline", "--tie-policy", "exclude",
                         "--format", "json").stdout)
    assert out["pairs"]["incomplete"] == 1 and out["consistency"]["rate"] == pytest.approx(6 / 7)
    assert out["win_rate"]["value"] == pytest.approx(got["win_rate"])


def test_gate_failure_makes_win_rate_nan(tmp_path: Path) -> None:
    pairs = llmbar_pairs(8)
    better = {p["input"]: p["output_1"] if p["label"] == 1 else p["output_2"] for p in pairs}
    with MarkedJudge(better, slot_one={p["input"] for p in pairs[:4]}) as server:
        log = run_eval(server, samples(pairs), tmp_path / "logs")
    got = metrics(log)
    assert got["swap_consistency"] == 0.5 and got["gate_passed"] == 0.0 and math.isnan(got["win_rate"])


def test_inspect_finds_the_scorer_by_name_through_the_entry_point(tmp_path: Path) -> None:
    """In a fresh interpreter that never imports swapjudge itself, inspect's registry lookup of
    `swapjudge/swap_judge` loads the `inspect_ai` entry point this project declares (installed here as a
    minimal distribution carrying pyproject's entry point, as pip would write it)."""
    import subprocess
    import sys
    import tomllib

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    target = project["project"]["entry-points"]["inspect_ai"]["swapjudge"]
    dist = tmp_path / "swapjudge_entry-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: swapjudge-entry\nVersion: 0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(f"[inspect_ai]\nswapjudge = {target}\n", encoding="utf-8")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from inspect_ai._util.registry import registry_lookup; "
            "print(registry_lookup('scorer', 'swapjudge/swap_judge') is not None, "
            "'swapjudge.integrations.inspect' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]


def test_entry_point_registers_the_scorer_by_name() -> None:
    import tomllib

    from inspect_ai._util.registry import registry_lookup

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    target = project["project"]["entry-points"]["inspect_ai"]["swapjudge"]
    __import__(target)
    scorer_factory = registry_lookup("scorer", "swapjudge/swap_judge")
    assert scorer_factory is not None
    for name in ("swap_consistency", "first_slot_share", "win_rate", "gate_passed"):
        assert registry_lookup("metric", f"swapjudge/{name}") is not None


@pytest.mark.parametrize("policy", ["half_credit", "no_credit", "exclude", "separate"])
def test_pair_values_average_to_the_policy_win_rate(policy: str) -> None:
    """Score.value per sample, averaged over the samples the policy scores, equals swapjudge's win rate under
    that policy (core.policy.win_rate_of_counts, computed from the outcome counts)."""
    from swapjudge.core.policy import TiePolicy, win_rate_of_counts
    from swapjudge.integrations.inspect import pair_value

    rng = np.random.default_rng(7)
    a, b = MODEL, "baseline"
    kinds = rng.choice(["a", "b", "flip", "tie", "half", "null"], size=300)
    make = {  # (verdict with a first, verdict with b first)
        "a": ("first", "second"), "b": ("second", "first"), "flip": ("first", "first"), "tie": ("tie", "tie"),
        "half": ("tie", "second"), "null": (None, "first"),
    }
    values = []
    for kind in kinds:
        v1, v2 = make[str(kind)]
        calls = [{"first": a, "second": b, "verdict": v1}, {"first": b, "second": a, "verdict": v2}]
        values.append(pair_value(calls, a, TiePolicy(policy)))
    counts = {k: int((kinds == k).sum()) for k in make}
    expected = win_rate_of_counts(a, b, counts["a"], counts["b"], counts["flip"] + counts["tie"] + counts["half"],
                                  policy)
    scored = [v for v in values if v is not None]
    if policy == "separate":  # the headline is a's share of consistent wins; Score.value gives splits half
        assert np.mean(scored) == pytest.approx(expected.half_credit.value)
    else:
        assert np.mean(scored) == pytest.approx(expected.headline.value)
    assert values.count(None) == counts["null"] + (counts["flip"] + counts["tie"] + counts["half"]
                                                   if policy == "exclude" else 0)


class DriftingJudge(MarkedJudge):
    """MarkedJudge in the first epoch; from its second sight of a prompt on, it names slot 1 on `drift` tasks."""

    def __init__(self, better: dict[str, str], slot_one: set[str], drift: set[str]) -> None:
        super().__init__(better, slot_one)
        self.drift, self.seen = drift, Counter[str]()

    def decide(self, user: str, allow_tie: bool) -> str:
        self.seen[user] += 1
        if self.seen[user] > 1 and frame_text(user, "task") in self.drift:
            return "A"
        return super().decide(user, allow_tie)


def test_two_epochs_count_every_epoch_and_import_as_two_rounds(tmp_path: Path) -> None:
    """inspect's epochs re-run each sample. Its epoch reducers keep only the first epoch's metadata, so the
    metrics read the unreduced scores: the log's figures are the analysis of every epoch's calls, and the import
    keeps each epoch as a round of the same items."""
    pairs = llmbar_pairs(12)
    better = {p["input"]: p["output_1"] if p["label"] == 1 else p["output_2"] for p in pairs}
    slot_one = {p["input"] for i, p in enumerate(pairs) if i % 4 == 3}
    drift = {p["input"] for i, p in enumerate(pairs) if i < 6}
    with DriftingJudge(better, slot_one, drift) as server:
        judge = get_model(JUDGE, base_url=server.openai_url, api_key="test-key", memoize=False)
        task = Task(dataset=samples(pairs), solver=answer_from_metadata(), scorer=swap_judge(model=judge), epochs=2)
        [log] = inspect_eval(task, model=MODEL, log_dir=str(tmp_path / "logs"), display="none", log_format="eval")
    assert log.status == "success", log.error
    assert server.total == 48  # 12 pairs x 2 orders x 2 epochs
    got = metrics(log)
    # epoch 1: items 3, 7, 11 flip (9 of 12 consistent); epoch 2: items 0-5, 7, 11 flip (4 of 12)
    assert got["swap_consistency"] == pytest.approx(13 / 24)
    assert got["gate_passed"] == 0.0 and math.isnan(got["win_rate"])  # epoch 1 alone would have passed (0.75)

    records = tmp_path / "records.jsonl"
    done = cli("import", "inspect", log.location, "-o", str(records))
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in records.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 48 and sorted({r["round"] for r in rows}) == [0, 1]
    analysis = cli("analyze", str(records), "--a", MODEL, "--b", "baseline", "--format", "json")
    out = json.loads(analysis.stdout)
    assert out["consistency"]["pairs"] == 24 and out["consistency"]["rate"] == pytest.approx(got["swap_consistency"])
    assert out["consistency"]["independent"] == "items" and out["consistency"]["clusters"] == 12
    assert out["verdicts"]["first_slot_rate"] == pytest.approx(got["first_slot_share"])
    assert out["gate"]["passed"] is False


def test_pairs_scored_shows_the_samples_a_failing_judge_left_out(tmp_path: Path) -> None:
    """A judge that fails on the hard samples (HTTP 500 on them, inspect gives up after one retry) errors those
    samples; with fail_on_error=False the eval goes on and its metrics are over the easy ones only.
    `pairs_scored` says how many pairs the metrics are over, so the gap to the log's samples shows."""
    from inspect_ai.model import GenerateConfig

    pairs = llmbar_pairs(8)
    better = {p["input"]: p["output_1"] if p["label"] == 1 else p["output_2"] for p in pairs}
    hard = {p["input"] for p in pairs[:3]}
    with MarkedJudge(better, slot_one=set(), garbage={pairs[3]["input"]}) as server:
        server.faults = lambda user, attempt: "500" if frame_text(user, "task") in hard else None
        judge = get_model(JUDGE, base_url=server.openai_url, api_key="test-key", memoize=False,
                          config=GenerateConfig(max_retries=1, timeout=30))
        task = Task(dataset=samples(pairs), solver=answer_from_metadata(), scorer=swap_judge(model=judge),
                    fail_on_error=False)
        (log,) = inspect_eval(task, model=MODEL, log_dir=str(tmp_path / "logs"), display="none", log_format="eval")
    assert log.status == "success" and log.results is not None
    assert (log.results.total_samples, log.results.completed_samples) == (8, 5)  # 3 samples errored
    got = metrics(log)
    # 5 samples scored; one of them (pairs[3]) had no parsable verdict: 4 pairs are what the figures are over
    assert got["pairs_scored"] == 4
    assert got["swap_consistency"] == 1.0 and got["gate_passed"] == 1.0  # the easy samples alone
    # the import of the log and `analyze` agree on the count: what was scored, not the 8 samples of the task
    records = tmp_path / "records.jsonl"
    done = cli("import", "inspect", str(log.location), "-o", str(records))
    assert done.returncode == 0, done.stderr
    out = json.loads(cli("analyze", str(records), "--a", MODEL, "--b", "baseline", "--format", "json").stdout)
    assert out["pairs"] == {"total": 5, "complete": 4, "incomplete": 1}


def test_the_page_lists_every_metric_and_the_judge_limits() -> None:
    from swapjudge.integrations import inspect as scorer_module

    page = (Path(__file__).resolve().parents[2] / "docs" / "inspect.md").read_text(encoding="utf-8")
    names = [n for n in ("swap_consistency", "first_slot_share", "win_rate", "gate_passed", "pairs_scored")
             if hasattr(scorer_module, n)]
    assert len(names) == 5
    for name in names:
        assert f"| `{name}` |" in page
    for setting in ("attempt_timeout", "max_retries", "fail_on_error"):
        assert f"`{setting}" in page
