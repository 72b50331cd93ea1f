"""From presentation records to the comparisons a ranking is fitted on (one judge at a time).

`swap` (the default): one comparison per complete pair, its order-cancelled outcome: a consistent win, else
a tie (a flip or a half-tie means the judge could not tell the two apart). `calls`: every parsed call on its
own, as arena-hard-auto counts them, for comparison only. `graded` (records with `strength`): one comparison
per graded pair, a weighted outcome: its order-averaged graded score s for x (core.graded) counts as s of a win
and 1 - s of a loss. Either way the bootstrap unit is the item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from swapjudge.core.choices import OutcomeSource as OutcomeSource  # re-exported: its home before
from swapjudge.core.graded import graded_scores, levels
from swapjudge.errors import InputError
from swapjudge.ranking.bradley_terry import Battle, Comparisons
from swapjudge.ranking.order_effect import Calls
from swapjudge.ranking.style import TEXT_FEATURES, covariate_matrix, text_feature
from swapjudge.reading.pairs import Outcome, build_pairs
from swapjudge.reading.records import RecordSet


def judge_of(judges: list[str], judge: str | None, source: str = "records") -> str:
    """The judge ranked among these (sorted) judges: the one named, or the only one there is."""
    if judge is None:
        if len(judges) > 1:
            raise InputError(f"records hold {len(judges)} judges ({', '.join(judges)}); "
                             "choose one with {judge}", path=source, arguments=("judge",))
        return judges[0] if judges else ""
    if judge not in judges:
        raise InputError(f"no records of judge {judge!r} (judges: {', '.join(judges) or '(unnamed)'})",
                         path=source)
    return judge


def choose_judge(frame: pl.DataFrame, judge: str | None, source: str = "records") -> pl.DataFrame:
    """The records of one judge: the one named, or the only one there is."""
    chosen = judge_of(sorted(frame.get_column("judge").unique().to_list()), judge, source)
    return frame if judge is None else frame.filter(pl.col("judge") == chosen)


def comparisons_from_records(records: RecordSet | pl.DataFrame, *, judge: str | None = None,
                             outcome: OutcomeSource | str = OutcomeSource.swap) -> Comparisons:
    """Comparisons of one judge's records, grouped by item for the bootstrap."""
    source = records.source if isinstance(records, RecordSet) else "records"
    frame = records.frame if isinstance(records, RecordSet) else records
    frame = choose_judge(frame, judge, source)
    outcome = OutcomeSource(outcome)
    if outcome is OutcomeSource.graded:
        return _graded_comparisons(frame, source)
    if outcome is OutcomeSource.swap:
        table = build_pairs(frame).frame.filter(pl.col("outcome") != Outcome.INCOMPLETE)
        codes = table.get_column("outcome").to_numpy()
        battle = np.where(codes == Outcome.X_WINS, Battle.LEFT,
                          np.where(codes == Outcome.Y_WINS, Battle.RIGHT, Battle.TIE))
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
                         "({outcome} calls ranks single calls, position bias included)", path=source,
                         arguments=("outcome",))
    return Comparisons.from_labels(table.get_column("item").to_list(), left.to_list(), right.to_list(),
                                   battle, pairs=pair_keys)


def _graded_comparisons(frame: pl.DataFrame, source: str) -> Comparisons:
    """Each graded pair as two weighted comparisons of x and y: x's win weighted by its graded score s, y's by
    1 - s (the pair counted once: it is one pair for the tallies and one unit of its item)."""
    table = build_pairs(frame).frame
    if "sx" not in table.columns:
        raise InputError("{outcome} graded needs graded verdicts: the records carry no `strength`", path=source,
                         arguments=("outcome",))
    lx = levels(table.get_column("vx").to_numpy(), table.get_column("sx").fill_null(0).to_numpy())
    ly = levels(table.get_column("vy").to_numpy(), table.get_column("sy").fill_null(0).to_numpy())
    score = graded_scores(lx, ly)
    keep = ~np.isnan(score)
    if not keep.any():
        raise InputError("no graded pair: no pair has a level (a verdict with its strength, or a tie) in both "
                         "orders", path=source)
    table, score = table.filter(pl.Series(keep)), score[keep]
    n = table.height
    items = table.get_column("item").to_list()
    left, right = table.get_column("x").to_list(), table.get_column("y").to_list()
    keys = list(range(n))
    return Comparisons.from_labels(items * 2, left * 2, right * 2,
                                   np.concatenate([np.full(n, Battle.LEFT), np.full(n, Battle.RIGHT)]),
                                   pairs=keys * 2, weight=np.concatenate([score, 1.0 - score]))


def calls_from_records(records: RecordSet | pl.DataFrame, *, judge: str | None = None,
                       controls: Sequence[str] = (), texts: Mapping[tuple[str, str], str] | None = None) -> Calls:
    """Every parsed call of one judge, slot kept, with style covariates for `rank --order-effect/--control`.

    A control's two features come from the records' `first_<name>` / `second_<name>` fields, or, for length and
    markdown, from answer texts keyed by (item, system)."""
    source = records.source if isinstance(records, RecordSet) else "records"
    frame = choose_judge(records.frame if isinstance(records, RecordSet) else records, judge, source)
    table = frame.filter((pl.col("first") != pl.col("second")) & pl.col("verdict").is_not_null())
    if table.height == 0:
        raise InputError("no parsed calls to rank", path=source)
    score = table.get_column("verdict").replace_strict({"first": 1.0, "second": 0.0, "tie": 0.5},
                                                       return_dtype=pl.Float64).to_numpy()
    firsts, seconds = {}, {}
    for name in controls:
        columns = (f"first_{name}", f"second_{name}")
        if all(c in table.columns for c in columns):
            values = [table.get_column(c).cast(pl.Float64, strict=False) for c in columns]
            if any(v.null_count() for v in values):
                raise InputError(f"{{control}} {name}: some calls lack a number in {columns[0]} / {columns[1]}",
                                 path=source, field=columns[values[0].null_count() == 0], arguments=("control",))
            firsts[name], seconds[name] = values[0].to_numpy(), values[1].to_numpy()
        elif texts is not None and name in TEXT_FEATURES:
            firsts[name], seconds[name] = _text_features(table, texts, name, source)
        else:
            how = " or give {pairs} with the answer texts" if name in TEXT_FEATURES else ""
            raise InputError(f"{{control}} {name}: the records carry no {columns[0]} / {columns[1]} fields{how}",
                             path=source, arguments=("control", "pairs"))
    names = sorted(set(table.get_column("first").to_list()) | set(table.get_column("second").to_list()))
    index = {s: i for i, s in enumerate(names)}
    item = np.unique(table.get_column("item").to_numpy().astype(str), return_inverse=True)[1]
    return Calls(systems=tuple(names), item=item,
                 first=np.array([index[s] for s in table.get_column("first").to_list()], dtype=np.int64),
                 second=np.array([index[s] for s in table.get_column("second").to_list()], dtype=np.int64),
                 score=score, covariates=covariate_matrix(firsts, seconds, list(controls)),
                 covariate_names=tuple(controls))


def _text_features(table: pl.DataFrame, texts: Mapping[tuple[str, str], str], name: str,
                   source: str) -> tuple[np.ndarray, np.ndarray]:
    out = []
    for column in ("first", "second"):
        values = []
        for item, system in zip(table.get_column("item").to_list(), table.get_column(column).to_list(), strict=True):
            text = texts.get((str(item), str(system)))
            if text is None:
                raise InputError(f"{{control}} {name}: no answer text for item {item!r}, system {system!r} in the "
                                 "pairs file", path=source, arguments=("control",))
            values.append(text_feature(text, name))
        out.append(np.array(values, dtype=np.float64))
    return out[0], out[1]
