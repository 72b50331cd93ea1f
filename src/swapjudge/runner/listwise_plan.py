"""The best-of-N plan, pure: which slot orders each item is shown in.

- `latin`: a cyclic Latin square, N calls per item: call r shows the item's base order shifted by r, so each
  candidate sits once in each slot. The base order is a permutation seeded by the run's seed and the item, so
  items do not share one square (a judge's taste for a system in a slot cannot line up across items).
- `all`: every permutation (N! calls per item): balanced for pairs of slots too.
- `random`: N calls per item, each an independent permutation seeded by the seed, the item and the call: balanced
  only in expectation (the slot test then assumes the randomisation).
"""

from __future__ import annotations

import hashlib
import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass

ROTATIONS = ("latin", "all", "random")


@dataclass(frozen=True)
class ListwiseCallPlan:
    """One planned call: the item, the systems in slot order, and its place among the item's rotations."""

    item: str
    slots: tuple[str, ...]
    rotation: int


def _rng(seed: int, item: str, salt: str = "") -> random.Random:
    digest = hashlib.sha256(f"{seed}\x00{item}\x00{salt}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def rotations(item: str, systems: Sequence[str], mode: str = "latin", seed: int = 0) -> list[tuple[str, ...]]:
    """The slot orders `item` is shown in (see the module's docstring); `systems` in any order (sorted first,
    so the plan does not depend on the order a file lists them in)."""
    if mode not in ROTATIONS:
        raise ValueError(f"rotations must be one of {', '.join(ROTATIONS)}, got {mode!r}")
    names = sorted(systems)
    n = len(names)
    if mode == "all":
        return [tuple(p) for p in itertools.permutations(names)]
    if mode == "random":
        out = []
        for r in range(n):
            order = names[:]
            _rng(seed, item, f"call{r}").shuffle(order)
            out.append(tuple(order))
        return out
    base = names[:]
    _rng(seed, item).shuffle(base)
    return [tuple(base[(r + j) % n] for j in range(n)) for r in range(n)]


def plan_listwise(items: Sequence[tuple[str, Sequence[str]]], mode: str = "latin", seed: int = 0,
                  done: set[tuple[str, tuple[str, ...]]] | frozenset[tuple[str, tuple[str, ...]]] = frozenset()
                  ) -> list[ListwiseCallPlan]:
    """Every call of `items` ((item, systems) pairs) not in `done` ((item, slots) already judged: a resumed run
    plans only what is missing)."""
    return [ListwiseCallPlan(item, order, r) for item, systems in items
            for r, order in enumerate(rotations(item, systems, mode, seed)) if (item, order) not in done]
