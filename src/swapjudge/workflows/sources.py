"""What a report (and the review queue) reads: a records file or a stored run, with its provenance.

Records come from anything `reading.records.read_records` takes (a path, stdin, a list of dicts, a DataFrame). A
report's source is a records file or a run store (SQLite), with the facts about where its records came from
(`ReportSource`): a records file gives its digest and date, a stored run its configuration, hash, judge, counts,
cost and dates.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from swapjudge.errors import InputError
from swapjudge.reading.records import RecordSet, read_records
from swapjudge.reading.textfiles import is_stdio, read_stdin
from swapjudge.store.connection import SQLITE_MAGIC, is_sqlite_file

# Optional per-call text columns: the answers shown in slot 1 and slot 2, and the task. A records file may carry
# them directly; otherwise `review.attach_texts` adds them from a pairs file.
TEXT_COLUMNS = ("first_text", "second_text", "prompt")


@dataclass(frozen=True)
class ReportSource:
    """Records to report on and where they came from. `provenance` is a flat-ish dict of facts to show (keys
    such as `config`, `config_hash`, `judge`, `prompt`, `calls`, `cost_usd`, `started_at`); empty when unknown."""

    records: RecordSet
    name: str
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def frame(self) -> pl.DataFrame:
        return self.records.frame

    @property
    def has_texts(self) -> bool:
        return "first_text" in self.frame.columns and "second_text" in self.frame.columns

    @property
    def has_raw(self) -> bool:
        return "raw" in self.frame.columns


@dataclass(frozen=True)
class StreamedSource:
    """A records file a report read with the streaming engine (`reading.streaming`): its name, provenance and
    fields, never its rows. `has_pair_texts`: answer texts come from a pairs file."""

    name: str
    provenance: dict[str, Any]
    fields: tuple[str, ...]
    has_pair_texts: bool = False

    @property
    def has_texts(self) -> bool:
        return self.has_pair_texts or ("first_text" in self.fields and "second_text" in self.fields)

    @property
    def has_raw(self) -> bool:
        return "raw" in self.fields


def is_run_store(path: Path) -> bool:
    """Whether the file is a run store (an SQLite database): `store.connection.is_sqlite_file`."""
    return is_sqlite_file(path)


def load_source(path: str | Path, *, allow_unpaired: bool = False, run: int | None = None) -> ReportSource:
    """A records file (JSONL or CSV) or a run store (SQLite); `run` picks a stored run (default: the latest)."""
    path = Path(path)
    if is_stdio(path):  # records piped in; a run store is a database file and cannot come through a pipe
        if read_stdin().startswith(SQLITE_MAGIC):
            raise InputError("a run store cannot be read from stdin: give its path", path="<stdin>")
        records = read_records(path, allow_unpaired=allow_unpaired)
        return ReportSource(records, "<stdin>", records_provenance(records.frame))
    if not path.exists():
        raise InputError("no such file", path=str(path))
    if is_sqlite_file(path):  # anything unreadable is named by the records reader below
        return _store_source(path, run, allow_unpaired)
    if run is not None:
        raise InputError("{run} applies to a run store, and this is a records file", path=str(path),
                         arguments=("run",))
    records = read_records(path, allow_unpaired=allow_unpaired)
    return ReportSource(records, str(path), records_provenance(records.frame, path))


def records_provenance(frame: pl.DataFrame, path: Path | None = None) -> dict[str, Any]:
    """Facts about a records file: its digest and date, calls, judges, systems, and the summed usage columns
    when the records carry them (tokens, cost, latency)."""
    out: dict[str, Any] = {"kind": "records file"}
    if path is not None:
        out["path"] = str(path)
        out["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        out["modified"] = datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="seconds")
    out["calls"] = frame.height
    out["judges"] = sorted(j or "(unnamed)" for j in frame.get_column("judge").unique().to_list())
    systems = set(frame.get_column("first").unique().to_list()) | set(frame.get_column("second").unique().to_list())
    out["systems"] = len(systems)
    for column in ("input_tokens", "output_tokens", "cost_usd", "latency_s"):
        if column in frame.columns and frame.schema[column].is_numeric():
            total = frame.get_column(column).sum()
            out[f"total_{column}"] = total
    if "prompt_hash" in frame.columns:
        out["distinct_prompts"] = frame.get_column("prompt_hash").n_unique()
    return out


def _store_source(path: Path, run: int | None, allow_unpaired: bool) -> ReportSource:
    """A run from the runner's store, with the run's configuration, hash, counts, cost and dates."""
    from swapjudge.reading.records import records_from_dicts
    from swapjudge.runner.provenance import open_store
    from swapjudge.store.reader import is_listwise_run

    with open_store(path, read_only=True) as store:
        info = store.run(run) if run is not None else store.latest_run()
        if is_listwise_run(info):
            raise InputError(f"run {info.id} is a best-of-N (listwise) run: `swapjudge report` and `export` read it; "
                             "pairwise commands do not", path=str(path))
        rows = store.presentation_records(info.id)
    records = records_from_dicts(rows, source=f"{path} run {info.id}", allow_unpaired=allow_unpaired)
    provenance: dict[str, Any] = {"kind": "run store", "path": str(path), **info.to_dict()}
    return ReportSource(records, f"{path} (run {info.id})", provenance)


def run_pairs_file(provenance: dict[str, Any]) -> tuple[Path | None, str | None]:
    """The pairs file a stored run judged, when it is still there unchanged (its sha256 equals the digest stored
    with the run), so the report can show the answer texts without `--pairs`. Returns (path, None), or
    (None, why not) for a stored run whose file moved or changed, or (None, None) for anything else."""
    config, config_path = provenance.get("config"), provenance.get("config_path")
    pairs = config.get("pairs") if isinstance(config, dict) else None
    if not isinstance(pairs, dict) or not isinstance(pairs.get("path"), str) or not config_path:
        return None, None
    path = Path(pairs["path"])
    if not path.is_absolute():
        path = Path(config_path).parent / path  # relative paths are relative to the configuration file
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None, f"the run's pairs file {path} is not there (give --pairs to show the answers)"
    if digest != provenance.get("pairs_digest"):
        return None, f"the run's pairs file {path} changed since the run (give --pairs to show answers anyway)"
    return path, None


def report_source(path: str | Path, *, pairs: str | Path | None = None, run: int | None = None,
                  allow_unpaired: bool = False) -> ReportSource:
    """A report's source with the answer texts attached when they can be had: from `pairs` (a pairs file), else
    for a stored run from its own pairs file when it is unchanged since the run (see `run_pairs_file`)."""
    from swapjudge.review.queue import attach_texts, load_pair_items

    source = load_source(path, run=run, allow_unpaired=allow_unpaired)
    provenance = dict(source.provenance)
    if pairs is None and not source.has_texts:
        pairs, why_not = run_pairs_file(provenance)
        if why_not is not None:
            provenance["pairs_file"] = why_not
    if pairs is None:
        return ReportSource(source.records, source.name, provenance)
    records = replace(source.records, frame=attach_texts(source.frame, load_pair_items(pairs)))
    return ReportSource(records, source.name, {**provenance, "pairs_file": str(pairs)})
