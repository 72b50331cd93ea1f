"""From presentation records to the comparisons a ranking is fitted on (one judge at a time).

`swap` (the default): one comparison per complete pair, its order-cancelled outcome: a consistent win, else
a tie (a flip or a half-tie means the judge could not tell the two apart). `calls`: every parsed call on its
own, as arena-hard-auto counts them, for comparison only. Either way the bootstrap unit is the item.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from swapjudge.core.pairs import Outcome as PairOutcome
from swapjudge.core.pairs import build_pairs
from swapjudge.core.records import RecordSet
from swapjudge.errors import InputError
from swapjudge.ranking.bradley_terry import Comparisons
from swapjudge.ranking.bradley_terry import Outcome as Battle
from swapjudge.ranking.choices import OutcomeSource as OutcomeSource  # re-exported: its home before


def choose_judge(frame: pl.DataFrame, judge: str | None, source: str = "records") -> pl.DataFrame:
    """The records of one judge: the one named, or the only one there is."""
    judges = sorted(frame.get_column("judge").unique().to_list())
    if judge is None:
        if len(judges) > 1:
            raise InputError(f"records hold {len(judges)} judges ({', '.join(judges)}); "
                             "choose one with --judge", path=source)
        return frame
    if judge not in judges:
        raise InputError(f"no records of judge {judge!r} (judges: {', '.join(judges) or '(unnamed)'})",
                         path=source)
    return frame.filter(pl.col("judge") == judge)


def comparisons_from_records(records: RecordSet | pl.DataFrame, *, judge: str | None = None,
                             outcome: OutcomeSource | str = OutcomeSource.swap) -> Comparisons:
    """Comparisons of one judge's records, grouped by item for the bootstrap."""
    source = records.source if isinstance(records, RecordSet) else "records"
    frame = records.frame if isinstance(records, RecordSet) else records
    frame = choose_judge(frame, judge, source)
    outcome = OutcomeSource(outcome)
    if outcome is OutcomeSource.swap:
        table = build_pairs(frame).frame.filter(pl.col("outcome") != PairOutcome.INCOMPLETE)
        codes = table.get_column("outcome").to_numpy()
        battle = np.where(codes == PairOutcome.X_WINS, Battle.LEFT,
                          np.where(codes == PairOutcome.Y_WINS, Battle.RIGHT, Battle.TIE))
        left, right = table.get_column("x"), table.get_column("y")
        pair_keys = None  # every comparison is a pair of its own
    else:
        table = frame.filter((pl.col("first") != pl.col("second")) & pl.col("verdict").is_not_null())
        battle = table.get_column("verdict").replace_strict(
            {"first": int(Battle.LEFT), "second": int(Battle.RIGHT), "tie": int(Battle.TIE)},
            return_dtype=pl.Int8).to_numpy()
        left, right = table.get_column("first"), table.get_column("second")
        pair_keys = table.select(pl.concat_str(
            [pl.col("round").cast(pl.String), pl.col("item"),
             pl.min_horizontal("first", "second"), pl.max_horizontal("first", "second")],
            separator="\x1f")).to_series().to_list()
    if table.height == 0:
        if outcome is OutcomeSource.calls:
            raise InputError("no parsed calls to rank", path=source)
        raise InputError("no pair has usable verdicts in both orders, so no order-cancelled outcome exists "
                         "(--outcome calls ranks single calls, position bias included)", path=source)
    return Comparisons.from_labels(table.get_column("item").to_list(), left.to_list(), right.to_list(),
                                   battle, pairs=pair_keys)
