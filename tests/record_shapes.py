"""Seeded presentation records of every shape the analysis reads: several judges and rounds, labels naming x,
y, tie or neither, unparsed calls, identical-answer probes, verdict probabilities, an adaptive run's skipped
swaps, a live review's pairs shown once, single-order and random-order data. The in-memory analysis and the
analysis from counts (in memory and streamed from files) are held equal on each of them."""

from __future__ import annotations

import random
from typing import Any

SYSTEMS = ("alpha", "beta", "gamma", "delta")
VERDICTS = ("first", "second", "tie", None)


def _verdict(rng: random.Random, lean: float) -> str | None:
    return rng.choices(VERDICTS, weights=(40 + lean, 40 - lean, 15, 5))[0]


def mixed(n_items: int = 60, *, seed: int = 1, judges: tuple[str, ...] = ("j1", "j2"), rounds: int = 2,
          systems: tuple[str, ...] = SYSTEMS, labels: bool = True, probes: bool = True,
          probabilities: bool = False, segment: bool = True) -> list[dict[str, Any]]:
    """Both orders for every pair; a few pairs per item, several judges and rounds."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for judge in judges:
        for r in range(rounds):
            for i in range(n_items):
                item = f"q{i:03d}" if i % 7 else i  # integer items too
                pairs = rng.sample([(a, b) for a in systems for b in systems if a < b], k=1 + i % 3)
                category = ("math", "code", "writing")[i % 3]
                for x, y in pairs:
                    label = rng.choice([x, y, "tie", None, "other"]) if labels else None
                    for first, second in ((x, y), (y, x)):
                        row: dict[str, Any] = {"judge": judge, "round": r, "item": item, "first": first,
                                               "second": second, "verdict": _verdict(rng, 10)}
                        if label is not None:
                            row["label"] = label
                        if segment:
                            row["category"] = category
                        if probabilities and rng.random() < 0.9:
                            p = rng.random()
                            row["p_first"], row["p_second"] = round(p, 6), round((1 - p) * rng.random(), 6)
                        rows.append(row)
                if probes and i % 5 == 0:
                    system = rng.choice(systems)
                    row = {"judge": judge, "round": r, "item": item, "first": system, "second": system,
                           "verdict": _verdict(rng, 20)}
                    if segment:
                        row["category"] = category
                    if probabilities:
                        p = rng.random()
                        row["p_first"], row["p_second"] = round(p, 6), round(1 - p, 6)
                    rows.append(row)
    return rows


def two_systems(n_items: int = 80, *, seed: int = 2, lean: float = 15) -> list[dict[str, Any]]:
    """One judge, two systems, one pair per item: the win-rate path."""
    rng = random.Random(seed)
    rows = []
    for i in range(n_items):
        for first, second in (("base", "cand"), ("cand", "base")):
            rows.append({"judge": "solo", "item": f"i{i}", "first": first, "second": second,
                         "verdict": _verdict(rng, lean), "label": rng.choice(["base", "cand", "tie"])})
    return rows


def single_order(n_items: int = 50, *, seed: int = 3, random_order: bool = False) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for i in range(n_items):
        swap = random_order and rng.random() < 0.5
        first, second = ("m1", "m2") if not swap else ("m2", "m1")
        rows.append({"item": f"s{i}", "first": first, "second": second, "verdict": _verdict(rng, 5)})
    return rows


def adaptive(n_items: int = 60, *, seed: int = 4) -> list[dict[str, Any]]:
    """An adaptive run's export: confident first verdicts kept their swap skipped."""
    rng = random.Random(seed)
    rows = []
    for i in range(n_items):
        first, second = ("v1", "v2") if i % 2 else ("v2", "v1")
        verdict = _verdict(rng, 10)
        rows.append({"judge": "adapt", "item": f"a{i}", "first": first, "second": second, "verdict": verdict,
                     "registered_adaptive_swap": 0.8, "registered_tie_policy": "half_credit",
                     "registered_a": "v1", "registered_b": "v2"})
        if verdict is None or rng.random() < 0.4:
            rows.append({"judge": "adapt", "item": f"a{i}", "first": second, "second": first,
                         "verdict": _verdict(rng, 10), "registered_adaptive_swap": 0.8,
                         "registered_tie_policy": "half_credit", "registered_a": "v1", "registered_b": "v2"})
    return rows


def reshown(n_items: int = 40, *, seed: int = 5) -> list[dict[str, Any]]:
    """A live review's export: a share of its pairs shown in both orders, the rest once."""
    rng = random.Random(seed)
    rows = []
    for i in range(n_items):
        rows.append({"judge": "people", "item": f"r{i}", "first": "h1", "second": "h2",
                     "verdict": _verdict(rng, 0), "registered_reshow": 0.25})
        if i % 4 == 0:
            rows.append({"judge": "people", "item": f"r{i}", "first": "h2", "second": "h1",
                         "verdict": _verdict(rng, 0), "registered_reshow": 0.25})
    return rows


def unpaired(n_items: int = 40, *, seed: int = 6) -> list[dict[str, Any]]:
    """Both orders for most pairs, one order for a few (read with allow_unpaired)."""
    rows = two_systems(n_items, seed=seed)
    return [r for k, r in enumerate(rows) if k % 9 != 4]


SHAPES = {
    "mixed": lambda: mixed(),
    "mixed_probabilities": lambda: mixed(40, seed=7, probabilities=True),
    "two_systems": lambda: two_systems(),
    "single_order": lambda: single_order(),
    "random_order": lambda: single_order(random_order=True),
    "adaptive": lambda: adaptive(),
    "reshown": lambda: reshown(),
    "unpaired": lambda: unpaired(),
}
