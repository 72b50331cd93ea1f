"""Run configuration and pairs file: validation errors name the file and the key / line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from swapjudge.config import load_config
from swapjudge.errors import ConfigError, InputError
from swapjudge.reading.pairs_file import load_pairs

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


# Hashes of these configurations as swapjudge computed them before the judges/config/store untie (commit e7ec466,
# `load_config(...).config_hash` / `.judge_hash`): a changed hash would orphan every user's cache and runs.
PINNED_CONFIGS = {
    "openai.yaml": ("judge: {backend: openai, model: gpt-4o-mini, max_concurrency: 4, base_url: "
                    "'http://127.0.0.1:8080/v1/', extra_body: {seed: 1}, version: '2024'}\n"
                    "pairs: {path: pairs.jsonl, a: v1, b: v2}\nrubric: rubric.md\n",
                    "cee03c901fb9e8a90c6cbad5e8a9a4fe53fa14deeaf580d47dff264604f497f4",
                    "4e843f50614dbdc14cb3b0aeaa990005e1d548b595496fdb24b7f84c83abb439"),
    "anthropic.yaml": ("judge: {backend: anthropic, model: claude-x, batch: true, requests_per_minute: 50}\n"
                       "pairs: {path: pairs.jsonl}\nschema: allow_tie\ntie_policy: exclude\nchain_of_thought: true\n",
                       "178cb0ade1c25af23225a5119bc06b065b6193186ed47e4725cf74bc5ead7286",
                       "2d946d817d110964f9f1edb3e82e4c293eb81b6264eb6053af92786b5790340d"),
    "local.yaml": ("judge: {backend: local, model: m.gguf, mode: generate, n_ctx: 4096}\n"
                   "pairs: {path: pairs.jsonl, releases: [r1, r2]}\n",
                   "60c299722b7cac59d90a07f8fab7dce7f276980ec54b19bccf635fa4c00a2089",
                   "6a61723559f752a81489095acf70e371bb5fac9165b69a244c6261ca2e4426fc"),
}


@pytest.mark.parametrize("name", sorted(PINNED_CONFIGS))
def test_a_configuration_hashes_as_it_always_did(tmp_path: Path, name: str) -> None:
    (tmp_path / "rubric.md").write_text("Prefer correct answers.\n", encoding="utf-8")
    text, config_hash, judge_hash = PINNED_CONFIGS[name]
    loaded = load_config(_write(tmp_path, text, name))
    assert (loaded.config_hash, loaded.judge_hash) == (config_hash, judge_hash)


def test_a_prompt_hashes_as_it_always_did() -> None:
    """The cache key's other half: the prompt hash of a rendered request (built-in rubrics, both schemas), and the
    template and rubric hashes runs record."""
    import hashlib

    from swapjudge.judges.prompts import ALLOW_TIE_RUBRIC, FORCED_CHOICE_RUBRIC, render_request, template_hash

    request = render_request(task="What is 2+2?", first="4", second="5", rubric=None, allow_tie=True,
                             chain_of_thought=False, structured=True)
    assert request.prompt_hash == "fcf9a0607bf9585b0b8af8f870ab967c8b7b6dba312de5bda0ec40d1ceefd7f9"
    forced = render_request(task="What is 2+2?", first="4", second="5", rubric=None, allow_tie=False,
                            chain_of_thought=True, structured=False)
    assert forced.prompt_hash == "46ad7fa9cb22f3651e7e9c98ca0814b890c770b26d9659db8775c967516ddf2f"
    assert hashlib.sha256(FORCED_CHOICE_RUBRIC.encode()).hexdigest() == (
        "4c6c167528b8e454cbf0663cc2802e47b13b76ed5f4ed7fb527987de6b89c053")
    assert hashlib.sha256(ALLOW_TIE_RUBRIC.encode()).hexdigest() == (
        "b11a6517d0a1a16fb3670bf22f6dc98b085563c70d017df1985beed5320b54b5")
    assert template_hash(allow_tie=True, chain_of_thought=False, structured=True) == (
        "68a752108b026b6ebb24acd8c9dbc7ea685864ffc52d1c2c19c0183f4eaac5b7")
