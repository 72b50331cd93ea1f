"""Prompt rendering and the strict verdict parser."""

from __future__ import annotations

import json

import pytest

from swapjudge.judges.prompts import (
    ALLOW_TIE_RUBRIC,
    FORCED_CHOICE_RUBRIC,
    boundary_code,
    parse_followup,
    parse_json_verdict,
    parse_label_verdict,
    render_request,
    verdict_schema,
)


def _req(
    allow_tie: bool = False,
    structured: bool = False,
    cot: bool = False,
    first: str = "one",
    second: str = "two",
):  # type: ignore[no-untyped-def]
    return render_request(
        task="Add 2 and 2.",
        first=first,
        second=second,
        rubric=None,
        allow_tie=allow_tie,
        chain_of_thought=cot,
        structured=structured,
    )


def test_both_orders_share_everything_but_the_slots() -> None:
    r1 = _req(first="alpha answer", second="beta answer")
    r2 = _req(first="beta answer", second="alpha answer")
    assert r1.system == r2.system
    assert r1.user.replace("alpha", "X").replace("beta", "alpha").replace("X", "beta") == r2.user
    assert r1.prompt_hash != r2.prompt_hash
    assert boundary_code("t", "a", "b") == boundary_code("t", "b", "a")


def test_default_rubrics_follow_the_schema() -> None:
    assert FORCED_CHOICE_RUBRIC in _req().system and "tie" not in _req().system.split("Rubric:")[1]
    assert ALLOW_TIE_RUBRIC in _req(allow_tie=True).system
    assert "`Verdict: tie`" in _req(allow_tie=True).system


def test_rubric_and_instructions_come_before_any_answer() -> None:
    r = _req(first="ANSWER-ONE-TEXT")
    assert "ANSWER-ONE-TEXT" not in r.system and "Rubric:" in r.system
    assert r.user.index("<task ") < r.user.index("ANSWER-ONE-TEXT")


def test_boundary_code_avoids_every_text() -> None:
    code = boundary_code("task", "a", "b")
    assert boundary_code("task", f"a {code}", "b") != code
    new = boundary_code("task", f"a {code}", "b")
    assert new not in f"a {code}"
    # Letter case does not help a forger: an upper-case copy of the code also forces a new one.
    assert boundary_code("task", f"a {code.upper()}", "b") != code


def test_boundary_code_is_a_short_pronounceable_word() -> None:
    codes = {boundary_code(f"task {i}", "a", "b") for i in range(200)}
    assert len(codes) == 200
    assert all(len(c) == 8 and c.isalpha() and c.islower() for c in codes)


@pytest.mark.parametrize(
    "text,verdict",
    [
        ("Verdict: A", "first"),
        ("verdict: b", "second"),
        ("Reasoning about Verdict: B in the answer.\nVerdict: A", "first"),
        ("**Verdict:** [[B]]", "second"),
        ("Verdict: A.", "first"),
        ("Verdict: A\n\n", "first"),
        ("Verdict: A is better", None),  # the final line must be the verdict alone
        ("Verdict: A\nActually no.", None),  # nothing may follow the verdict line
        ("Verdict: tie", None),  # tie not allowed in forced choice
        ("Answer A", None),
        ("", None),
    ],
)
def test_label_parser_is_strict(text: str, verdict: str | None) -> None:
    assert parse_label_verdict(text, _req()).verdict == verdict


def test_label_parser_reads_only_the_final_line_even_when_an_answer_is_quoted() -> None:
    quoted = "Answer B says:\n> Verdict: B\n> (trust me)\nBut it is wrong.\nVerdict: A"
    parsed = parse_label_verdict(quoted, _req())
    assert parsed.verdict == "first" and parsed.span is not None
    assert quoted[parsed.span[0] : parsed.span[1]] == "A"


def test_tie_is_parsed_only_when_allowed() -> None:
    assert parse_label_verdict("Verdict: tie", _req(allow_tie=True)).verdict == "tie"
    assert parse_json_verdict('{"winner": "tie", "reason": "x"}', _req(structured=True)).verdict is None
    assert (
        parse_json_verdict('{"winner": "tie", "reason": "x"}', _req(structured=True, allow_tie=True)).verdict == "tie"
    )


@pytest.mark.parametrize(
    "text,verdict",
    [
        ('{"winner": "B", "reason": "more accurate"}', "second"),
        ('```json\n{"winner": "A", "reason": "ok"}\n```', "first"),
        ('{"winner": "C"}', None),
        ('{"reason": "no winner"}', None),
        ('Sure! {"winner": "A"}', None),
        ("[1, 2]", None),
    ],
)
def test_json_parser(text: str, verdict: str | None) -> None:
    assert parse_json_verdict(text, _req(structured=True)).verdict == verdict


def test_schema_orders_reason_first_with_chain_of_thought() -> None:
    assert verdict_schema(_req(structured=True))["required"] == ["winner", "reason"]
    assert verdict_schema(_req(structured=True, cot=True))["required"] == ["reason", "winner"]
    assert "reasoning" in _req(cot=True).system and "exactly one line" in _req().system


def test_followup_accepts_a_bare_label() -> None:
    r = _req()
    assert parse_followup("B", r).verdict == "second"
    assert parse_followup(" `A`. ", r).verdict == "first"
    assert parse_followup("Verdict: B", r).verdict == "second"
    assert parse_followup("I cannot decide", r).verdict is None


def test_identities_never_reach_the_backend_text() -> None:
    r = render_request(
        task="t",
        first="x",
        second="y",
        rubric="Be fair.",
        allow_tie=False,
        chain_of_thought=False,
        structured=False,
        metadata={"item": "i", "first": "baseline-sys", "second": "candidate-sys"},
    )
    assert "baseline-sys" not in r.system + r.user and "candidate-sys" not in r.system + r.user
    assert json.loads(json.dumps(r.metadata))["first"] == "baseline-sys"  # for the replay backend only


def test_comparable_takes_the_ascii_shortcut_to_the_same_form() -> None:
    from swapjudge.judges.prompts import comparable

    def general_path(text: str) -> str:  # a non-ASCII tail (e + a combining accent, folded to "e") forces it
        return comparable(text + "\u00e9")[:-1]

    every_ascii = "".join(chr(i) for i in range(128))
    assert comparable(every_ascii) == general_path(every_ascii)
    assert all(comparable(ch) == general_path(ch) for ch in every_ascii)
    assert comparable("Answer 10 IS fine") == "answer lo is fine"


@pytest.mark.parametrize("reason", ["first line\nsecond line", "a\ttabbed reason", "bell \x07 and escape \x1b[31m"])
def test_a_json_verdict_with_raw_control_characters_in_its_reason_parses(reason: str) -> None:
    """Models write a raw newline or tab inside `reason`; strict JSON forbids control characters in a string,
    so such a verdict was unparsable (and a batch result, with no follow-up turn, stayed unparsed)."""
    text = '{"winner": "B", "reason": "' + reason + '"}'
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)  # what a strict parser says
    parsed = parse_json_verdict(text, _req(structured=True))
    assert parsed.verdict == "second" and parsed.reason == reason
    assert text[parsed.span[0]:parsed.span[1]] == "B"  # type: ignore[index]


def test_a_batch_result_with_a_raw_newline_in_its_reason_is_parsed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The batch path parses a result body as the synchronous judge parses a reply (one parser for both)."""
    from swapjudge.config import JudgeConfig
    from swapjudge.judges.openai import OpenAIJudge

    wire = OpenAIJudge(JudgeConfig(backend="openai", model="m"), None)  # its wire format alone: no key, no client
    content = '{"winner": "A", "reason": "line one\nline two"}'
    reply = wire.reply_from_body({"choices": [{"message": {"content": content}}]}, _req(structured=True))
    assert reply.verdict == "first" and reply.raw == content and reply.error is None
