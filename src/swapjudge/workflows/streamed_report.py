"""`swapjudge report` from the streaming engine's counts (`reading.streaming`, DuckDB): records files larger than
memory get the report's analyses, segments, rankings and review queue with the figures of records read whole.

Each judge's analysis and the per-segment analyses come from the counts (`core.counted`, `probes.segments`), the
rankings from the pairs counted by item and verdicts (`ranking.counted_battles`), the review queue from the pair
table: its size by outcome over every pair, and only the first pairs the HTML shows, with their texts and judge
replies read back from those records alone. The human-corrected win rate reads back the calls of each judge's
compared pair alone (its people's records are small). What needs every row (the length probe's answer lengths,
the panel's pair-by-pair comparison) is left out, each with a sentence saying so and naming `--engine memory`,
which computes it. The report itself is built by the builder records read whole go through
(`report_inputs.report_of_counts`): only who computes the counts differs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from swapjudge.reading.pairs import classify
from swapjudge.reading.records import choose_judges
from swapjudge.reading.reduce import positional
from swapjudge.review.queue import QUEUE_FIELDS, QUEUE_OUTCOMES
from swapjudge.workflows.report_inputs import LENGTH_COLUMNS, ReportInputs, ReportOptions, report_of_counts
from swapjudge.workflows.sources import TEXT_COLUMNS, StreamedSource

if TYPE_CHECKING:
    from swapjudge.core.analysis import JudgeAnalysis
    from swapjudge.probes.length import LengthProbe
    from swapjudge.probes.panel import PanelResult
    from swapjudge.probes.segments import SegmentedAnalysis
    from swapjudge.ranking.bradley_terry import Comparisons
    from swapjudge.reading.pairs_file import PairItem
    from swapjudge.reading.streaming import StreamingSource

USAGE_COLUMNS = ("input_tokens", "output_tokens", "cost_usd", "latency_s")
# the verdict states (0-4: first, second, tie, no verdict, no call) of every pair the review queue lists
_STATES = np.arange(5)
_VX, _VY = np.repeat(_STATES, 5), np.tile(_STATES, 5)
_QUEUE_CODES = classify(positional(_VX), positional(_VY))
_CALL_WORDS = {0: "first", 1: "second", 2: "tie"}

LEFT_OUT_LENGTH = ("The length probe is left out: it needs every pair's answer texts or lengths, which the streaming "
                   "engine does not read; --engine memory computes it.")
LEFT_OUT_PANEL = ("The panel of {n} judges is left out: it compares the judges pair by pair, which the streaming "
                  "engine does not hold; --engine memory (or swapjudge panel) computes it.")


def needs_rows(fields: list[str], *, pairs: bool) -> bool:
    """Whether a report of a file with these fields has a section only records read whole give (see
    `left_out`): auto then reads the file in memory, so that every section is there."""
    return bool(left_out(fields, judges=1, pairs=pairs))


def left_out(fields: list[str], *, judges: int, pairs: bool) -> tuple[str, ...]:
    """The sentences saying which sections a streamed report leaves out, for a file with these fields."""
    lengths = pairs or any(f in fields for f in ("first_text", "second_text")) or all(c in fields
                                                                                    for c in LENGTH_COLUMNS)
    return tuple(s for s, missing in ((LEFT_OUT_LENGTH, lengths), (LEFT_OUT_PANEL.format(n=judges), judges >= 2))
                 if missing)


def streamed_provenance(reduced: StreamingSource, fields: list[str]) -> dict[str, Any]:
    """`workflows.sources.records_provenance` for a file read by the streaming engine: the digest read in blocks,
    the usage totals and distinct prompts summed by DuckDB."""
    path = Path(reduced.path)
    with path.open("rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    totals = reduced.record_totals([c for c in USAGE_COLUMNS if c in fields],
                                   ["prompt_hash"] if "prompt_hash" in fields else [])
    out: dict[str, Any] = {"kind": "records file", "path": str(path), "sha256": digest,
                           "modified": datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="seconds"),
                           "calls": totals["calls"], "judges": sorted(j or "(unnamed)" for j in reduced.judges()),
                           "systems": totals["systems"]}
    out.update({f"total_{c}": totals[c] for c in USAGE_COLUMNS if c in totals})
    if "prompt_hash" in totals:
        out["distinct_prompts"] = totals["prompt_hash"]
    return out


def queue_outcomes(reduced: StreamingSource, judge: str | None, pair: tuple[str, str] | None) -> dict[str, int]:
    """How many pairs flipped or half-tied, by outcome (`review.queue.QUEUE_OUTCOMES`' names), over every pair."""
    out: dict[str, int] = {}
    for vx, vy, n in reduced.verdict_states(judge, pair):
        name = QUEUE_OUTCOMES.get(_QUEUE_CODES[vx * 5 + vy])
        if name is not None:
            out[name] = out.get(name, 0) + n
    return out


def queue_rows(reduced: StreamingSource, fields: list[str], limit: int, judge: str | None,
               pair: tuple[str, str] | None, items: list[PairItem] | None = None) -> pl.DataFrame:
    """The first `limit` rows of `review.queue.review_queue` in file order: the pairs from the pair table, their
    task, answers and judge replies from their own records (or, with a pairs file's `items`, its texts)."""
    states = [int(s) for s in np.flatnonzero(np.isin(_QUEUE_CODES, list(QUEUE_OUTCOMES)))]
    found = reduced.first_pairs(states, limit, judge, pair)
    kept = [c for c in ("raw", *TEXT_COLUMNS) if c in fields and (items is None or c == "raw")]
    values = reduced.record_values([o for r in found for o in (r["ord_xf"], r["ord_yf"]) if o is not None], kept)
    answers = {(it.item, name): text for it in items for name, text in it.answers.items()} if items else {}
    prompts = {it.item: it.prompt for it in items} if items else {}

    def field(row: dict[str, Any], which: str, name: str) -> Any:
        """A field of the call that showed x first (`xf`) or y first (`yf`), as a string (None: none)."""
        first, second = (row["x"], row["y"]) if which == "xf" else (row["y"], row["x"])
        if items is not None and name != "raw":
            value = (prompts.get(row["item"]) if name == "prompt" else
                     answers.get((row["item"], first if name == "first_text" else second)))
        else:
            value = values.get(row[f"ord_{which}"], {}).get(name) if row[f"ord_{which}"] is not None else None
        return None if value is None else str(value)

    def named(state: int, slot1: str, slot2: str) -> str | None:
        return {0: slot1, 1: slot2, 2: "tie"}.get(state)

    def coalesce(*values: Any) -> Any:
        return next((v for v in values if v is not None), None)

    rows = []
    for r in found:
        outcome = QUEUE_OUTCOMES[_QUEUE_CODES[r["vx"] * 5 + r["vy"]]]
        rows.append((r["judge"], r["round"], r["item"], outcome, r["x"], r["y"], r["label"],
                     _CALL_WORDS.get(r["vx"]), _CALL_WORDS.get(r["vy"]), named(r["vx"], r["x"], r["y"]),
                     named(r["vy"], r["y"], r["x"]), coalesce(field(r, "xf", "prompt"), field(r, "yf", "prompt")),
                     coalesce(field(r, "xf", "first_text"), field(r, "yf", "second_text")),
                     coalesce(field(r, "xf", "second_text"), field(r, "yf", "first_text")),
                     field(r, "xf", "raw"), field(r, "yf", "raw")))
    schema = {name: pl.Int64 if name == "round" else pl.String for name in QUEUE_FIELDS}
    return pl.DataFrame(rows, schema=schema, orient="row")


@dataclass
class StreamedCounts:
    """A report's counts from a records file reduced by the streaming engine (`ReportCounts`; opened with
    `split=False`, and with the report's segment when it is segmented): the analyses and segments from the counts,
    the rankings from the pairs counted by item and verdicts, the queue's rows (the first `queue_limit`, their
    texts from the pairs file of `pairs`, else from their own records) and its size by outcome over every pair.
    What needs every row (the length probe, the panel) is left out, with a sentence each."""

    reduced: StreamingSource
    fields: list[str]
    pairs: str | Path | None = None
    queue_limit: int = 1000
    engine: str = "streaming"

    def analyses(self, options: ReportOptions) -> tuple[list[JudgeAnalysis], SegmentedAnalysis | None]:
        from swapjudge.core.analysis import analyze_source
        from swapjudge.probes.segments import segment_analyses_of_source

        o = options
        if o.segment is None:
            return analyze_source(self.reduced, judge=o.judge, a=o.a, b=o.b, tie_policy=o.policy,
                                  min_consistency=o.gate, confidence=o.confidence), None
        segmented = segment_analyses_of_source(self.reduced, o.segment, judge=o.judge, a=o.a, b=o.b,
                                               tie_policy=o.policy, min_consistency=o.gate, confidence=o.confidence)
        return list(segmented.overall), segmented

    def judges(self, judge: str | None) -> list[str]:
        return choose_judges(self.reduced.judges(), judge)

    def comparisons(self, judge: str) -> Comparisons:
        from swapjudge.ranking.counted_battles import comparisons_of_counts

        systems = self.reduced.systems(judge)
        return comparisons_of_counts(self.reduced.pair_verdicts(judge, systems), systems, source=self.reduced.source)

    @cached_property
    def _provenance_and_items(self) -> tuple[dict[str, Any], list[PairItem] | None]:
        """The file's provenance and the pairs file's items (read once, when the queue is listed)."""
        provenance = streamed_provenance(self.reduced, self.fields)
        items = None
        if self.pairs is not None:
            from swapjudge.review.queue import load_pair_items

            items = load_pair_items(self.pairs)
            provenance["pairs_file"] = str(self.pairs)
        return provenance, items

    @property
    def source(self) -> StreamedSource:
        provenance, items = self._provenance_and_items
        return StreamedSource(self.reduced.path, provenance, tuple(self.fields), has_pair_texts=items is not None)

    def queue(self, judge: str | None, a: str | None, b: str | None) -> tuple[pl.DataFrame, dict[str, int] | None]:
        pair = (min(a, b), max(a, b)) if a is not None and b is not None else None  # the calls between a and b
        _, items = self._provenance_and_items
        rows = queue_rows(self.reduced, self.fields, self.queue_limit, judge, pair, items)
        return rows, queue_outcomes(self.reduced, judge, pair)

    def calls(self, judge: str, pair: tuple[str, str]) -> pl.DataFrame:
        return self.reduced.pair_calls(judge, pair)

    def lengths(self, analyses: Sequence[JudgeAnalysis], judges: list[str],
                options: ReportOptions) -> tuple[LengthProbe, ...]:
        return ()

    def panel(self, judges: list[str], options: ReportOptions) -> PanelResult | None:
        return None

    def left_out(self, judges: list[str]) -> tuple[str, ...]:
        return left_out(self.fields, judges=len(judges), pairs=self.pairs is not None)


def streamed_report(reduced: StreamingSource, fields: list[str], options: ReportOptions, *,
                    pairs: str | Path | None = None, human: pl.DataFrame | None = None,
                    human_source: str = "human records", queue_limit: int = 1000) -> ReportInputs:
    """`workflows.report.report_of_records` from a reduced records file (opened with `split=False`, and with
    `options.segment` when the report is segmented), under the same `options` (resolved: `ReportOptions.resolved`):
    the same builder (`report_of_counts`) over the streaming engine's counts (`StreamedCounts`), the queue's rows
    capped at `queue_limit` (its counts are over every pair). Closes `reduced`."""
    try:
        return report_of_counts(StreamedCounts(reduced, fields, pairs, queue_limit), options, human=human,
                                human_source=human_source)
    finally:
        reduced.close()
