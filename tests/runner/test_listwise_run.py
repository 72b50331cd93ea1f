"""Best-of-N runs: the rotation plan (balance by brute-force counting), the slot-only prompt and the pick
parser, the configuration's and answers file's one-line errors, and the embedded judge end to end on real
AlpacaEval answers (examples/make_listwise_sets.py), resumed."""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
from collections import Counter
from pathlib import Path

import pytest
import yaml

from swapjudge.errors import ConfigError, InputError
from swapjudge.judges.listwise_prompts import parse_pick, render
from swapjudge.judges.model_files import TEST_MODEL
from swapjudge.reading.listwise import load_listwise
from swapjudge.runner.listwise_plan import plan_listwise, rotations
from swapjudge.runner.listwise_run import load_listwise_config, read_answer_sets, run_listwise

ROOT = Path(__file__).resolve().parents[2]
SYSTEMS = ["a", "b", "c", "d", "e"]


def test_latin_square_puts_each_candidate_once_in_each_slot() -> None:
    for item in ("q1", "q2", "q3"):
        orders = rotations(item, SYSTEMS, "latin", seed=4)
        assert len(orders) == 5 and len(set(orders)) == 5
        counts = Counter((system, slot) for order in orders for slot, system in enumerate(order))
        assert set(counts.values()) == {1} and len(counts) == 25
    # rows seeded per item: items do not share one square, and the same seed gives the same plan
    bases = {rotations(f"q{i}", SYSTEMS, "latin", seed=4)[0] for i in range(30)}
    assert len(bases) > 20
    assert rotations("q1", SYSTEMS, "latin", seed=4) == rotations("q1", list(reversed(SYSTEMS)), "latin", seed=4)
    assert rotations("q1", SYSTEMS, "latin", seed=4) != rotations("q1", SYSTEMS, "latin", seed=5)


def test_all_and_random() -> None:
    every = rotations("q", SYSTEMS[:4], "all")
    assert sorted(every) == sorted(itertools.permutations(SYSTEMS[:4])) and len(every) == math.factorial(4)
    drawn = rotations("q", SYSTEMS[:4], "random", seed=1)
    assert len(drawn) == 4 and all(sorted(o) == SYSTEMS[:4] for o in drawn)
    assert drawn == rotations("q", SYSTEMS[:4], "random", seed=1)


def test_plan_skips_what_is_done() -> None:
    items = [("q1", SYSTEMS[:3]), ("q2", SYSTEMS[:3])]
    full = plan_listwise(items)
    assert len(full) == 6
    done = {(full[0].item, full[0].slots), (full[4].item, full[4].slots)}
    assert [c for c in plan_listwise(items, done=done)] == [c for i, c in enumerate(full) if i not in (0, 4)]


def test_prompt_names_slots_only() -> None:
    prompt = render("Say hi", ["hello from v1", "hi from v2", "hey"])
    assert prompt.labels == ("1", "2", "3")
    assert "v1" not in prompt.system and "<answer-1-" in prompt.user and "<answer-3-" in prompt.user
    assert render("Say hi", ["hey", "hello from v1", "hi from v2"]).prompt_hash != prompt.prompt_hash


@pytest.mark.parametrize(("reply", "pick"), [
    ("Best answer: 3", 3), ("[[2]]", 2), ("I prefer Answer 4.", 4), ('{"best": 1, "reason": "x"}', 1),
    ('```json\n{"winner": "Answer 2"}\n```', 2), ("3", 3), ("Answer 1 beats Answer 3", None), ("[[5]]", None),
    ("none of them", None), ("", None), ('{"best": true}', None), ("Best answer: 2. Answer 3 is close.", 2),
])
def test_parse_pick(reply: str, pick: int | None) -> None:
    assert parse_pick(reply, 4) == pick


def _config(tmp_path: Path, **changes: object) -> Path:
    cfg = {"protocol": "listwise", "rotations": "latin",
           "judge": {"backend": "local", "model": TEST_MODEL, "n_threads": 1, "n_ctx": 4096, "max_concurrency": 1},
           "pairs": {"path": "answers.jsonl"}, "store": "judge.db", "output": "records.jsonl", **changes}
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def test_configuration_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"key `rotations`"):
        load_listwise_config(_config(tmp_path, rotations="diagonal"))
    with pytest.raises(ConfigError, match=r"key `judge.backend`: backend 'replay' cannot pick"):
        load_listwise_config(_config(tmp_path, judge={"backend": "replay", "path": "x.jsonl"}))
    with pytest.raises(ConfigError, match=r"key `orders`"):
        load_listwise_config(_config(tmp_path, orders=["ab", "ba"]))
    with pytest.raises(ConfigError, match=r"key `judge.n_thread`: not a setting of the local backend"):
        load_listwise_config(_config(tmp_path, judge={"backend": "local", "model": TEST_MODEL, "n_thread": 1}))
    # a batch is a provider's (or an offline engine's): the embedded judge has none, as in a pairwise run
    with pytest.raises(ConfigError, match=r"`batch` is for the openai and anthropic backends, not 'local'"):
        load_listwise_config(_config(tmp_path, judge={"backend": "local", "model": TEST_MODEL, "batch": True}))
    cfg, _ = load_listwise_config(_config(tmp_path, judge={"backend": "openai", "model": "m", "batch": True}))
    assert cfg.judge.batch is True


def test_answers_file_errors(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    good = {"item": "q1", "task": "t", "answers": {"a": "1", "b": "2", "c": "3"}}
    other = {**good, "item": "q2"}
    for bad, field in [({**other, "answers": {"a": "1", "b": "2"}}, "answers"), ({**other, "label": "z"}, "label"),
                       ({**other, "task": None}, "task"), (good, "item")]:
        path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
        with pytest.raises(InputError) as caught:
            read_answer_sets(path)
        assert str(caught.value).startswith(f"{path}:2: field `{field}`: ")


def _sets(count: int, max_chars: int) -> list[dict]:
    spec = importlib.util.spec_from_file_location("make_listwise_sets", ROOT / "examples" / "make_listwise_sets.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not module.DATA.is_dir():
        pytest.fail(f"real data missing: {module.DATA} (the tests need ../shared/data, see its README.md)")
    sets: list[dict] = module.answer_sets(count, max_chars)
    return sets


@pytest.mark.slow
def test_embedded_judge_end_to_end_and_resume(tmp_path: Path) -> None:
    # two real AlpacaEval instructions, each with the answers of three systems (gpt4_1106_preview, gpt4, cohere)
    sets = _sets(2, 1500)
    for s in sets:
        s["answers"] = {k: v for k, v in s["answers"].items() if k != "alpaca-7b"}
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps(s) + "\n" for s in sets), encoding="utf-8")
    config = _config(tmp_path)
    first = run_listwise(config)
    assert (first.made, first.resumed) == (6, 0)
    records = load_listwise(tmp_path / "records.jsonl")
    assert len(records) == 6
    rows = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    for row, call in zip(rows, records.calls, strict=True):
        # the embedded judge's pick is the most likely of the three slot labels
        assert row["p_slots"] is not None and len(row["p_slots"]) == 3
        assert call.pick == 1 + max(range(3), key=lambda k: row["p_slots"][k])
        assert row["raw"] == f"Best answer: {call.pick}"
    for item in {c.item for c in records.calls}:
        orders = [c.slots for c in records.calls if c.item == item]
        assert set(Counter((s, k) for o in orders for k, s in enumerate(o)).values()) == {1}
    # the same configuration again: a new run, every reply served from the store's cache
    again = run_listwise(config)
    assert (again.made, again.resumed, again.cached, again.run_id) == (0, 0, 6, first.run_id + 1)
    assert len(load_listwise(tmp_path / "records.jsonl")) == 6
