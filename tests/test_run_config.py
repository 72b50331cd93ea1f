"""Run configuration and pairs file: validation errors name the file and the key / line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from swapjudge.config import load_config
from swapjudge.core.pairs_file import load_pairs
from swapjudge.errors import ConfigError, InputError

BASE = """\
protocol: pairwise
orders: [ab, ba]
schema: forced_choice
tie_policy: half_credit
gates: {min_self_consistency: 0.70}
judge: {backend: openai, model: gpt-4o-mini, max_concurrency: 4}
rubric: rubric.md
pairs: {path: pairs.jsonl, a: v1, b: v2}
"""


def _write(tmp_path: Path, text: str, name: str = "run.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_design_example_loads_and_resolves_paths_relative_to_the_file(tmp_path: Path) -> None:
    sub = tmp_path / "cfg"
    sub.mkdir()
    (sub / "rubric.md").write_text("Prefer correct answers.", encoding="utf-8")
    loaded = load_config(_write(sub, BASE))
    assert loaded.rubric_text == "Prefer correct answers."
    assert loaded.pairs_path == sub / "pairs.jsonl"
    assert loaded.config.orders == "both" and loaded.config.pairs.plan == "two"
    assert loaded.config.judge.judge_name == "openai:gpt-4o-mini"


def test_hash_is_stable_and_ignores_spelling_but_not_meaning(tmp_path: Path) -> None:
    (tmp_path / "rubric.md").write_text("R", encoding="utf-8")
    h1 = load_config(_write(tmp_path, BASE)).config_hash
    reordered = "\n".join(reversed(BASE.strip().splitlines())) + "\n"
    assert load_config(_write(tmp_path, reordered, "b.yaml")).config_hash == h1
    spelled = BASE + "chain_of_thought: false\nseed: ''\n"
    assert load_config(_write(tmp_path, spelled, "c.yaml")).config_hash == h1
    other = BASE.replace("half_credit", "exclude")
    assert load_config(_write(tmp_path, other, "d.yaml")).config_hash != h1
    (tmp_path / "rubric.md").write_text("R2", encoding="utf-8")
    assert load_config(_write(tmp_path, BASE)).config_hash != h1  # the rubric text is part of the hash
    # Runtime settings change the configuration hash but not the judge hash (the cache key).
    a = load_config(_write(tmp_path, BASE))
    b = load_config(_write(tmp_path, BASE.replace("max_concurrency: 4", "max_concurrency: 9"), "e.yaml"))
    assert a.judge_hash == b.judge_hash
    c = load_config(_write(tmp_path, BASE.replace("gpt-4o-mini", "gpt-4o"), "f.yaml"))
    assert c.judge_hash != a.judge_hash


@pytest.mark.parametrize(
    "change,key",
    [
        (("tie_policy: half_credit", "tie_policy: halfcredit"), "tie_policy"),
        (("max_concurrency: 4", "max_concurrency: 0"), "judge.max_concurrency"),
        (("orders: [ab, ba]", "orders: [ab, ab]"), "orders"),
        (("a: v1, b: v2", "a: v1, b: v1"), "pairs"),
        (("a: v1, b: v2", "a: v1"), "pairs"),
        (("protocol: pairwise", "protocol: pairwise\ncolour: red"), "colour"),
        (("backend: openai, model: gpt-4o-mini,", "backend: openai,"), "judge"),
        (("min_self_consistency: 0.70", "min_self_consistency: 1.5"), "gates.min_self_consistency"),
    ],
)
def test_errors_name_the_file_and_key(tmp_path: Path, change: tuple[str, str], key: str) -> None:
    (tmp_path / "rubric.md").write_text("R", encoding="utf-8")
    path = _write(tmp_path, BASE.replace(*change))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    msg = str(err.value)
    assert str(path) in msg and f"key `{key}`" in msg and "\n" not in msg


def test_missing_rubric_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"key `rubric`: cannot read .*rubric.md"):
        load_config(_write(tmp_path, BASE))
    with pytest.raises(ConfigError, match=r"bad.yaml:\d+: "):
        load_config(_write(tmp_path, "a: 1\nb: [unclosed\n", "bad.yaml"))
    inline = BASE.replace("rubric: rubric.md", "rubric: |\n  Prefer the shorter correct answer.\n  Be strict.")
    assert "Be strict." in (load_config(_write(tmp_path, inline, "i.yaml")).rubric_text or "")


def test_pair_plans(tmp_path: Path) -> None:
    text = BASE.replace("rubric: rubric.md\n", "")
    assert load_config(_write(tmp_path, text.replace("a: v1, b: v2", "plan: all"))).config.pairs.plan == "all"
    base = load_config(_write(tmp_path, text.replace("a: v1, b: v2", "baseline: v1"))).config.pairs
    assert base.plan == "baseline" and base.baseline == "v1"


def test_pairs_file_errors_name_line_and_field(tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    p.write_text(
        '{"item": 1, "prompt": "t", "answers": {"v1": "x", "v2": "y"}}\n'
        '{"item": 2, "prompt": "t", "answers": {"v1": "x", "v2": 3}}\n',
        encoding="utf-8",
    )
    with pytest.raises(InputError, match=r"p.jsonl:2: field `answers.v2`: must be a string"):
        load_pairs(p)
    p.write_text('{"item": 1, "prompt": "t", "answers": {"v1": "x", "v2": "y"}, "label": "v3"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"p.jsonl:1: field `label`: names 'v3'"):
        load_pairs(p)
    p.write_text(
        '{"item": 1, "prompt": "t", "answers": {"v1": "x", "v2": "y"}}\n\n'
        '{"item": 1, "prompt": "t", "answers": {"v1": "x", "v2": "y"}}\n',
        encoding="utf-8",
    )
    with pytest.raises(InputError, match=r"p.jsonl:3: field `item`: duplicate item '1' \(first on line 1\)"):
        load_pairs(p)
    p.write_text('{"item": 1, "prompt": "t"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"p.jsonl:1: not valid JSON \(Expecting ',' delimiter at column 26\)"):
        load_pairs(p)


def test_pairs_csv(tmp_path: Path) -> None:
    p = tmp_path / "p.csv"
    p.write_text('item,prompt,answer.v1,answer.v2,label\n1,"a task, with comma",x,"multi\nline",v2\n', encoding="utf-8")
    pf = load_pairs(p)
    assert pf.items[0].answers == {"v1": "x", "v2": "multi\nline"} and pf.items[0].label == "v2"
    assert pf.systems == ["v1", "v2"] and len(pf.digest) == 64
    p.write_text("item,prompt,answer.v1\n1,t,x\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"p.csv:1: field `answers`"):
        load_pairs(p)


def test_pairs_file_unreadable_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope.jsonl: no such file$"):
        load_pairs(tmp_path / "nope.jsonl")
    p = tmp_path / "p.jsonl"
    p.write_bytes(b'{"item": 1}\xff\n')
    with pytest.raises(InputError, match=r"p.jsonl: not UTF-8 text \(byte 11\)$"):
        load_pairs(p)
