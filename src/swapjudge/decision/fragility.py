"""How few items stand between a verdict and another one: its fragility.

- **drop**: the fewest items whose removal changes the verdict (ship, keep or inconclusive to another of them);
- **flip**: the fewest items whose verdicts, turned against the verdict, change it. Against a ship (and toward
  keep from an inconclusive verdict) every complete pair of a flipped item becomes a consistent win of the
  incumbent; against a keep (toward ship) a consistent win of the candidate. Incomplete pairs stay as they are;
- **splits_worst_case**: whether the swap-inconsistent pairs (flips and half-ties), each resolved the worst way
  for the verdict (a ship's splits as losses, a keep's as wins), change it.

The verdict is the decision's own fail-closed rule (`decision.verdict.rule`): missing calls, the consistency gate
(recomputed over the pairs that remain), then the bound. A removed item does not count as an item not yet in:
the planned number of items is taken as read.

With the fixed design the verdict depends on the items only through their kinds (score, consistent and complete
pairs, missing calls), not on which item is which or their order, so the search is exact: after a quick pass that
removes (or flips) items in score order (and in consistency order, for the gate), every combination of kinds with
fewer items is tried, fewest first, up to `budget` combinations. When the budget runs out first, or with the
sequential design (whose confidence sequence depends on the order of the items), the answer is the fewest found
and `exact` is False: an upper bound, not proven to be the fewest. Every answer is confirmed by the caller
recomputing the verdict from the records without (or with flipped) those items.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from swapjudge.core import stats
from swapjudge.core.display import percent
from swapjudge.decision.bounds import first_crossings
from swapjudge.decision.verdict import INCONCLUSIVE, KEEP, SHIP
from swapjudge.reading.codes import Outcome

DEFAULT_BUDGET = 2_000_000  # combinations of item kinds the exact search tries before it settles for an upper bound
_SCAN_LIMIT = 2_000  # beyond this many items, a score-order pass searches its prefix by bisection
AGAINST, FOR = "against", "for"  # the candidate, when items are flipped or splits resolved


@dataclass(frozen=True)
class VerdictRule:
    """What the verdict reads, from the decision file: the fail-closed rule without its words."""

    policy: str
    bar: float
    alpha: float
    monitoring: str  # fixed | sequential
    min_consistency: float
    allowed_missing: int = 0
    extra_missing: int = 0  # calls missing that no item carries (a stored run's calls never made)
    early: bool = False  # the fixed design's planned items are not all in (it cannot ship)

    def verdict(self, scores: np.ndarray, consistent: float, complete: float, missing: float) -> str:
        """ship, keep or inconclusive, in the order `decision.verdict.rule` applies its rules."""
        if missing + self.extra_missing > self.allowed_missing:
            return KEEP
        if complete == 0 or consistent / complete < self.min_consistency:
            return KEEP
        n = int(scores.size)
        if n == 0:
            return INCONCLUSIVE
        if self.monitoring == "sequential":
            ship_at, keep_at = (int(v[0]) for v in first_crossings(scores[None, :], self.bar, self.alpha))
            ship = ship_at > 0 and (keep_at == 0 or ship_at < keep_at)
            return SHIP if ship else KEEP if keep_at > 0 else INCONCLUSIVE
        return self.fixed(n, float(scores.sum()), float(np.sum(scores**2)))

    def fixed(self, n: int, total: float, squares: float) -> str:
        """The fixed design's reading from the score sums: `fixed_bound` (`core.stats.mean_interval`) computed
        from its three sums, which is all it reads."""
        if n == 0:
            return INCONCLUSIVE
        confidence = 1 - 2 * self.alpha
        p = total / n
        n_eff = n / stats._spread(n, total, squares)
        low, high = stats._small_count_bounds(p, n, n_eff, *stats._wilson_bounds(p, n_eff, stats.normal_quantile(
            confidence)), confidence)
        if high < self.bar:
            return KEEP
        if self.early:
            return INCONCLUSIVE
        return SHIP if low > self.bar else INCONCLUSIVE


@dataclass(frozen=True)
class Items:
    """The items read, in stream order, each with its score (NaN: no score), consistent, complete pairs and
    missing calls; and what it is when flipped against or for the candidate."""

    ids: tuple[str, ...]
    score: np.ndarray
    consistent: np.ndarray
    complete: np.ndarray
    missing: np.ndarray
    split_pairs: np.ndarray  # flips and half-ties among its complete pairs
    against: np.ndarray  # the score of its splits resolved against the candidate (NaN: none to score)
    toward: np.ndarray  # ... and for the candidate

    @property
    def n(self) -> int:
        return len(self.ids)


def item_table(items: np.ndarray, outcome: np.ndarray, candidate_is_x: np.ndarray, missing: np.ndarray,
               policy: str) -> Items:
    """Per item from per pair arrays (every pair of the two systems, incomplete ones included): `items` each
    pair's item (stream order), `outcome` its Outcome code, `candidate_is_x`, `missing` its calls without a
    verdict."""
    from swapjudge.decision.scores import pair_scores

    items = np.asarray(items).astype(str)
    outcome = np.asarray(outcome)
    cx = np.asarray(candidate_is_x, dtype=bool)
    names, first, codes = np.unique(items, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    codes = rank[codes.reshape(-1)]
    g = names.size
    done = outcome != Outcome.INCOMPLETE
    consistent = done & np.isin(outcome, (Outcome.X_WINS, Outcome.Y_WINS, Outcome.TIE))
    split = done & ~consistent

    def mean_score(outcomes: np.ndarray) -> np.ndarray:
        s = pair_scores(outcomes, cx, policy)
        ok = done & ~np.isnan(s)
        tot = np.bincount(codes[ok], weights=s[ok], minlength=g)
        cnt = np.bincount(codes[ok], minlength=g)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan)

    lose_code = np.where(cx, Outcome.Y_WINS, Outcome.X_WINS)
    win_code = np.where(cx, Outcome.X_WINS, Outcome.Y_WINS)
    against = np.where(split, lose_code, outcome)
    toward = np.where(split, win_code, outcome)
    return Items(
        ids=tuple(str(n) for n in names[order]), score=mean_score(outcome),
        consistent=np.bincount(codes, weights=consistent, minlength=g),
        complete=np.bincount(codes, weights=done, minlength=g),
        missing=np.bincount(codes, weights=np.asarray(missing, dtype=float), minlength=g),
        split_pairs=np.bincount(codes, weights=split, minlength=g),
        against=mean_score(against), toward=mean_score(toward))


@dataclass(frozen=True)
class VerdictChange:
    """The fewest items found that change the verdict, and what it becomes."""

    kind: str  # drop | flip
    items: int | None  # None: no such set of items exists (or none was found)
    total: int
    ids: tuple[str, ...]
    to: str | None
    verdict: str
    exact: bool
    method: str
    direction: str | None = None  # flip: against or for the candidate
    confirmed: bool | None = None  # the caller's recomputation from the records

    @property
    def share(self) -> float | None:
        return None if self.items is None or not self.total else self.items / self.total

    @property
    def statement(self) -> str:
        if self.items is None:
            what = "no set of items, removed" if self.kind == "drop" else \
                f"no set of items, their verdicts turned {self.direction or AGAINST} the candidate,"
            return f"{what} changes this {self.verdict} verdict"
        assert self.share is not None
        how = "dropped" if self.kind == "drop" else f"with their verdicts turned {self.direction} the candidate"
        bound = "" if self.exact else " (found by search, not proven the fewest)"
        return (f"{self.items:,} of {self.total:,} items ({percent(self.share)}) stand between this verdict and "
                f"{self.to}: {how}, the {self.verdict} verdict becomes {self.to}{bound}")

    def to_dict(self) -> dict[str, Any]:
        return {"items": self.items, "share": self.share, "ids": list(self.ids), "to": self.to,
                "exact": self.exact, "method": self.method, "direction": self.direction,
                "confirmed": self.confirmed, "statement": self.statement}


@dataclass(frozen=True)
class SplitsWorstCase:
    """The swap-inconsistent pairs resolved the worst way for the verdict, and the verdict that gives."""

    items: int  # items with at least one split pair
    pairs: int
    verdict: str
    against: str  # the verdict with every split a loss of the candidate
    toward: str  # ... and a win
    confirmed: bool | None = None

    @property
    def worst(self) -> str:
        """The verdict the worst resolution gives: against a ship, for a keep, whichever changes an
        inconclusive verdict (toward keep first)."""
        if self.verdict == SHIP:
            return self.against
        if self.verdict == KEEP:
            return self.toward
        return self.against if self.against != INCONCLUSIVE else self.toward

    @property
    def changes(self) -> bool:
        return self.worst != self.verdict

    @property
    def statement(self) -> str:
        if not self.pairs:
            return "no pair is swap-inconsistent: the splits cannot change this verdict"
        side = {SHIP: "against the candidate", KEEP: "for the candidate"}.get(self.verdict, "either way")
        if self.changes:
            return (f"the {self.pairs:,} swap-inconsistent pair(s) on {self.items:,} item(s), resolved "
                    f"{side}, turn this {self.verdict} verdict into {self.worst}")
        return (f"the {self.pairs:,} swap-inconsistent pair(s) on {self.items:,} item(s), resolved {side}, leave "
                f"this {self.verdict} verdict as it is")

    def to_dict(self) -> dict[str, Any]:
        return {"items": self.items, "pairs": self.pairs, "against_candidate": self.against,
                "for_candidate": self.toward, "verdict": self.worst, "changes": self.changes,
                "confirmed": self.confirmed, "statement": self.statement}


@dataclass(frozen=True)
class Fragility:
    """The three figures for one verdict, over its items (each item one unit: its pairs move together)."""

    verdict: str
    items: int
    drop: VerdictChange
    flip: VerdictChange
    splits_worst_case: SplitsWorstCase
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "items": self.items, "independent": "items", "drop": self.drop.to_dict(),
                "flip": self.flip.to_dict(), "splits_worst_case": self.splits_worst_case.to_dict(),
                "notes": list(self.notes)}


class _State:
    """Evaluates the verdict with some items removed or replaced by their flipped selves."""

    def __init__(self, table: Items, rule: VerdictRule) -> None:
        self.t, self.rule = table, rule

    def verdict(self, removed: np.ndarray | None = None, flipped: np.ndarray | None = None,
                flip_score: np.ndarray | None = None) -> str:
        t = self.t
        keep = np.ones(t.n, dtype=bool) if removed is None else ~removed
        score = t.score.copy()
        consistent = t.consistent.copy()
        if flipped is not None and flipped.any():
            assert flip_score is not None
            score[flipped] = flip_score[flipped]
            consistent[flipped] = t.complete[flipped]
        chosen = keep & ~np.isnan(score)
        return self.rule.verdict(score[chosen], float(consistent[keep].sum()), float(t.complete[keep].sum()),
                                 float(t.missing[keep].sum()))


def _flip_scores(table: Items, direction: str) -> np.ndarray:
    """Each item's score with every complete pair turned (NaN: no complete pair, nothing to turn)."""
    value = 0.0 if direction == AGAINST else 1.0
    return np.where(table.complete > 0, value, np.nan)


def _orders(table: Items, kind: str, direction: str | None) -> list[tuple[str, np.ndarray]]:
    """Orders in which a quick pass removes or flips items (a stable sort: stream order among equals)."""
    s = np.where(np.isnan(table.score), 0.5, table.score)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(table.complete > 0, table.consistent / np.maximum(table.complete, 1), 1.0)
    if kind == "flip":
        candidates = np.flatnonzero(table.complete > 0)
        key = -s[candidates] if direction == AGAINST else s[candidates]
        return [("score", candidates[np.argsort(key, kind="stable")])]
    n = np.arange(table.n)
    return [
        ("highest scores first", n[np.lexsort((-table.consistent, -s))]),
        ("lowest scores first", n[np.lexsort((-table.consistent, s))]),
        ("most consistent first", n[np.lexsort((-s, -share, -table.complete))]),
        ("least consistent first", n[np.lexsort((s, share, -table.complete))]),
        ("missing calls first", n[np.lexsort((s, -table.missing))]),
    ]


def _prefix(order: np.ndarray, changed: Any, n: int) -> int | None:
    """The shortest prefix of `order` whose removal (or flip) changes the verdict: every prefix up to
    `_SCAN_LIMIT`, beyond it by doubling and bisection (which assumes the change, once there, stays)."""
    size = order.size
    if size <= _SCAN_LIMIT:
        for k in range(1, size + 1):
            if changed(order[:k]):
                return k
        return None
    k = 1
    while k < size and not changed(order[:k]):
        k *= 2
    hi = min(k, size)
    if not changed(order[:hi]):
        return None
    lo = k // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if changed(order[:mid]):
            hi = mid
        else:
            lo = mid
    return hi


def compositions(total: int, caps: Sequence[int]) -> np.ndarray:
    """Every way to take `total` items from kinds holding `caps` items each: one row per way, one column per
    kind."""
    rows = np.zeros((1, 0), dtype=np.int64)
    rem = np.array([total], dtype=np.int64)
    caps = [int(c) for c in caps]
    for j, cap in enumerate(caps):
        if j == len(caps) - 1:
            ok = rem <= cap
            return np.column_stack([rows[ok], rem[ok]]) if rows.shape[1] else rem[ok][:, None]
        choices = np.minimum(rem, cap) + 1
        idx = np.repeat(np.arange(rem.size), choices)
        take = np.arange(idx.size) - np.repeat(np.cumsum(choices) - choices, choices)
        rows = np.column_stack([rows[idx], take]) if rows.shape[1] else take[:, None]
        rem = rem[idx] - take
        ok = rem <= sum(caps[j + 1:])  # what is left must fit in the kinds still to come
        rows, rem = rows[ok], rem[ok]
    return np.zeros((1 if total == 0 else 0, 0), dtype=np.int64)


def count_compositions(total: int, caps: Sequence[int]) -> int:
    ways = [1] + [0] * total
    for cap in caps:
        nxt = [0] * (total + 1)
        for j, w in enumerate(ways):
            if w:
                for take in range(0, min(int(cap), total - j) + 1):
                    nxt[j + take] += w
        ways = nxt
    return ways[total]


def _kinds(table: Items, candidates: np.ndarray, flip_score: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The kinds of the candidate items (what the fixed verdict reads of an item) and each item's kind."""
    s = np.where(np.isnan(table.score), -1.0, table.score)
    f = np.zeros(table.n) if flip_score is None else np.where(np.isnan(flip_score), -1.0, flip_score)
    rows = np.column_stack([s, table.consistent, table.complete, table.missing, f])[candidates]
    kinds, inverse = np.unique(rows, axis=0, return_inverse=True)
    return kinds, inverse.reshape(-1)


class _FixedSums:
    """The fixed verdict from the sums over item kinds (what `VerdictRule.fixed` reads), for the exact search."""

    def __init__(self, table: Items, rule: VerdictRule) -> None:
        self.rule = rule
        scored = ~np.isnan(table.score)
        self.n = int(scored.sum())
        self.total = float(table.score[scored].sum())
        self.squares = float(np.sum(table.score[scored] ** 2))
        self.consistent = float(table.consistent.sum())
        self.complete = float(table.complete.sum())
        self.missing = float(table.missing.sum())

    def verdicts(self, kinds: np.ndarray, take: np.ndarray, flip: bool) -> np.ndarray:
        """The verdict of every row of `take` (items of each kind removed, or flipped): what
        `VerdictRule.verdict` gives, computed for all rows at once (`VerdictRule.fixed`'s arithmetic in numpy,
        its small-count repair by the rule itself)."""
        s, c, m, q, f = (kinds[:, j] for j in range(5))
        has = (s >= 0).astype(float)
        take = take.astype(float)
        n = self.n - take @ has
        total = self.total - take @ (s * has)
        squares = self.squares - take @ (s**2 * has)
        consistent = np.full(take.shape[0], self.consistent)
        complete = np.full(take.shape[0], self.complete)
        missing = np.full(take.shape[0], self.missing)
        if flip:
            turned = (f >= 0).astype(float)
            n = n + take @ turned
            total = total + take @ (f * turned)
            squares = squares + take @ (f**2 * turned)
            consistent = consistent + take @ (m - c)
        else:
            consistent = consistent - take @ c
            complete = complete - take @ m
            missing = missing - take @ q
        rule = self.rule
        out = np.full(take.shape[0], INCONCLUSIVE, dtype=object)
        with np.errstate(invalid="ignore", divide="ignore"):
            kept = (missing + rule.extra_missing > rule.allowed_missing) | (complete == 0) | (
                consistent / np.where(complete == 0, 1, complete) < rule.min_consistency)
        out[kept] = KEEP
        live = ~kept & (n > 0)
        out[live] = _fixed_many(rule, n[live].round().astype(np.int64), total[live], squares[live])
        return out


def _fixed_many(rule: VerdictRule, n: np.ndarray, total: np.ndarray, squares: np.ndarray) -> np.ndarray:
    """`VerdictRule.fixed` for many sums at once (`core.stats.mean_interval`'s arithmetic, element by element);
    where the small-count repair may apply the rule itself is asked."""
    confidence = 1 - 2 * rule.alpha
    z = stats.normal_quantile(confidence)
    w = stats.SPREAD_PSEUDO
    nf = n.astype(float)
    p = total / nf
    size = nf + 2 * w
    mean = (total + w) / size
    var = (squares + w) / size - mean**2
    spread = np.minimum(1.0, np.maximum(var, 0.0) / (mean * (1 - mean)))
    n_eff = nf / spread
    denom = 2 * (n_eff + z**2)
    center = (2 * n_eff * p + z**2) / denom
    delta = z / denom * np.sqrt(np.maximum(0.0, 4 * n_eff * p * (1 - p) + z**2))
    low = np.where(p <= 0, 0.0, np.maximum(0.0, center - delta))
    high = np.where(p >= 1, 1.0, np.minimum(1.0, center + delta))
    out = np.where(high < rule.bar, KEEP, np.where(rule.early, INCONCLUSIVE,
                                                   np.where(low > rule.bar, SHIP, INCONCLUSIVE))).astype(object)
    limit = np.where(n_eff <= 50, 2, 3)
    k, miss = p * n_eff, (1 - p) * n_eff
    small = (n > 2 * limit) & (((k > 0) & (k <= limit)) | ((miss > 0) & (miss <= limit)))
    for i in np.flatnonzero(small):
        out[i] = rule.fixed(int(n[i]), float(total[i]), float(squares[i]))
    return out


def _search(table: Items, rule: VerdictRule, verdict: str, kind: str, direction: str | None,
            budget: int) -> VerdictChange:
    state = _State(table, rule)
    flip_score = _flip_scores(table, direction or AGAINST) if kind == "flip" else None

    def changed(chosen: np.ndarray) -> bool:
        mask = np.zeros(table.n, dtype=bool)
        mask[chosen] = True
        if kind == "drop":
            return state.verdict(removed=mask) != verdict
        return state.verdict(flipped=mask, flip_score=flip_score) != verdict

    best: tuple[int, np.ndarray, str] | None = None
    for name, order in _orders(table, kind, direction):
        k = _prefix(order, changed, table.n)
        if k is not None and (best is None or k < best[0]):
            best = (k, order[:k], name)
    if rule.monitoring == "sequential":
        return _change(table, state, kind, direction, verdict, best, False,
                       "items removed (or flipped) in score and consistency order, each pass's shortest prefix "
                       "(the confidence sequence depends on the items' order, so no exhaustive search)",
                       flip_score)
    candidates = np.arange(table.n) if kind == "drop" else np.flatnonzero(table.complete > 0)
    kinds, inverse = _kinds(table, candidates, flip_score)
    caps = np.bincount(inverse, minlength=kinds.shape[0])
    sums = _FixedSums(table, rule)
    limit = (best[0] - 1) if best is not None else int(candidates.size)
    tried = 0
    exact = True
    for k in range(1, limit + 1):
        ways = count_compositions(k, caps.tolist())
        if tried + ways > budget:
            exact = False
            break
        tried += ways
        takes = compositions(k, caps.tolist())
        hits = np.flatnonzero(sums.verdicts(kinds, takes, kind == "flip") != verdict)
        if hits.size:
            take = takes[hits[0]]
            chosen = np.concatenate([candidates[inverse == j][:t] for j, t in enumerate(take) if t])
            best = (k, np.sort(chosen), "every combination of item kinds, fewest items first")
            break
    method = ("exhaustive over the kinds of items (score, consistent and complete pairs, missing calls), fewest "
              "first" if exact else f"the fewest found: passes in score and consistency order, then every "
              f"combination of item kinds up to {budget:,} tried (not proven the fewest)")
    return _change(table, state, kind, direction, verdict, best, exact, method, flip_score)


def _change(table: Items, state: _State, kind: str, direction: str | None, verdict: str,
            best: tuple[int, np.ndarray, str] | None, exact: bool, method: str,
            flip_score: np.ndarray | None) -> VerdictChange:
    if best is None:
        return VerdictChange(kind, None, table.n, (), None, verdict, exact, method, direction)
    k, chosen, _ = best
    mask = np.zeros(table.n, dtype=bool)
    mask[chosen] = True
    to = state.verdict(removed=mask) if kind == "drop" else state.verdict(flipped=mask, flip_score=flip_score)
    ids = tuple(table.ids[i] for i in sorted(int(c) for c in chosen))
    return VerdictChange(kind, k, table.n, ids, to, verdict, exact, method, direction)


def fragility(table: Items, rule: VerdictRule, *, budget: int = DEFAULT_BUDGET) -> Fragility:
    """Drop, flip and the splits' worst case of the verdict these items give under `rule`."""
    state = _State(table, rule)
    verdict = state.verdict()
    drop = _search(table, rule, verdict, "drop", None, budget)
    if verdict == SHIP:
        flip = _search(table, rule, verdict, "flip", AGAINST, budget)
    elif verdict == KEEP:
        flip = _search(table, rule, verdict, "flip", FOR, budget)
    else:
        options = [_search(table, rule, verdict, "flip", d, budget) for d in (AGAINST, FOR)]
        found = [o for o in options if o.items is not None]
        flip = min(found, key=lambda o: o.items or 0) if found else options[0]
        if len(found) == 2 and found[0].items == found[1].items:
            flip = found[0]
    has_split = table.split_pairs > 0
    worst = SplitsWorstCase(
        items=int(has_split.sum()), pairs=int(table.split_pairs.sum()), verdict=verdict,
        against=_resolved(table, rule, AGAINST), toward=_resolved(table, rule, FOR))
    notes = ("a removed item does not count as an item not yet in: the planned items are taken as read",) \
        if rule.early else ()
    return Fragility(verdict, table.n, drop, flip, worst, notes)


def _resolved(table: Items, rule: VerdictRule, direction: str) -> str:
    """The verdict with every split pair resolved `direction` the candidate (it then counts as consistent)."""
    score = table.against if direction == AGAINST else table.toward
    consistent = table.consistent + table.split_pairs
    chosen = ~np.isnan(score)
    return rule.verdict(score[chosen], float(consistent.sum()), float(table.complete.sum()),
                        float(table.missing.sum()))


def describe(f: Fragility) -> list[str]:
    """The plain lines a reader sees."""
    return [f"drop: {f.drop.statement}", f"flip: {f.flip.statement}",
            f"splits: {f.splits_worst_case.statement}"]
