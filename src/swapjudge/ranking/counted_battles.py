"""The comparisons of a ranking from counted pairs (records reduced by `reading.streaming`, larger than memory).

A judge's pairs counted by (item, x, y, verdict of each order) become a weighted battle table: each row one
outcome of one item's system pair, with `count` comparisons. The Bradley-Terry fit sums counts per system pair,
and the item bootstrap resamples an item's rows together, so the ratings, intervals (the same seed) and tallies
are those of the rows `ranking.battles` builds from records read whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from swapjudge.core.choices import OutcomeSource
from swapjudge.errors import InputError
from swapjudge.ranking.bradley_terry import Battle, Comparisons
from swapjudge.reading.codes import FIRST, SECOND, TIE
from swapjudge.reading.pairs import Outcome, classify
from swapjudge.reading.reduce import positional

# a call's verdict state (FIRST, SECOND, TIE of the pair table) as the battle of its first- vs second-shown system
_CALL_BATTLE = {FIRST: Battle.LEFT, SECOND: Battle.RIGHT, TIE: Battle.TIE}


def comparisons_of_counts(verdicts: Mapping[str, np.ndarray], systems: Sequence[str], *,
                          outcome: OutcomeSource | str = OutcomeSource.swap, source: str = "records") -> Comparisons:
    """The comparisons of one judge's counted pairs (`StreamingSource.pair_verdicts`: arrays item, x, y, vx, vy, n
    with x and y indices into `systems`, sorted names): `swap` one order-cancelled outcome per complete pair,
    `calls` every parsed call. The systems are those the comparisons name, as `ranking.battles` keeps them."""
    outcome = OutcomeSource(outcome)
    if outcome is OutcomeSource.graded:
        raise ValueError("graded verdicts are not counted: rank them from the records")
    item, x, y, n = (np.asarray(verdicts[k], dtype=np.int64) for k in ("item", "x", "y", "n"))
    vx, vy = np.asarray(verdicts["vx"], dtype=np.int64), np.asarray(verdicts["vy"], dtype=np.int64)
    system_pairs = None
    if outcome is OutcomeSource.swap:
        codes = classify(positional(vx), positional(vy))
        keep = codes != Outcome.INCOMPLETE
        battle = np.where(codes == Outcome.X_WINS, Battle.LEFT,
                          np.where(codes == Outcome.Y_WINS, Battle.RIGHT, Battle.TIE))[keep]
        item, left, right, count = item[keep], x[keep], y[keep], n[keep]
        if not keep.any():
            raise InputError("no pair has usable verdicts in both orders, so no order-cancelled outcome exists "
                             "({outcome} calls ranks single calls, position bias included)", path=source,
                             arguments=("outcome",))
    else:
        parsed_x, parsed_y = np.isin(vx, list(_CALL_BATTLE)), np.isin(vy, list(_CALL_BATTLE))
        if not (parsed_x.any() or parsed_y.any()):
            raise InputError("no parsed calls to rank", path=source)
        battle_of = np.full(8, -1, dtype=np.int64)
        for state, result in _CALL_BATTLE.items():
            battle_of[state] = result
        # the call that showed x first is a battle of x (left) and y; the other one of y (left) and x
        item = np.concatenate([item[parsed_x], item[parsed_y]])
        left = np.concatenate([x[parsed_x], y[parsed_y]])
        right = np.concatenate([y[parsed_x], x[parsed_y]])
        battle = np.concatenate([battle_of[vx[parsed_x]], battle_of[vy[parsed_y]]])
        count = np.concatenate([n[parsed_x], n[parsed_y]])
        # a pair with a parsed call counts once for each of its two systems
        either = parsed_x | parsed_y
        system_pairs = (np.bincount(x[either], weights=n[either], minlength=len(systems))
                        + np.bincount(y[either], weights=n[either], minlength=len(systems))).astype(np.int64)
    named = np.unique(np.concatenate([left, right]))
    index = np.full(len(systems), -1, dtype=np.int64)
    index[named] = np.arange(named.size)
    return Comparisons(systems=tuple(systems[i] for i in named), item=item, left=index[left], right=index[right],
                       outcome=battle.astype(np.int8), count=count,
                       system_pairs=None if system_pairs is None else system_pairs[named])
