"""The graded prompt frame and parser: what the prompt asks for, which replies are read and how, and that the
ungraded prompt is byte-for-byte what it was."""

from __future__ import annotations

import json

import pytest

from swapjudge.judges.prompts import (
    followup_prompt,
    parse_followup,
    parse_reply,
    render_request,
    template_hash,
    verdict_schema,
)


def request(*, allow_tie: bool = True, structured: bool = False, graded: bool = True, cot: bool = False):
    return render_request(task="What is 2+2?", first="4", second="5", rubric=None, allow_tie=allow_tie,
                          chain_of_thought=cot, structured=structured, graded=graded)


@pytest.mark.parametrize(("text", "expected"), [
    ("Verdict: A>>B", ("first", 2)), ("Verdict: A>B", ("first", 1)), ("Verdict: A=B", ("tie", None)),
    ("Verdict: B>A", ("second", 1)), ("Verdict: B>>A", ("second", 2)),
    ("verdict: [[b>>a]]", ("second", 2)), ("**Verdict:** A > B.", ("first", 1)), ("Verdict: A >> B", ("first", 2)),
    ("Some reasoning.\nVerdict: B>A", ("second", 1)),
    ("Verdict: A", (None, None)),  # the plain label is not a graded verdict
    ("Verdict: A<B", (None, None)),  # nor a form the prompt did not offer
    ("Verdict: A>>B\nthen more", (None, None)),  # the verdict line must be last
])
def test_verdict_lines(text: str, expected: tuple[str | None, int | None]) -> None:
    parsed = parse_reply(text, request())
    assert (parsed.verdict, parsed.strength) == expected
    assert parsed.span is None  # a graded label is no single token that tells the slots apart


def test_forced_choice_offers_and_reads_no_tie() -> None:
    forced = request(allow_tie=False)
    assert "A=B" not in forced.system and "A=B" not in forced.user
    assert parse_reply("Verdict: A=B", forced).verdict is None
    assert (parse_reply("Verdict: B>>A", forced).verdict, parse_reply("Verdict: B>>A", forced).strength) == (
        "second", 2)


@pytest.mark.parametrize(("body", "expected"), [
    ({"verdict": "A>>B", "reason": "r"}, ("first", 2)), ({"reason": "r", "verdict": "A=B"}, ("tie", None)),
    ({"verdict": "b>a", "reason": "r"}, ("second", 1)), ({"winner": "A", "reason": "r"}, (None, None)),
    ({"verdict": "A>>>B"}, (None, None)),
])
def test_structured_verdicts(body: dict, expected: tuple[str | None, int | None]) -> None:
    parsed = parse_reply(json.dumps(body), request(structured=True))
    assert (parsed.verdict, parsed.strength) == expected


def test_the_schema_and_the_instructions_name_the_levels() -> None:
    req = request(structured=True, cot=True)
    schema = verdict_schema(req)
    assert list(schema["properties"]) == ["reason", "verdict"]
    assert schema["properties"]["verdict"]["enum"] == ["A>>B", "A>B", "A=B", "B>A", "B>>A"]
    plain = request()
    assert "`A>>B` if Answer A is much better, `A>B` if Answer A is slightly better" in plain.system
    assert "and by how much: A>>B, A>B, A=B, B>A or B>>A?" in plain.user
    assert "A>>B" in followup_prompt(plain)


def test_a_bare_follow_up_label_is_read() -> None:
    parsed = parse_followup(" B>>A ", request())
    assert (parsed.verdict, parsed.strength) == ("second", 2)
    assert parse_followup("A", request()).verdict is None


def test_the_ungraded_prompt_and_its_hashes_are_unchanged() -> None:
    plain = request(graded=False)
    default = render_request(task="What is 2+2?", first="4", second="5", rubric=None, allow_tie=True,
                             chain_of_thought=False, structured=False)
    assert plain == default and ">>" not in plain.system and not plain.graded
    assert plain.user.endswith("Which answer is better under the rubric: A, B or tie? Reply as instructed.")
    assert parse_reply("Verdict: A", plain).strength is None
    assert template_hash(allow_tie=True, chain_of_thought=False, structured=False) != template_hash(
        allow_tie=True, chain_of_thought=False, structured=False, graded=True)
    assert request().prompt_hash != plain.prompt_hash
