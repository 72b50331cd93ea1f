"""The plan of a live review, drawn from a seed: the sample, the queue, the overlap, the orders and the re-shows."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from scipy.stats import binomtest

from swapjudge.errors import SwapjudgeError
from swapjudge.reading.pairs_file import PairItem
from swapjudge.review.assign import QUEUE, RESHOW_GAP, SAMPLE, parse_reviewers, plan_review


def _items(n: int, systems: tuple[str, ...] = ("A", "B")) -> list[PairItem]:
    return [PairItem(f"q{i}", f"prompt {i}", {s: f"{s} says {i}" for s in systems}, None, i + 1) for i in range(n)]


def _ids():  # deterministic task ids, so two plans can be compared whole
    counter = itertools.count()
    return lambda: f"t{next(counter)}"


@pytest.mark.parametrize(("pairs", "reviewers", "share", "overlap"), [(40, 3, 0.25, 1), (90, 4, 0.10, 2),
                                                                      (17, 1, 0.5, 1)])
def test_reshows_are_the_configured_share_swapped_and_later(pairs, reviewers, share, overlap):
    names = [f"r{i}" for i in range(reviewers)]
    plan = plan_review(_items(pairs), names, seed=42, reshow=share, overlap=overlap)
    for name in names:
        tasks = plan.tasks_of(name)
        originals = [t for t in tasks if t.reshow_of is None]
        reshows = [t for t in tasks if t.reshow_of is not None]
        assert len(reshows) == round(share * len(originals))
        by_id = {t.task: t for t in tasks}
        for r in reshows:
            o = by_id[r.reshow_of]
            assert (r.pair, r.first, r.second) == (o.pair, o.second, o.first)  # the same pair, swapped
            assert r.position > o.position
            later = sum(1 for t in originals if o.position < t.position < r.position)
            assert later >= min(RESHOW_GAP, sum(1 for t in originals if t.position > o.position))
        assert [t.position for t in tasks] == list(range(len(tasks)))
        assert len({t.pair for t in originals}) == len(originals)  # each pair once, apart from its re-show


def test_each_pair_goes_to_overlap_reviewers_and_the_load_is_even():
    names = parse_reviewers("a,b,c,d,e")
    plan = plan_review(_items(101), names, seed=1, reshow=0.0, overlap=3)
    per_pair: dict[int, set[str]] = {}
    for t in plan.tasks:
        per_pair.setdefault(t.pair, set()).add(t.reviewer)
    assert all(len(v) == 3 for v in per_pair.values()) and len(per_pair) == 101
    load = Counter(t.reviewer for t in plan.tasks)
    assert max(load.values()) - min(load.values()) <= 1 and sum(load.values()) == 303


def test_the_same_seed_draws_the_same_plan_and_the_coin_is_fair():
    items = _items(400)
    one = plan_review(items, ["a", "b"], seed=9, new_id=_ids())
    assert one == plan_review(items, ["a", "b"], seed=9, new_id=_ids())
    assert one != plan_review(items, ["a", "b"], seed=10, new_id=_ids())
    originals = [t for t in one.tasks if t.reshow_of is None]
    a_first = sum(t.first == "A" for t in originals)
    assert binomtest(a_first, len(originals), 0.5).pvalue > 0.01
    # the shown order is not the pairs file's: both orders occur for A
    assert 0 < a_first < len(originals)


def test_the_sample_is_random_and_distinct_from_the_queue():
    items = _items(50)
    queue = [("q3", "B", "A"), ("q7", "A", "B"), ("q8", "A", "B")]
    plan = plan_review(items, ["a", "b"], seed=5, sample=10, queue=queue)
    sample = {p.item for p in plan.pairs if p.origin == SAMPLE}
    queued = {p.item for p in plan.pairs if p.origin == QUEUE}
    assert len(sample) == 10 and not sample & queued
    assert queued == {"q3", "q7", "q8"} - sample
    # a queue pair the sample drew is reviewed once, as part of the sample
    plan2 = plan_review(items, ["a"], seed=5, sample=50, queue=queue)
    assert all(p.origin == SAMPLE for p in plan2.pairs) and len(plan2.pairs) == 50
    # every reviewer sees the queue first
    for name in ("a", "b"):
        origins = [plan.pairs[t.pair].origin for t in plan.tasks_of(name) if t.reshow_of is None]
        assert origins == sorted(origins, key=lambda o: o != QUEUE)
    # the samples of many seeds cover the items evenly (a random sample, not the first items)
    drawn = Counter(p.item for s in range(200) for p in plan_review(items, ["a"], seed=s, sample=10).pairs)
    assert len(drawn) == 50 and min(drawn.values()) > 15


def test_without_a_sample_a_queue_alone_is_reviewed():
    plan = plan_review(_items(20), ["a"], seed=1, queue=[("q1", "A", "B")])
    assert [(p.item, p.origin) for p in plan.pairs] == [("q1", QUEUE)]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"overlap": 3}, "overlap"), ({"sample": 99}, "sample asks for 99"), ({"reshow": 1.5}, "reshow"),
    ({"queue": [("nope", "A", "B")]}, "not in the pairs file"), ({"a": "A"}, "both a and b"),
])
def test_bad_options_are_one_line_errors(kwargs, message):
    with pytest.raises(SwapjudgeError, match=message):
        plan_review(_items(10), ["a", "b"], seed=1, **kwargs)


def test_items_with_three_answers_need_a_and_b():
    items = _items(5, ("A", "B", "C"))
    with pytest.raises(SwapjudgeError, match="3 answers"):
        plan_review(items, ["a"], seed=1)
    plan = plan_review(items, ["a"], seed=1, a="C", b="A")
    assert {(p.x, p.y) for p in plan.pairs} == {("A", "C")}


@pytest.mark.parametrize("spec", ["", "a,a", "bad name", "x/y"])
def test_reviewer_names_are_checked(spec):
    with pytest.raises(SwapjudgeError):
        parse_reviewers(spec)
