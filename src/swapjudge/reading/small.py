"""A small JSON Lines file of presentation records, read and reduced to counts with the standard library: what
`swapjudge analyze` needs of it, without loading polars (the in-memory reduction, `reading.reduce.FrameSource`)
or DuckDB (`reading.streaming`), so the command starts fast. The counts are the ones `FrameSource` computes from
the same records (tests/reading/test_small.py holds them equal), so every figure is the same to the last bit.

Only the plain case is read here: a clean file of pairwise records without graded strengths (`strength`),
verdict probabilities, an adaptive run's threshold or a live review's re-show share. For anything else (a
problem to report, one of those fields, a file over `SMALL_BYTES`) `small_source` gives None and the caller reads
the file the usual way (`reading.records.read_records`), which names a problem's file, line and field.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swapjudge.errors import InputError
from swapjudge.reading.codes import FIRST, SECOND, TIE, VERDICT_CODES
from swapjudge.reading.reduce import (
    ABSENT,
    LABEL_NONE,
    LABEL_TIE,
    LABEL_X,
    LABEL_Y,
    NULL,
    TIE_LABEL,
    Kinds,
    PairCounts,
    pair_type,
)
from swapjudge.reading.rows import (
    KEY,
    PROBABILITIES,
    REGISTERED_A,
    REGISTERED_ADAPTIVE,
    REGISTERED_B,
    REGISTERED_POLICY,
    REGISTERED_RESHOW,
    STRENGTH,
    parse_row,
)
from swapjudge.reading.textfiles import decode_text, is_stdio, json_lines, read_bytes

# the largest file read here: about 12,000 records, where reading them in Python (0.19 s of CPU, measured on
# bench/scale_records.py's records) costs about what importing polars and reading them with it does
SMALL_BYTES = 1 << 20
# the suffixes of a JSON Lines file (any other is CSV, Parquet, or read the usual way)
SMALL_SUFFIXES = (".jsonl", ".ndjson", ".json")
# fields whose non-null values only the usual reader handles (graded levels, debiased verdicts, an adaptive run's
# or a live review's single-order pairs)
DEFERRED = (STRENGTH, *PROBABILITIES, REGISTERED_ADAPTIVE, REGISTERED_RESHOW)
# provenance read from these records: text only (another JSON type is the usual reader's to judge)
REGISTERED_TEXT = (REGISTERED_POLICY, REGISTERED_A, REGISTERED_B)


@dataclass(frozen=True)
class SmallPair:
    """One pair (judge, round, item, x < y): the verdict state of each order (`reading.reduce`'s FIRST, SECOND,
    TIE, NULL, ABSENT) and how its label relates to it (LABEL_*)."""

    judge: str
    round: int
    item: str
    x: str
    y: str
    vx: int
    vy: int
    label: int

    @property
    def ptype(self) -> int:
        return int(pair_type(self.vx, self.vy, self.label, 0))


@dataclass(frozen=True)
class SmallSource:
    """The pairs and identical-answer calls of a small records file as a `reading.reduce.PairSource` (no
    segments: only `analyze` reads it)."""

    source: str
    pairs: tuple[SmallPair, ...]
    probes: tuple[tuple[str, str, int], ...]  # (judge, system, verdict state) of each identical-answer call
    judge_names: tuple[str, ...]
    provenance: dict[str, list[str]] = field(default_factory=dict)

    def judges(self) -> list[str]:
        return list(self.judge_names)

    def systems(self, judge: str) -> list[str]:
        return sorted({p.x for p in self.pairs if p.judge == judge} | {p.y for p in self.pairs if p.judge == judge})

    def counts(self, judge: str, pair: tuple[str, str] | None = None, *,
               segment: str | None = None) -> PairCounts:
        if segment is not None:
            raise ValueError("a small records file is read without segments")
        pairs = [p for p in self.pairs if p.judge == judge]
        probes = [state for j, system, state in self.probes if j == judge]
        if pair is not None:
            lo, hi = sorted(pair)
            pairs = [p for p in pairs if p.x == lo and p.y == hi]
            probes = [state for j, system, state in self.probes if j == judge and system in pair]
        by_pair = Counter((p.x, p.y, p.ptype) for p in pairs)
        by_item: dict[str, list[int]] = {}
        for p in pairs:
            by_item.setdefault(p.item, []).append(p.ptype)
        kinds = Counter(tuple(sorted(types)) for types in by_item.values())
        return PairCounts(
            pairs=tuple((x, y, t, n) for (x, y, t), n in sorted(by_pair.items())),
            kinds=Kinds.from_lists([list(k) for k in kinds], list(kinds.values())) if kinds else Kinds.empty(),
            rounds=len({p.round for p in pairs}),
            probes=(probes.count(FIRST), probes.count(SECOND), probes.count(TIE), probes.count(NULL)))

    def segment_values(self, judge: str | None = None) -> list[str]:
        return []

    def thresholds(self, judge: str) -> list[float]:
        return []

    def registered(self, column: str) -> list[str]:
        return list(self.provenance.get(column, []))


def small_source(path: str | Path, *, allow_unpaired: bool = False) -> SmallSource | None:
    """The counts of a small, clean JSON Lines file of pairwise records; None when the file is larger than
    SMALL_BYTES, is stdin or not JSON Lines, has a problem, or carries a field read only the usual way."""
    if not isinstance(path, str | Path) or is_stdio(path):
        return None
    path = Path(path)
    if path.suffix.lower() not in SMALL_SUFFIXES:
        return None
    try:
        if path.stat().st_size > SMALL_BYTES:
            return None
        source = str(path)
        rows = _rows(decode_text(read_bytes(path), source), source)
    except (InputError, OSError):
        return None  # the usual reader says what is wrong, and where
    return None if rows is None else _paired(rows, source, allow_unpaired)


def _rows(text: str, source: str) -> list[dict[str, Any]] | None:
    """Every record checked as the line-by-line reader checks it (an InputError for a problem); None for a record
    that is not an object or carries a deferred field."""
    rows = []
    for number, obj in json_lines(text, source):
        if not isinstance(obj, dict) or any(obj.get(name) is not None for name in DEFERRED):
            return None
        if any(not isinstance(obj.get(name), str | None) for name in REGISTERED_TEXT):
            return None
        rows.append(parse_row(obj, source, number))
    return rows or None


def _paired(rows: list[dict[str, Any]], source: str, allow_unpaired: bool) -> SmallSource | None:
    """The records paired (as `reading.reduce.compact_pairs` pairs them); None for a repeated call, or a pair
    judged in one order only where that is an error."""
    if len({tuple(row[k] for k in KEY) for row in rows}) != len(rows):
        return None  # a call twice: the usual reader names both lines
    calls: dict[tuple[str, int, str, str, str], list[dict[str, Any]]] = {}
    probes = []
    for row in rows:
        first, second = row["first"], row["second"]
        state = NULL if row["verdict"] is None else VERDICT_CODES[row["verdict"]]
        if first == second:
            probes.append((row["judge"], first, state))
            continue
        x, y = min(first, second), max(first, second)
        calls.setdefault((row["judge"], row["round"], row["item"], x, y), []).append({**row, "_state": state})
    pairs = []
    for (judge, round_, item, x, y), found in calls.items():
        vx = next((c["_state"] for c in found if c["first"] == x), ABSENT)
        vy = next((c["_state"] for c in found if c["first"] == y), ABSENT)
        label = next((c["label"] for c in found if c["label"] is not None), None)
        code = (LABEL_X if label == x else LABEL_Y if label == y else LABEL_TIE if label == TIE_LABEL
                else LABEL_NONE)
        pairs.append(SmallPair(judge, round_, item, x, y, vx, vy, code))
    lonely = sum(1 for found in calls.values() if len(found) == 1)
    if lonely and not allow_unpaired and lonely < len(calls):
        return None  # a pair judged in one order only, among pairs judged in both: the usual reader says which
    provenance = {name: sorted({row[name] for row in rows if row.get(name) is not None}) for name in REGISTERED_TEXT}
    return SmallSource(source, tuple(pairs), tuple(probes), tuple(sorted({row["judge"] for row in rows})),
                       provenance)
