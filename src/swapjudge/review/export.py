"""A review store's votes as presentation records (docs/records.md), or for Label Studio and LangSmith.

One record per live vote: judge `human:<reviewer>`, `first`/`second` the systems shown as Response 1 and
Response 2, `verdict` first / second / tie ("both bad" is a tie with `choice` both_bad: no preference between
the two, as the arena vote page counts it). `origin` says whether the pair came from the random sample or the
judge's priority queue, `reshow` whether this presentation was the swapped re-show of an earlier one. A pair
and its re-show share the round, so `analyze` pairs them into one comparison in both orders: the reviewer's
swap-consistency; a pair shown once is a single-order call by design (`registered_reshow` says so, and `analyze`
counts it as incomplete). `pi` is the probability the review's sampling design drew the pair's item (null for a
queue pair it did not draw), `design` that design (simple_random, all, uniform or active) and `seed` the
review's seed: `calibrate` weights each label by 1/pi.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from swapjudge.reading.textfiles import write_atomic
from swapjudge.review.votes import live_votes

HUMAN_PREFIX = "human:"
VERDICTS = {"1": "first", "2": "second", "tie": "tie", "both_bad": "tie"}
EXPORT_FORMATS = ("records", "label-studio", "langsmith")
ORIGINS = ("all", "sample", "queue")

# the Label Studio labeling configuration the exported tasks fit (docs/review.md); no system name is shown
LABEL_STUDIO_CONFIG = """<View>
  <Header value="$prompt"/>
  <Pairwise name="preference" toName="response_1,response_2"/>
  <Text name="response_1" value="$response_1"/>
  <Text name="response_2" value="$response_2"/>
  <Choices name="no_preference" toName="response_1" choice="single">
    <Choice value="tie"/>
    <Choice value="both_bad"/>
  </Choices>
</View>"""


def reviewer_judge(reviewer: str) -> str:
    return HUMAN_PREFIX + reviewer


def _iso(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, tz=dt.UTC).isoformat(timespec="milliseconds")


def vote_record(row: Mapping[str, Any]) -> dict[str, Any]:
    """One live vote (a row of `review.votes.live_votes`) as a presentation record."""
    return {
        "item": row["item"], "first": row["first"], "second": row["second"],
        "verdict": VERDICTS[row["choice"]], "judge": reviewer_judge(row["reviewer"]), "round": 0,
        "label": row["label"], "choice": row["choice"], "origin": row["origin"],
        "reshow": row["reshow_of"] is not None, "reviewer": row["reviewer"], "task": row["task"],
        "reshow_of": row["reshow_of"], "position": row["position"], "seconds": row["seconds"],
        "voted_at": _iso(float(row["voted_at"])),
        # a pair shown once is single-order by design: the analysis counts it incomplete, not as an error
        "registered_reshow": row.get("reshow_share"),
        "pi": row.get("pi"), "design": row.get("design"), "seed": row.get("seed"),
    }


def review_records(store: str | Path, *, origin: str = "all") -> list[dict[str, Any]]:
    """The store's live votes as presentation records, in the order they were cast (`origin`: all, sample or
    queue)."""
    if origin not in ORIGINS:
        raise ValueError(f"origin must be one of {', '.join(ORIGINS)}, got {origin!r}")
    rows = live_votes(store)
    return [vote_record(r) for r in rows if origin == "all" or r["origin"] == origin]


def label_studio_tasks(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Label Studio tasks, one per vote, each with the vote as a completed annotation (Pairwise `selected`
    left = Response 1, right = Response 2; a tie or both bad in the `no_preference` Choices). The identities
    ride in `data.first_id` / `data.second_id`, which the labeling configuration does not show."""
    tasks = []
    for row in rows:
        choice = row["choice"]
        if choice in ("1", "2"):
            result: dict[str, Any] = {"from_name": "preference", "to_name": "response_1,response_2",
                                      "type": "pairwise", "value": {"selected": "left" if choice == "1" else "right"}}
        else:
            result = {"from_name": "no_preference", "to_name": "response_1", "type": "choices",
                      "value": {"choices": [choice]}}
        tasks.append({
            "data": {"item": row["item"], "prompt": row["prompt"], "response_1": _text(row, row["first"]),
                     "response_2": _text(row, row["second"]), "first_id": row["first"],
                     "second_id": row["second"], "origin": row["origin"], "reshow": row["reshow_of"] is not None,
                     "reviewer": row["reviewer"], "swapjudge_task": row["task"]},
            "annotations": [{"result": [result], "was_cancelled": False, "lead_time": row["seconds"],
                             "created_at": _iso(float(row["voted_at"])),
                             "completed_by": {"email": row["reviewer"]}}],
        })
    return tasks


def langsmith_examples(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """LangSmith dataset examples (the `inputs` / `outputs` / `metadata` of `Client.create_examples`), one per
    vote; the preference is a `ranked_preference` score per system (1 the preferred, 0 the other, 0.5 each for
    a tie or both bad), the key and shape LangSmith's pairwise evaluators write."""
    out = []
    for row in rows:
        choice, first, second = row["choice"], row["first"], row["second"]
        scores = ({first: 1.0, second: 0.0} if choice == "1" else {first: 0.0, second: 1.0} if choice == "2"
                  else {first: 0.5, second: 0.5})
        out.append({
            "inputs": {"prompt": row["prompt"]},
            "outputs": {"response_1": _text(row, first), "response_2": _text(row, second),
                        "preference": {"1": "response_1", "2": "response_2"}.get(choice, choice)},
            "metadata": {"item": row["item"], "first": first, "second": second,
                         "reviewer": reviewer_judge(row["reviewer"]), "origin": row["origin"],
                         "reshow": row["reshow_of"] is not None, "seconds": row["seconds"],
                         "voted_at": _iso(float(row["voted_at"])), "swapjudge_task": row["task"]},
            "feedback": {"key": "ranked_preference", "scores": scores},
        })
    return out


def _text(row: Mapping[str, Any], system: str) -> str:
    return str(row["text_x"] if system == row["x"] else row["text_y"])


def export_review(store: str | Path, output: str | Path, *, format: str = "records", origin: str = "all") -> int:
    """Write the store's live votes to `output` (atomically) in `format`; the number of votes written.
    records: JSON Lines (CSV when the name ends in .csv); label-studio: a JSON array of tasks; langsmith: JSON
    Lines of examples."""
    from swapjudge.review.queue import write_table

    if format not in EXPORT_FORMATS:
        raise ValueError(f"format must be one of {', '.join(EXPORT_FORMATS)}, got {format!r}")
    if origin not in ORIGINS:
        raise ValueError(f"origin must be one of {', '.join(ORIGINS)}, got {origin!r}")
    rows = [r for r in live_votes(store) if origin == "all" or r["origin"] == origin]
    if format == "records":
        write_table([vote_record(r) for r in rows], output, RECORD_FIELDS)
    elif format == "label-studio":
        write_atomic(Path(output), json.dumps(label_studio_tasks(rows), ensure_ascii=False, indent=1) + "\n")
    else:
        write_atomic(Path(output), _jsonl(langsmith_examples(rows)))
    return len(rows)


RECORD_FIELDS = ("item", "first", "second", "verdict", "judge", "round", "label", "choice", "origin", "reshow",
                 "reviewer", "task", "reshow_of", "position", "seconds", "voted_at", "registered_reshow",
                 "pi", "design", "seed")


def _jsonl(rows: Sequence[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
