"""Shi et al. 2024 ("Judging the Judges") verdict tables, as the authors' repository ships them.

Schema (derived from github.com/Slimshilin/Position-Bias-Analyzer at 9f8b7e8e): `verdicts_both_orders.csv`:
benchmark, judge, question_id, task, model_first,
model_second, verdict, one row per judge call; `verdict` A = the answer shown first won, B = the second, C =
tie, empty = no parsable verdict. `repetition_sample_verdicts_both_orders.csv` adds `repetition` (1..3),
which becomes the record's `round`. `MTBench__gpt-4-0613__raw_judgments.jsonl` holds the same fields as JSON
Lines plus the judge's text in `raw_judgment`, which becomes `raw`. The item is `benchmark/question_id`
(question ids repeat across benchmarks) and the judge is `benchmark/judge` (each benchmark has its own
prompt, and analysis is per judge); `benchmark`, `task` and the bare judge model (`judge_model`) are kept as
extra fields.

`per_call_consistency` reproduces the source repository's own figure, printed in its logs as "N out of M
answers are consistent": it counts judge calls, not pairs. A call with no parsed verdict is dropped (M =
parsed calls); a parsed call is consistent when its swapped twin names the same identity (or both say tie),
and also when the twin is missing or unparsed. Per pair, by contrast, only pairs with both calls parsed
count: MTBench gpt-4-0613 has 1,957 consistent of 2,400 pairs, which the log shows as 3,914 of 4,800 calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swapjudge.importers.base import FileImport, ImportResult, finish, make_record, read_csv, read_jsonl, read_paths

FORMAT = "shi2024"
REQUIRED = ("benchmark", "judge", "question_id", "model_first", "model_second", "verdict")
VERDICTS = {"A": "first", "B": "second", "C": "tie"}


def _rows(imp: FileImport) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(location, row) from the CSV tables, or from the JSON Lines file with the judge's text."""
    if imp.path.suffix.lower() in (".jsonl", ".ndjson"):
        for _line, where, obj in read_jsonl(imp):
            missing = [c for c in REQUIRED if c not in obj]
            if missing:
                imp.flag(where, "error", f"missing field {', '.join(missing)}")
                continue
            yield where, {k: ("" if v is None else v) for k, v in obj.items()}
    else:
        for _line, where, row in read_csv(imp, REQUIRED):
            yield where, row


def read_file(imp: FileImport, *, judge_name: str | None = None) -> None:
    for where, row in _rows(imp):
        round_value = 0
        if row.get("repetition") not in (None, ""):
            try:
                round_value = int(str(row["repetition"]))
            except ValueError:
                imp.flag(where, "error", f"repetition {row['repetition']!r} is not an integer")
                continue
        text = str(row["verdict"] or "").strip().upper()
        verdict = VERDICTS.get(text)
        if verdict is None:
            why = "verdict is empty (no parsable verdict)" if not text else f"verdict {text!r} is not A/B/C"
            imp.flag(where, "null_verdict", why)
        imp.add(make_record(
            item=f"{row['benchmark']}/{row['question_id']}", first=row["model_first"],
            second=row["model_second"], verdict=verdict,
            judge=judge_name if judge_name is not None else f"{row['benchmark']}/{row['judge']}",
            round=round_value, raw=row.get("raw_judgment") or None, benchmark=row["benchmark"],
            judge_model=row["judge"], task=row.get("task"), question_id=row["question_id"], _where=where,
        ))


def import_shi2024(paths: Sequence[Path], *, judge_name: str | None = None) -> ImportResult:
    """Presentation records (one per CSV row) from the Shi et al. 2024 verdict tables."""
    return finish(read_paths(paths, FORMAT, read_file, judge_name=judge_name))


@dataclass(frozen=True)
class PerCallConsistency:
    """The source repository's per-call consistency for one (benchmark, judge, round)."""

    benchmark: str
    judge: str
    round: int
    consistent: int
    parsed_calls: int
    calls: int

    @property
    def rate(self) -> float:
        return self.consistent / self.parsed_calls if self.parsed_calls else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "judge": self.judge, "round": self.round,
                "consistent": self.consistent, "parsed_calls": self.parsed_calls, "calls": self.calls,
                "rate": self.rate}

    def log_line(self) -> str:
        """The figure as the source repository's log prints it."""
        return (f"{self.consistent} out of {self.parsed_calls} answers are consistent. "
                f"(A vs. B <-> B vs. A) The consistent rate is {self.rate * 100:.2f}%")


def _named(record: Mapping[str, Any]) -> str | None:
    """The identity (or "tie") a record's verdict names; None when there is no verdict."""
    verdict = record.get("verdict")
    if verdict == "first":
        return str(record["first"])
    if verdict == "second":
        return str(record["second"])
    return "tie" if verdict == "tie" else None


def per_call_consistency(records: Iterable[Mapping[str, Any]]) -> list[PerCallConsistency]:
    """Per-call consistency as the Shi et al. repository logs it, per (benchmark, judge, round).

    Works on any presentation records; `benchmark` is "" when the records have none. Identical-answer calls
    (first == second) are left out: they have no swapped twin.
    """
    calls: dict[tuple[str, str, int, str, str, str], str | None] = {}
    for rec in records:
        if rec["first"] == rec["second"]:
            continue
        key = (str(rec.get("benchmark") or ""), str(rec.get("judge") or ""), int(rec.get("round") or 0),
               str(rec["item"]), str(rec["first"]), str(rec["second"]))
        calls[key] = _named(rec)
    tally: dict[tuple[str, str, int], list[int]] = {}
    for (bench, judge, rnd, item, first, second), named in calls.items():
        counts = tally.setdefault((bench, judge, rnd), [0, 0, 0])
        counts[2] += 1
        if named is None:
            continue  # an unparsed call is dropped from numerator and denominator
        counts[1] += 1
        twin = calls.get((bench, judge, rnd, item, second, first))
        if twin is None or twin == named:  # a missing/unparsed twin counts as consistent, as in the logs
            counts[0] += 1
    return [PerCallConsistency(bench, judge, rnd, c[0], c[1], c[2])
            for (bench, judge, rnd), c in sorted(tally.items())]
