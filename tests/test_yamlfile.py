"""The one strict YAML reader: every user file (a run configuration, a decision file, a card's configuration, an
anchored scoring configuration) refuses a key given twice and an unknown key, in one line naming file, line and key.
Real files on disk; each reader is the one its command uses."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from swapjudge.config import load_config
from swapjudge.decision.file import read_decision
from swapjudge.errors import SwapjudgeError
from swapjudge.runner.scoring import load_anchors_config
from swapjudge.workflows.card import card_dry_run
from swapjudge.yamlfile import KeyLines, key_line, load_yaml, refuse_unknown_keys

RUN = """protocol: pairwise
orders: [ab, ba]
tie_policy: half_credit
judge:
  backend: openai
  model: judge-model
  base_url: http://127.0.0.1:9/v1
pairs: {path: pairs.jsonl, a: good, b: bad}
"""
CARD = RUN.replace("pairs: {path: pairs.jsonl, a: good, b: bad}\n", "")
DECISION = """candidate: v2
incumbent: v1
hypothesis: superior
margin: 0.0
tie_policy: half_credit
min_consistency: 0.7
alpha: 0.05
power: 0.8
items: 400
monitoring: fixed
"""
ANCHORS = """judge:
  backend: openai
  model: judge-model
  base_url: http://127.0.0.1:9/v1
criteria: Judge correctness first.
scale: {1: wrong, 2: right}
exemplars:
  - {name: low, task: Add 2 and 3., answer: It is 6., score: 1}
reference: reference.jsonl
"""

READERS: dict[str, tuple[str, Callable[[Path], Any]]] = {
    "run": (RUN, load_config),
    "card": (CARD, lambda p: card_dry_run(p, store=p.parent / "card.db")),
    "decision": (DECISION, read_decision),
    "anchors": (ANCHORS, load_anchors_config),
}


def _line_of(text: str, key: str) -> int:
    """Brute force: the 1-based line where `key:` starts a line (at any indentation)."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.strip().startswith(f"{key}:"))


@pytest.mark.parametrize("kind", sorted(READERS))
def test_a_key_given_twice_is_refused_with_its_file_and_line(tmp_path: Path, kind: str) -> None:
    text, read = READERS[kind]
    first = text.splitlines()[0]
    path = tmp_path / f"{kind}.yaml"
    path.write_text(text + first + "\n", encoding="utf-8")  # the first key again, last
    key = first.split(":")[0]
    with pytest.raises(SwapjudgeError) as caught:
        read(path)
    message = str(caught.value)
    assert message == (f"{path}:{len(text.splitlines()) + 1}: key `{key}` is given twice (first on line 1); "
                       "give it once")
    assert "\n" not in message


@pytest.mark.parametrize("kind", sorted(READERS))
def test_an_unknown_key_is_refused_with_its_file_line_and_name(tmp_path: Path, kind: str) -> None:
    text, read = READERS[kind]
    lines = text.splitlines()
    lines.insert(0, "tie_polcy: strict")  # a typo, on line 1
    path = tmp_path / f"{kind}.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "reference.jsonl").write_text('{"item": "r1", "prompt": "p", "answer": "a"}\n', encoding="utf-8")
    with pytest.raises(SwapjudgeError) as caught:
        read(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:1: key `tie_polcy`"), message
    assert "\n" not in message


def test_every_mapping_knows_the_line_of_each_key() -> None:
    text = "a: 1\nb:\n  c: [1, {d: 2,\n      e: 3}]\n  f: x\n"
    data = load_yaml(text, source="t.yaml")
    assert data == yaml.safe_load(text)  # the same document as PyYAML's own safe reader
    assert isinstance(data, KeyLines) and isinstance(data["b"], KeyLines)
    for loc, key in ((["a"], "a"), (["b"], "b"), (["b", "f"], "f")):
        assert key_line(data, loc) == _line_of(text, key)
    assert key_line(data, ["b", "c", 1, "e"]) == 4  # inside a flow mapping in a list
    assert key_line(data, ["b", "nope"]) == 2  # the deepest known key
    assert key_line({"a": 1}, ["a"]) is None  # a mapping not read from YAML has no lines


def test_refuse_unknown_keys_names_the_closest_known_key() -> None:
    data = load_yaml("candidate: v2\nincumbnt: v1\n", source="d.yaml")
    with pytest.raises(SwapjudgeError, match=r"^d\.yaml:2: key `incumbnt`: not a key of a decision file; did you "
                                             r"mean `incumbent`\?$"):
        refuse_unknown_keys(data, ("candidate", "incumbent"), source="d.yaml", what="a decision file")


def test_not_yaml_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("a: 1\nb: [1, 2\n", encoding="utf-8")
    with pytest.raises(SwapjudgeError, match=rf"^{path}:3: "):
        load_config(path)
