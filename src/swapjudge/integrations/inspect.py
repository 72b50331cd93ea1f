"""An inspect_ai scorer that judges every sample in both presentation orders (`pip install swapjudge[inspect]`).

    from swapjudge.integrations.inspect import swap_judge
    Task(dataset=..., solver=generate(), scorer=swap_judge(model="openai/gpt-4.1-mini"))

For each sample the judge compares the evaluated model's answer (`state.output.completion`) with the baseline
answer in `state.metadata[baseline]`, twice, once in each order, through inspect's `get_model` (so every
provider and batch mode inspect supports works). The prompt frame and the verdict parser are swapjudge's own;
a seeded coin per sample says which order goes first. `Score.value` is the sample's score for the evaluated
answer under the tie policy; `Score.metadata["swapjudge"]` holds both positional verdicts and which answer sat
in slot 1 of each call. The metrics are computed by swapjudge's own analysis from that metadata, never from
`Score.value`, so a sample whose pair is incomplete or whose split the policy excludes still counts where it
should (inspect drops a sample whose value is NaN from every metric, so no value is ever NaN).
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ResponseSchema,
    get_model,
)
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState
from inspect_ai.util import JSONSchema

from swapjudge.core.analysis import analyze_records
from swapjudge.core.policy import DEFAULT_MIN_CONSISTENCY, TiePolicy
from swapjudge.judges.base import JudgeRequest
from swapjudge.judges.prompts import parse_reply, render_request, verdict_schema
from swapjudge.reading.records import records_from_dicts
from swapjudge.runner.plan import coin_first

BASELINE = "baseline"  # the baseline answer's identity in records
METADATA_KEY = "swapjudge"
# inspect providers whose API takes a JSON schema for the reply (inspect passes `response_schema` through)
STRUCTURED_APIS = frozenset({"openai", "openai-api", "azureai", "google", "mistral", "grok", "vllm", "sglang",
                             "groq", "together", "fireworks", "openrouter", "deepseek", "ollama", "llama-cpp-python"})
PLACEHOLDER_VALUE = 0.5  # Score.value where the policy gives none (metadata says so): never NaN, see above


def _structured(judge: Model) -> bool:
    return str(judge).split("/", 1)[0] in STRUCTURED_APIS


def _label(raw: Any, a: str, baseline: str) -> str | None:
    """The sample's better answer as a record identity: the evaluated model (its name, or "model"), the
    baseline (its metadata key, or "baseline"), or "tie"; anything else is no label."""
    if raw in (a, "model"):
        return a
    if raw in (baseline, BASELINE):
        return BASELINE
    return "tie" if raw == "tie" else None


async def _judge_call(judge: Model, request: JudgeRequest) -> tuple[str | None, str]:
    """(verdict or None, reply text) for one call; an error reply is a null verdict, not a failed sample."""
    config = GenerateConfig()
    if request.structured:
        config = GenerateConfig(response_schema=ResponseSchema(
            name="verdict", json_schema=JSONSchema.model_validate(verdict_schema(request)), strict=True))
    messages: list[ChatMessage] = [ChatMessageSystem(content=request.system), ChatMessageUser(content=request.user)]
    output = await judge.generate(messages, config=config)
    if output.error:
        return None, output.error
    text = output.completion
    return parse_reply(text, request).verdict, text


def _winner(call: dict[str, Any]) -> str | None:
    """The identity a call named ("tie" for a tie), None when it has no verdict."""
    verdict = call["verdict"]
    if verdict is None:
        return None
    return "tie" if verdict == "tie" else call["first"] if verdict == "first" else call["second"]


def pair_value(calls: Sequence[dict[str, Any]], a: str, tie_policy: TiePolicy) -> float | None:
    """The evaluated answer's score for one pair under the policy; None where it gives none."""
    winners = [_winner(c) for c in calls]
    if any(w is None for w in winners):
        return None  # incomplete: excluded from every rate
    if winners[0] == winners[1] != "tie":
        return 1.0 if winners[0] == a else 0.0
    return {TiePolicy.half_credit: 0.5, TiePolicy.separate: 0.5, TiePolicy.no_credit: 0.0,
            TiePolicy.exclude: None}[tie_policy]


def records_from_scores(scores: Sequence[SampleScore]) -> list[dict[str, Any]]:
    """Presentation records (two per sample and epoch) from the scorer's metadata. With several epochs a
    sample's scores come once per epoch: the k-th is round k - 1 of the same item, as the log importer has it."""
    out = []
    seen: Counter[str] = Counter()
    for s in scores:
        meta = (s.score.metadata or {}).get(METADATA_KEY)
        if not meta:
            continue
        item = str(meta["item"])
        for call in meta["calls"]:
            out.append({"item": item, "first": call["first"], "second": call["second"],
                        "verdict": call["verdict"], "judge": meta["judge"], "round": seen[item],
                        "label": meta.get("label")})
        seen[item] += 1
    return out


def analysis_of(scores: Sequence[SampleScore]) -> dict[str, Any] | None:
    """swapjudge's analysis of the scored samples (None when there are none), under the scorer's settings."""
    rows = records_from_scores(scores)
    if not rows:
        return None
    meta = next((s.score.metadata or {})[METADATA_KEY] for s in scores
                if (s.score.metadata or {}).get(METADATA_KEY))
    loaded = records_from_dicts(rows, source="inspect scores", allow_unpaired=True)
    result = analyze_records(loaded, judge=meta["judge"], a=meta["a"], b=meta["b"], tie_policy=meta["tie_policy"],
                             min_consistency=meta["min_consistency"])
    return result[0].to_dict()


def _figure(value: Any) -> float:
    return float("nan") if value is None else float(value)


# The metrics read every epoch's calls (scores="unreduced"): inspect's epoch reducers keep only the first
# epoch's metadata, so on reduced scores a run of several epochs would be judged on its first alone.
@metric(scores="unreduced")
def swap_consistency() -> Metric:
    """Share of complete pairs whose two verdicts name the same answer (or both say tie)."""
    def compute(scores: list[SampleScore]) -> float:
        out = analysis_of(scores)
        return float("nan") if out is None else _figure(out["consistency"]["rate"])
    return compute


@metric(scores="unreduced")
def first_slot_share() -> Metric:
    """Share of decided verdicts (over calls) that name the answer in slot 1; 0.5 means no slot preference."""
    def compute(scores: list[SampleScore]) -> float:
        out = analysis_of(scores)
        return float("nan") if out is None else _figure(out["verdicts"]["first_slot_rate"])
    return compute


@metric(scores="unreduced")
def win_rate() -> Metric:
    """The evaluated model's win rate over the baseline under the tie policy; NaN when the gate fails."""
    def compute(scores: list[SampleScore]) -> float:
        out = analysis_of(scores)
        if out is None or not out["gate"]["passed"] or not out.get("win_rate"):
            return float("nan")
        return _figure(out["win_rate"]["value"])
    return compute


@metric(scores="unreduced")
def gate_passed() -> Metric:
    """1.0 when swap-consistency reaches the minimum, else 0.0."""
    def compute(scores: list[SampleScore]) -> float:
        out = analysis_of(scores)
        return 0.0 if out is None else float(bool(out["gate"]["passed"]))
    return compute


@metric(scores="unreduced")
def pairs_scored() -> Metric:
    """How many pairs the metrics are over: judged in both orders with a verdict each (every epoch's). A sample
    the scorer failed on (a judge call that gave up: `fail_on_error=False` goes on without it) is in no metric;
    compare this count with the log's samples, or a judge failing on the hard samples reads as good on the easy."""
    def compute(scores: list[SampleScore]) -> int:
        out = analysis_of(scores)
        return 0 if out is None else int(out["pairs"]["complete"])
    return compute


@scorer(metrics=[swap_consistency(), first_slot_share(), win_rate(), gate_passed(), pairs_scored()])
def swap_judge(model: str | Model | None = None, baseline: str = BASELINE, rubric: str | None = None,
               tie_policy: str = "half_credit", min_consistency: float = DEFAULT_MIN_CONSISTENCY,
               allow_tie: bool = False, seed: str = "") -> Scorer:
    """Judge the evaluated answer against `state.metadata[baseline]` in both orders.

    model: the judge (any inspect model name or Model; None: the model under evaluation). rubric: the judging
    rubric (default swapjudge's). tie_policy: half_credit | exclude | no_credit | separate, fixed before the
    run. min_consistency: the gate; below it `win_rate` is NaN. allow_tie: let the judge answer tie. seed: the
    coin that picks which order goes first (as `seed` in a swapjudge run configuration).
    """
    policy = TiePolicy(tie_policy)
    if not 0 <= min_consistency <= 1:
        raise ValueError(f"min_consistency must be between 0 and 1, got {min_consistency}")

    async def score(state: TaskState, target: Target) -> Score:
        judge = get_model(model)
        if baseline not in state.metadata:
            raise ValueError(f"sample {state.sample_id}: metadata has no {baseline!r} (the baseline answer)")
        a, item = str(state.model), str(state.sample_id)
        answers = {a: state.output.completion, BASELINE: str(state.metadata[baseline])}
        first = coin_first(seed, item, a, BASELINE)
        order = [(first, BASELINE if first == a else a)]
        order.append((order[0][1], order[0][0]))
        structured = _structured(judge)
        requests = [render_request(task=state.input_text, first=answers[x], second=answers[y], rubric=rubric,
                                   allow_tie=allow_tie, chain_of_thought=False, structured=structured)
                    for x, y in order]
        replies = await asyncio.gather(*(_judge_call(judge, r) for r in requests))
        calls = [{"first": x, "second": y, "verdict": v, "raw": text}
                 for (x, y), (v, text) in zip(order, replies, strict=True)]
        value = pair_value(calls, a, policy)
        label = _label(state.metadata.get("label"), a, baseline)
        meta = {"item": item, "a": a, "b": BASELINE, "judge": str(judge), "calls": calls,
                "tie_policy": policy.value, "min_consistency": min_consistency, "structured": structured,
                "scored": value is not None, "label": label}
        verdicts = ", ".join(f"{c['first']} first: {c['verdict']}" for c in calls)
        return Score(value=PLACEHOLDER_VALUE if value is None or math.isnan(value) else value,
                     answer=state.output.completion, explanation=verdicts, metadata={METADATA_KEY: meta})

    return score
