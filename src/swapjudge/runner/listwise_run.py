"""A best-of-N run: `protocol: listwise` in a run configuration. Each item's N answers are shown in rotated slot
orders (`rotations: latin | all | random`, runner.listwise_plan), named by slot only, and the judge's pick is
written as one listwise record per call (docs/records.md) to `output`, a JSON Lines file.

The records file is the run's store: each record is appended and flushed as its call returns, and running the
same configuration again makes only the calls whose (judge, item, slot order) is not in it yet (resume; the
replies already there are the cache). Every call goes through the judge's plain completion under its retry
policy, rate limits and concurrency, as anchored scoring does; the embedded judge (`backend: local`,
`mode: logprobs`) reads the pick from the next-token probabilities of the N slot labels and records them.

```yaml
protocol: listwise
rotations: latin            # latin (N calls per item), all (N! calls), random (N random orders)
seed: 0
judge: {backend: local, n_ctx: 4096}
pairs: {path: answers.jsonl}  # {"item": .., "task": .., "answers": {system: text}, "label": system (optional)}
output: listwise.jsonl
gates: {min_self_consistency: 0.70}
```
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from swapjudge.config import JudgeConfig, text_hash
from swapjudge.errors import ConfigError, InputError, SwapjudgeError
from swapjudge.judges.base import Completer, FatalJudgeError
from swapjudge.judges.listwise_prompts import PICK_PREFIX, RUBRIC, parse_pick, render
from swapjudge.reading.listwise import MIN_SLOTS
from swapjudge.reading.textfiles import decode_text, json_lines, read_bytes
from swapjudge.runner.listwise_plan import ListwiseCallPlan, plan_listwise
from swapjudge.yamlfile import read_validated, read_yaml

PICK_MAX_TOKENS = 16
LISTWISE_BACKENDS = ("openai", "anthropic", "local")


class AnswersConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str


class ListwiseGates(BaseModel):
    model_config = ConfigDict(extra="forbid")
    min_self_consistency: float = Field(default=0.70, ge=0, le=1)


class ListwiseRunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    protocol: Literal["listwise"]
    judge: JudgeConfig
    pairs: AnswersConfig
    rotations: Literal["latin", "all", "random"] = "latin"
    seed: int = Field(default=0, ge=0)
    rubric: str | None = None
    output: str = "listwise.jsonl"
    gates: ListwiseGates = Field(default_factory=ListwiseGates)


@dataclass(frozen=True)
class AnswerSet:
    item: str
    task: str
    answers: dict[str, str]
    label: str | None = None


@dataclass(frozen=True)
class ListwiseRunResult:
    """What a listwise run did: the records file, the calls made now and before, and the unparsed ones."""

    output: Path
    made: int
    resumed: int
    unparsed: int
    min_consistency: float


def is_listwise_config(path: str | Path) -> bool:
    """Whether a run configuration asks for `protocol: listwise` (read before the pairwise validation)."""
    try:
        data = read_yaml(path, what="the configuration", error=ConfigError)
    except ConfigError:
        return False  # the pairwise reader names the problem
    return isinstance(data, dict) and data.get("protocol") == "listwise"


def load_listwise_config(path: str | Path) -> tuple[ListwiseRunConfig, Path]:
    source = Path(path)
    cfg = read_validated(source, ListwiseRunConfig, what="the configuration", error=ConfigError)
    if cfg.judge.backend not in LISTWISE_BACKENDS:
        raise ConfigError(f"{source}: key `judge.backend`: backend {cfg.judge.backend!r} cannot pick among N "
                          f"answers; listwise runs go through {', '.join(LISTWISE_BACKENDS)}")
    return cfg, source.parent


def read_answer_sets(path: Path) -> list[AnswerSet]:
    """The answers file: one JSON object a line with `item`, `task`, `answers` ({system: text}, at least 3) and
    an optional `label` (the better system); a problem names the file, line and field."""
    name = str(path)
    sets: list[AnswerSet] = []
    seen: set[str] = set()
    for number, row in json_lines(decode_text(read_bytes(path), name), name):
        if not isinstance(row, dict):
            raise InputError("a line must be a JSON object", path=name, line=number)
        item, task, answers = row.get("item"), row.get("task", row.get("prompt")), row.get("answers")
        if not isinstance(item, str | int) or isinstance(item, bool) or str(item) == "":
            raise InputError("must be a non-empty string", path=name, line=number, field="item")
        if str(item) in seen:
            raise InputError(f"item {item!r} is already in the file", path=name, line=number, field="item")
        if not isinstance(task, str):
            raise InputError("must be the instruction the answers answer (a string)", path=name, line=number,
                             field="task")
        if not isinstance(answers, dict) or not all(isinstance(v, str) for v in answers.values()):
            raise InputError("must map each system to its answer text", path=name, line=number, field="answers")
        if len(answers) < MIN_SLOTS:
            raise InputError(f"has {len(answers)} answers: a listwise call shows at least {MIN_SLOTS}",
                             path=name, line=number, field="answers")
        label = row.get("label")
        if label is not None and label not in answers:
            raise InputError(f"must name one of the systems answered, got {label!r}", path=name, line=number,
                             field="label")
        seen.add(str(item))
        sets.append(AnswerSet(str(item), task, {str(k): v for k, v in answers.items()}, label))
    if not sets:
        raise InputError("no answer sets", path=name)
    return sets


def _done(output: Path, judge: str) -> set[tuple[str, tuple[str, ...]]]:
    """(item, slots) already judged by `judge` in the records file: a resumed run skips them."""
    if not output.exists():
        return set()
    done = set()
    for _, row in json_lines(decode_text(read_bytes(output), str(output)), str(output)):
        if isinstance(row, dict) and row.get("judge") == judge:
            done.add((str(row["item"]), tuple(row["slots"])))
    return done


async def _judge_calls(cfg: ListwiseRunConfig, sets: dict[str, AnswerSet], plan: list[ListwiseCallPlan],
                       output: Path) -> int:
    from swapjudge.runner.backend import build_judge
    from swapjudge.runner.plan import CHARS_PER_TOKEN
    from swapjudge.runner.ratelimit import RateLimiter
    from swapjudge.runner.retry import Abandoned, Control, Pacing, RetryPolicy, call_with_retries

    judge_cfg = cfg.judge
    picker = build_judge(judge_cfg)
    assert isinstance(picker, Completer), picker
    rubric = cfg.rubric or RUBRIC
    control = Control(stop=asyncio.Event(), max_retry_after_s=judge_cfg.max_retry_after_s)
    policy = RetryPolicy.of(judge_cfg)
    pacing = Pacing(RateLimiter(judge_cfg.requests_per_minute, judge_cfg.tokens_per_minute), control)
    gate = asyncio.Semaphore(judge_cfg.max_concurrency)
    unparsed = 0
    output.parent.mkdir(parents=True, exist_ok=True)
    handle = output.open("a", encoding="utf-8")

    async def one(call: ListwiseCallPlan) -> None:
        nonlocal unparsed
        answers = sets[call.item]
        prompt = render(answers.task, [answers.answers[s] for s in call.slots], rubric)
        try:
            async with gate:
                reply, error, _ = await call_with_retries(
                    lambda: picker.complete(prompt.system, prompt.user, max_tokens=PICK_MAX_TOKENS,
                                            prefix=PICK_PREFIX, choices=prompt.labels),
                    policy, pacing,
                    est_tokens=(len(prompt.system) + len(prompt.user)) / CHARS_PER_TOKEN + PICK_MAX_TOKENS)
            if reply is None:
                raise SwapjudgeError(f"judging {call.item}: {error}")
        except Abandoned:
            return
        except BaseException:
            control.stop.set()
            raise
        pick = parse_pick(reply.text, len(call.slots))
        unparsed += pick is None
        probabilities = reply.probabilities
        record: dict[str, Any] = {
            "item": call.item, "slots": list(call.slots), "pick": pick, "judge": judge_cfg.judge_name,
            "round": 0, "label": answers.label, "rotation": call.rotation, "rotations": cfg.rotations,
            "protocol": "listwise", "raw": reply.text, "prompt_hash": prompt.prompt_hash,
            "p_slots": None if probabilities is None else [probabilities.get(label) for label in prompt.labels],
            "rubric_hash": text_hash(rubric), "seed": cfg.seed,
            "registered_min_consistency": cfg.gates.min_self_consistency,
        }
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        handle.flush()  # a stopped run keeps every call that returned

    try:
        async with asyncio.TaskGroup() as group:
            for call in plan:
                group.create_task(one(call))
    except* (SwapjudgeError, FatalJudgeError) as failed:
        err = failed.exceptions[0]
        raise SwapjudgeError(str(err) if isinstance(err, SwapjudgeError) else f"listwise run stopped: {err}") from None
    finally:
        handle.close()
        await picker.aclose()
    return unparsed


def run_listwise(path: str | Path) -> ListwiseRunResult:
    """Judge the configured answer sets in their rotations, appending one listwise record per call to the
    configuration's `output` (relative to the configuration's folder); a rerun makes only the missing calls."""
    cfg, base = load_listwise_config(path)
    answers_path = (base / cfg.pairs.path) if not Path(cfg.pairs.path).is_absolute() else Path(cfg.pairs.path)
    output = (base / cfg.output) if not Path(cfg.output).is_absolute() else Path(cfg.output)
    sets = read_answer_sets(answers_path)
    done = _done(output, cfg.judge.judge_name)
    plan = plan_listwise([(s.item, list(s.answers)) for s in sets], cfg.rotations, cfg.seed, done)
    by_item = {s.item: s for s in sets}
    unparsed = asyncio.run(_judge_calls(cfg, by_item, plan, output)) if plan else 0
    return ListwiseRunResult(output, len(plan), len(done), unparsed, cfg.gates.min_self_consistency)
