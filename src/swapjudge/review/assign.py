"""Who reviews what, in which order: the plan of a live review, drawn once from a seed.

Two sources of pairs, kept apart: a seeded random sample of the pairs file's items (`sample`: the only votes a
corrected win rate may use, since it needs a random sample) and a priority queue of the pairs a judge flipped or
half-tied (`queue`). A pair of the queue that the sample drew as well is reviewed once, as a sample pair, so the
sample stays the whole random sample. Each pair goes to `overlap` reviewers (load balanced), each reviewer sees
the queue first and then the sample, each in a shuffled order, every presentation's order drawn by a seeded
coin; a share `reshow` of each reviewer's pairs comes back later in the swapped order, so a reviewer's own
swap-consistency and position preference are measured like a judge's.

The sample is drawn under a design whose inclusion probability `pi` every sample pair records: `--sample K`, a
simple random sample (pi = K / items); a Poisson design (`design` uniform or active, `budget` labels expected),
each item drawn independently with its own pi, under active proportional to the square root of the judge's
uncertainty on the item (`core.active_ppi.inclusion_probabilities`). Queue pairs the design did not draw carry
no pi: they never enter a correction.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from swapjudge.core.active_ppi import ACTIVE, draw, inclusion_probabilities
from swapjudge.errors import ArgumentError, InputError
from swapjudge.reading.pairs_file import PairItem

SAMPLE = "sample"
QUEUE = "queue"
RESHOW_GAP = 5  # a re-show comes at least this many tasks after its original, so it is not recognised at once


@dataclass(frozen=True)
class ReviewPair:
    """One pair people review: an item and two systems' answers to it (x < y by name)."""

    item: str
    x: str
    y: str
    prompt: str
    text_x: str
    text_y: str
    label: str | None
    origin: str  # sample | queue
    pi: float | None = None  # the probability the design drew this item (sample pairs); None for queue pairs

    def text(self, system: str) -> str:
        return self.text_x if system == self.x else self.text_y


@dataclass(frozen=True)
class PlannedTask:
    """One presentation to one reviewer: `first` is the system shown as Response 1. `reshow_of` names the task
    whose pair this one shows again, swapped."""

    task: str
    reviewer: str
    position: int
    pair: int  # index into ReviewPlan.pairs
    first: str
    second: str
    reshow_of: str | None


@dataclass(frozen=True)
class ReviewPlan:
    pairs: tuple[ReviewPair, ...]
    tasks: tuple[PlannedTask, ...]
    seed: int
    design: str | None = None  # uniform | active (a Poisson design), None for --sample or every item

    def tasks_of(self, reviewer: str) -> list[PlannedTask]:
        return sorted((t for t in self.tasks if t.reviewer == reviewer), key=lambda t: t.position)

    def to_dict(self) -> dict[str, Any]:
        reshown = sum(t.reshow_of is not None for t in self.tasks)
        return {"seed": self.seed, "pairs": len(self.pairs), "tasks": len(self.tasks), "reshows": reshown,
                "sample_pairs": sum(p.origin == SAMPLE for p in self.pairs),
                "queue_pairs": sum(p.origin == QUEUE for p in self.pairs), "design": self.design}


def parse_reviewers(spec: str) -> list[str]:
    """`alice,bob` -> ["alice", "bob"]; names are letters, digits, `.`, `_` and `-` (they go into URLs and judge
    names), each once."""
    names = [name.strip() for name in spec.split(",") if name.strip()]
    if not names:
        raise ArgumentError("{reviewers} needs at least one name, e.g. alice,bob", "reviewers")
    for name in names:
        if not all(c.isalnum() or c in "._-" for c in name) or len(name) > 64:
            raise ArgumentError(f"{{reviewers}}: name {name!r}: use letters, digits, '.', '_' or '-' (at most 64)",
                                "reviewers")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ArgumentError(f"{{reviewers}}: {twice[0]!r} is named twice", "reviewers")
    return names


def _pair_of(it: PairItem, a: str | None, b: str | None, source: str | None) -> tuple[str, str]:
    if a is not None and b is not None:
        missing = [s for s in (a, b) if s not in it.answers]
        if missing:
            raise InputError(f"item {it.item!r} has no answer from {missing[0]!r}", path=source, line=it.line,
                             field="answers")
        x, y = a, b
    elif len(it.answers) == 2:
        x, y = list(it.answers)
    else:
        raise InputError(f"item {it.item!r} has {len(it.answers)} answers: name the two systems with {a} and {b}",
                         path=source, line=it.line, field="answers", arguments=("a", "b"))
    return (x, y) if x < y else (y, x)


pair_of = _pair_of  # the two systems of an item's review pair (x < y), for callers that score it first


def _review_pair(it: PairItem, x: str, y: str, origin: str, pi: float | None = None) -> ReviewPair:
    return ReviewPair(it.item, x, y, it.prompt, it.answers[x], it.answers[y], it.label, origin, pi)


def plan_review(items: Sequence[PairItem], reviewers: Sequence[str], *, seed: int | None = None,
                reshow: float = 0.10, overlap: int = 1, sample: int | None = None,
                queue: Sequence[tuple[str, str, str]] | None = None, a: str | None = None, b: str | None = None,
                source: str | None = None, new_id: Callable[[], str] | None = None, design: str | None = None,
                budget: float | None = None, uncertainty: Sequence[float] | None = None,
                pi_min: float | None = None) -> ReviewPlan:
    """The review's pairs and every reviewer's tasks in order.

    `sample` None: every item is in the sample, unless a `queue` is given (then only the queue is reviewed).
    `queue`: (item, system, system) pairs, e.g. `swapjudge.review.queue.unsettled_pairs` of a judge's records.
    `new_id` makes the opaque task ids (default: random hex, so ids say nothing about the pairs).
    `design` uniform / active with `budget`: each item drawn independently with probability pi (mean `budget`
    labels), under active from `uncertainty` (one u >= 0 per item of `items`, e.g. `core.active_ppi.
    pair_uncertainty`), floored at `pi_min`; exclusive with `sample`.
    """
    if not 0.0 <= reshow <= 1.0:
        raise ArgumentError(f"{{reshow}} must be a share between 0 and 1, got {reshow}", "reshow")
    if not reviewers:
        raise ArgumentError("{reviewers}: at least one is needed", "reviewers")
    if not 1 <= overlap <= len(reviewers):
        raise ArgumentError(f"{{overlap}} must be between 1 and the number of reviewers ({len(reviewers)}), "
                            f"got {overlap}", "overlap")
    if (a is None) != (b is None):
        raise ArgumentError("give both {a} and {b}, or neither", "a", "b")
    if sample is not None and sample < 1:
        raise ArgumentError(f"{{sample}} must be at least 1 item, got {sample}", "sample")
    if design is not None:
        if sample is not None:
            raise ArgumentError("give {sample} (a fixed-size sample) or {design}, not both", "sample", "design")
        if budget is None:
            raise ArgumentError("{design} needs {budget}: the number of labels expected", "design", "budget")
        if design == ACTIVE and uncertainty is None:
            raise ArgumentError("the active {design} needs the judge's uncertainty on each item", "design")
    elif budget is not None:
        raise ArgumentError("{budget} needs {design} (uniform or active)", "budget", "design")
    seed = secrets.randbits(32) if seed is None else seed
    rng = np.random.default_rng(seed)
    make_id = new_id or (lambda: "t" + secrets.token_hex(8))
    by_item = {it.item: it for it in items}

    sampled: list[ReviewPair] = []
    if design is not None:
        try:
            drawn = inclusion_probabilities([0.0] * len(items) if uncertainty is None else uncertainty,
                                            float(budget), design=design, pi_min=pi_min)  # type: ignore[arg-type]
        except ValueError as err:
            raise ArgumentError(f"{{design}}: {err}", "design") from None
        if len(drawn.pi) != len(items):
            raise ArgumentError(f"{{uncertainty}} has {len(drawn.pi)} values for {len(items)} items",
                                "uncertainty")
        for at in np.flatnonzero(draw(drawn, rng)).tolist():
            it = items[at]
            sampled.append(_review_pair(it, *_pair_of(it, a, b, source), SAMPLE, drawn.pi[at]))
        if not sampled:
            raise InputError(f"the {design} design drew no item (budget {budget} of {len(items)}): raise "
                             "{{budget}} or change {{seed}}", path=source, arguments=("budget", "seed"))
    elif sample is not None or queue is None:
        if sample is not None and sample > len(items):
            raise InputError(f"{{sample}} asks for {sample} items, the pairs file has {len(items)}", path=source,
                             arguments=("sample",))
        chosen = (range(len(items)) if sample is None
                  else sorted(int(i) for i in rng.choice(len(items), size=sample, replace=False)))
        rate = 1.0 if sample is None else sample / len(items)  # a simple random sample's inclusion probability
        for index in chosen:
            it = items[index]
            sampled.append(_review_pair(it, *_pair_of(it, a, b, source), SAMPLE, rate))
    in_sample = {(p.item, p.x, p.y) for p in sampled}
    queued: list[ReviewPair] = []
    for item, s1, s2 in dict.fromkeys((i, *sorted((s1, s2))) for i, s1, s2 in (queue or ())):
        if (item, s1, s2) in in_sample:
            continue  # reviewed once, as part of the random sample
        found = by_item.get(item)
        if found is None:
            raise InputError(f"item {item!r} of the queue is not in the pairs file", path=source)
        missing = [s for s in (s1, s2) if s not in found.answers]
        if missing:
            raise InputError(f"item {item!r} of the queue has no answer from {missing[0]!r}", path=source,
                             line=found.line, field="answers")
        queued.append(_review_pair(found, s1, s2, QUEUE))
    pairs = (*queued, *sampled)
    if not pairs:
        raise InputError("nothing to review: the queue is empty and no sample was asked for", path=source)

    # each pair to `overlap` reviewers, in turn from a random start, so every reviewer gets an even share
    assigned: dict[str, list[int]] = {name: [] for name in reviewers}
    start = int(rng.integers(len(reviewers)))
    turn = start
    for origin in (QUEUE, SAMPLE):
        group = [i for i, p in enumerate(pairs) if p.origin == origin]
        for index in rng.permutation(len(group)):
            for k in range(overlap):
                assigned[reviewers[(turn + k) % len(reviewers)]].append(group[int(index)])
            turn = (turn + overlap) % len(reviewers)

    tasks: list[PlannedTask] = []
    for name in reviewers:
        base = assigned[name]  # queue first, then sample, each shuffled above
        coins = rng.integers(0, 2, size=len(base))
        n_reshow = round(reshow * len(base))
        reshown = set(int(i) for i in rng.choice(len(base), size=n_reshow, replace=False)) if n_reshow else set()
        ids = [make_id() for _ in base]
        entries: list[tuple[float, int, str, int, str, str, str | None]] = []
        for i, (pair_index, coin) in enumerate(zip(base, coins, strict=True)):
            p = pairs[pair_index]
            first, second = (p.x, p.y) if coin == 0 else (p.y, p.x)
            entries.append((float(i), 0, ids[i], pair_index, first, second, None))
            if i in reshown:
                low = min(i + RESHOW_GAP, len(base))
                # a random place after the original and the gap; past the end when the gap runs over it
                key = float(rng.uniform(low, len(base))) if low < len(base) else len(base) + float(rng.random())
                entries.append((key, 1, make_id(), pair_index, second, first, ids[i]))
        entries.sort(key=lambda e: (e[0], e[1]))
        for position, (_, _, task, pair_index, first, second, of) in enumerate(entries):
            tasks.append(PlannedTask(task, name, position, pair_index, first, second, of))
    return ReviewPlan(tuple(pairs), tuple(tasks), seed, design)
