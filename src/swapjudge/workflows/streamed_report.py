"""`swapjudge report` from the streaming engine's counts (`reading.streaming`, DuckDB): records files larger than
memory get the report's analyses, segments, rankings and review queue with the figures of records read whole.

Each judge's analysis and the per-segment analyses come from the counts (`core.counted`, `probes.segments`), the
rankings from the pairs counted by item and verdicts (`ranking.counted_battles`), the review queue from the pair
table: its size by outcome over every pair, and only the first pairs the HTML shows, with their texts and judge
replies read back from those records alone. The human-corrected win rate reads back the calls of each judge's
compared pair alone (its people's records are small). What needs every row (the length probe's answer lengths,
the panel's pair-by-pair comparison) is left out, each with a sentence saying so and naming `--engine memory`,
which computes it.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from swapjudge.errors import InputError
from swapjudge.ranking.bradley_terry import Model, fit_ranking
from swapjudge.reading.pairs import classify
from swapjudge.reading.records import choose_judges
from swapjudge.reading.reduce import positional
from swapjudge.review.queue import QUEUE_FIELDS, QUEUE_OUTCOMES
from swapjudge.workflows.report_inputs import (
    LENGTH_COLUMNS,
    ReportInputs,
    ReportOptions,
    ReportRanking,
    human_calibrations,
)
from swapjudge.workflows.sources import TEXT_COLUMNS, StreamedSource

if TYPE_CHECKING:
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


def counted_rankings(reduced: StreamingSource, judges: list[str], passed: dict[str | None, bool], *,
                     model: Model | str, rounds: int, seed: int, confidence: float) -> tuple[ReportRanking, ...]:
    """The rankings `workflows.report.judge_ranking` fits, from the counted pairs: each judge that passed its
    gate and compared more than two systems in complete pairs. Each is fitted as soon as its counts are read, so
    one judge's comparisons are held at a time (the bootstrap's own memory is bounded)."""
    from swapjudge.ranking.counted_battles import comparisons_of_counts

    out = []
    for name in judges:
        if not passed.get(name or None, False):
            continue
        systems = reduced.systems(name)
        try:
            data = comparisons_of_counts(reduced.pair_verdicts(name, systems), systems, source=reduced.source)
        except InputError:  # no pair complete in both orders: nothing to rank
            continue
        if len(data.systems) > 2:
            out.append(ReportRanking(name or None, fit_ranking(data, model, rounds=rounds, seed=seed,
                                                               confidence=confidence)))
        del data
    return tuple(out)


def streamed_report(reduced: StreamingSource, fields: list[str], options: ReportOptions, *,
                    pairs: str | Path | None = None, human: pl.DataFrame | None = None,
                    human_source: str = "human records", queue_limit: int = 1000) -> ReportInputs:
    """`workflows.report.report_of_records` from a reduced records file (opened with `split=False`, and with
    `options.segment` when the report is segmented), under the same `options` (resolved: `ReportOptions.resolved`):
    the same analyses, segments, rankings, queue and human-corrected win rates (`human`: people's records, read
    whole), the queue's rows capped at `queue_limit` (its counts are over every pair). Closes `reduced`."""
    from swapjudge.core.analysis import analyze_source
    from swapjudge.probes.segments import segment_analyses_of_source

    judge, a, b, segment, confidence = options.judge, options.a, options.b, options.segment, options.confidence
    policy, min_consistency = options.policy, options.gate
    rank_rounds, rank_seed, rank_model = options.rank_rounds, options.rank_seed, options.rank_model

    segmented = None
    if segment is None:
        analyses = analyze_source(reduced, judge=judge, a=a, b=b, tie_policy=policy, min_consistency=min_consistency,
                                  confidence=confidence)
    else:
        segmented = segment_analyses_of_source(reduced, segment, judge=judge, a=a, b=b, tie_policy=policy,
                                               min_consistency=min_consistency, confidence=confidence)
        analyses = list(segmented.overall)
    settings = options.settings("streaming")
    judges = choose_judges(reduced.judges(), judge)
    rankings = counted_rankings(reduced, judges, {x.judge: x.gate.passed for x in analyses}, model=rank_model,
                                rounds=rank_rounds, seed=rank_seed, confidence=confidence)
    pair = (min(a, b), max(a, b)) if a is not None and b is not None else None  # the queue's calls between a and b
    items = None
    provenance = streamed_provenance(reduced, fields)
    if pairs is not None:
        from swapjudge.review.queue import load_pair_items

        items = load_pair_items(pairs)
        provenance["pairs_file"] = str(pairs)
    queue = queue_rows(reduced, fields, queue_limit, judge, pair, items)
    counts = queue_outcomes(reduced, judge, pair)
    calibrations = human_calibrations(analyses, reduced.pair_calls, human, policy=policy, confidence=confidence,
                                      human_source=human_source)
    source = StreamedSource(reduced.path, provenance, tuple(fields), has_pair_texts=items is not None)
    reduced.close()
    return ReportInputs(source, tuple(analyses), queue, settings, segmented, rankings, calibrations=calibrations,
                        queue_counts=counts, left_out=left_out(fields, judges=len(judges), pairs=pairs is not None))
