"""The store's read model: runs, calls, the reply cache and anchored-scoring history, as queries."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import Any

from swapjudge.errors import SwapjudgeError
from swapjudge.store.schema import PROVENANCE_COLUMNS, CachedReply, RunInfo, StoreFile

_CACHED_COLUMNS = tuple(CachedReply.__dataclass_fields__)  # the cache table's reply columns, by the same names


def _cell(run_id: int, call: dict[str, Any], column: str) -> str:
    return f"the {column} of run {run_id}'s call of item {call['item']!r} ({call['first']} first)"


class StoreReader(StoreFile):
    """Reads: nothing here writes."""

    def resumable_run(self, config_hash: str, pairs_digest: str) -> int | None:
        """The latest unfinished run of this exact configuration and pairs file (killed or interrupted)."""
        return self.latest_run_of(config_hash, pairs_digest, unfinished=True)

    def latest_run_of(self, config_hash: str, pairs_digest: str, *, unfinished: bool = False) -> int | None:
        """The latest run of this exact configuration and pairs file, finished or not (or unfinished only)."""
        status = " AND status != 'done'" if unfinished else ""
        row = self._db.execute(
            f"SELECT id FROM runs WHERE config_hash=? AND pairs_digest=?{status} ORDER BY id DESC LIMIT 1",
            (config_hash, pairs_digest),
        ).fetchone()
        return None if row is None else int(row[0])

    def unparsed_count(self, run_id: int) -> int:
        """Stored calls of a run whose reply had no parsable verdict (and no error); of a listwise run, no
        usable pick."""
        row = self._db.execute(
            "SELECT COUNT(*) FROM calls WHERE run_id=? AND verdict IS NULL AND error IS NULL"
            " AND (settings IS NULL OR json_extract(settings, '$.protocol') IS NOT 'listwise'"
            " OR json_extract(settings, '$.pick') IS NULL)", (run_id,)
        ).fetchone()
        return int(row[0])

    # runs' own columns, then provenance, then what the run's calls add up to
    _RUN_COLUMNS = ("id", "config_hash", "judge_hash", "judge", "config_json", "config_path", "pairs_digest", "seed",
                    "orders", "total_calls", "started_at", "ended_at", "status", *PROVENANCE_COLUMNS)
    _RUN_SELECT = (
        "SELECT " + ", ".join(f"r.{c}" for c in _RUN_COLUMNS) + ","
        " (SELECT COUNT(*) FROM calls c WHERE c.run_id=r.id AND c.error IS NULL),"
        " (SELECT COUNT(*) FROM calls c WHERE c.run_id=r.id AND c.error IS NOT NULL),"
        " (SELECT SUM(c.cost_usd) FROM calls c WHERE c.run_id=r.id AND c.source='api')"
        " FROM runs r"
    )

    def _run_from_row(self, row: Sequence[Any]) -> RunInfo:
        data = dict(zip(self._RUN_COLUMNS, row, strict=False))
        stored, failed, cost = row[len(self._RUN_COLUMNS):]
        config = self.json_value(data.pop("config_json"), f"the configuration of run {data['id']}")
        if self.read_only and self._provenance_of is not None and data["rubric_hash"] is None:
            # registered by an older swapjudge: derived here, as a writable open would have stored it
            derived = self._provenance_of(config)
            data |= {k: v for k, v in derived.items() if k in PROVENANCE_COLUMNS and data.get(k) is None}
        return RunInfo(**data, config=config, stored_calls=stored or 0, failed_calls=failed or 0, cost_usd=cost or 0.0)

    def runs(self) -> list[RunInfo]:
        return [self._run_from_row(r) for r in self._db.execute(self._RUN_SELECT + " ORDER BY r.id")]

    def run(self, run_id: int) -> RunInfo:
        row = self._db.execute(self._RUN_SELECT + " WHERE r.id=?", (run_id,)).fetchone()
        if row is None:
            raise SwapjudgeError(f"{self.path}: no run {run_id}")
        return self._run_from_row(row)

    def latest_run(self) -> RunInfo:
        row = self._db.execute(self._RUN_SELECT + " ORDER BY r.id DESC LIMIT 1").fetchone()
        if row is None:
            raise SwapjudgeError(f"{self.path}: the store holds no runs")
        return self._run_from_row(row)

    def anchor_runs(self) -> list[dict[str, Any]]:
        """Every anchored scoring run, oldest first, with its setup, flag and stored summary."""
        cur = self._db.execute(
            "SELECT id, started_at, config_path, judge, judge_hash, judge_model, rubric_hash, reference_hash,"
            " pinned_path, tolerance, flagged, result_json FROM anchor_runs ORDER BY id")
        names = [d[0] for d in cur.description]
        out = []
        for row in cur:
            rec = dict(zip(names, row, strict=True))
            rec["flagged"] = bool(rec["flagged"])
            rec["result"] = self.json_value(rec.pop("result_json"), f"the result of anchored run {rec['id']}")
            out.append(rec)
        return out

    def anchor_scores(self, run_id: int) -> dict[str, int | None]:
        """The reference items' scores of one anchored run (exemplars left out), e.g. to pin them."""
        rows = self._db.execute("SELECT item, score FROM anchor_scores WHERE run_id=? AND exemplar=0 ORDER BY item",
                                (run_id,))
        return {str(r[0]): r[1] for r in rows}

    def done_keys(self, run_id: int) -> set[tuple[int, str, str, str]]:
        """(round, item, first, second) of the calls already stored without a transport error."""
        rows = self._db.execute(
            "SELECT round, item, first, second FROM calls WHERE run_id=? AND error IS NULL", (run_id,)
        )
        return {(int(r[0]), r[1], r[2], r[3]) for r in rows}

    def cached(self, judge_hash: str, prompt_hashes: Iterable[str]) -> dict[str, CachedReply]:
        wanted = list(dict.fromkeys(prompt_hashes))
        out: dict[str, CachedReply] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT prompt_hash, {', '.join(_CACHED_COLUMNS)} FROM cache"
                f" WHERE judge_hash=? AND prompt_hash IN ({marks})",
                (judge_hash, *chunk),
            )
            for prompt, *values in rows:
                reply = dict(zip(_CACHED_COLUMNS, values, strict=True))
                where = f"the cached reply to prompt {prompt}"
                reply["probabilities"] = self.json_value(reply["probabilities"], f"{where}: probabilities")
                reply["settings"] = self.json_value(reply["settings"], f"{where}: settings") or {}
                out[prompt] = CachedReply(**reply)
        return out

    def calls(self, run_id: int) -> Iterator[dict[str, Any]]:
        cur = self._db.execute(
            "SELECT round, item, first, second, order_index, label, prompt_hash, verdict, raw, input_tokens,"
            " output_tokens, cached_input_tokens, latency_s, cost_usd, error, probabilities, settings,"
            " attempts, source, strength FROM calls WHERE run_id=? ORDER BY item, round, first, second",
            (run_id,),
        )
        names = [d[0] for d in cur.description]
        for row in cur:
            rec = dict(zip(names, row, strict=True))
            rec["probabilities"] = self.json_value(rec["probabilities"], partial(_cell, run_id, rec, "probabilities"))
            rec["settings"] = self.json_value(rec["settings"], partial(_cell, run_id, rec, "settings"))
            yield rec

    def presentation_records(self, run_id: int) -> list[dict[str, Any]]:
        """The run's calls as presentation records (docs/records.md) (labels included when the pairs carry them);
        a listwise run's as listwise records."""
        info = self.run(run_id)
        if is_listwise_run(info):
            return self.listwise_records(info)
        out: list[dict[str, Any]] = []
        for c in self.calls(run_id):
            rec: dict[str, Any] = {
                "judge": info.judge,
                "round": c["round"],
                "item": c["item"],
                "first": c["first"],
                "second": c["second"],
                "verdict": c["verdict"],
            }
            if c["label"] is not None:
                rec["label"] = c["label"]
            if c["strength"] is not None:  # graded verdicts only: ungraded runs export as they always did
                rec["strength"] = c["strength"]
            rec.update(
                {
                    "raw": c["raw"],
                    "latency_s": c["latency_s"],
                    "input_tokens": c["input_tokens"],
                    "output_tokens": c["output_tokens"],
                    "cost_usd": c["cost_usd"],
                    "prompt_hash": c["prompt_hash"],
                    "order_index": c["order_index"],
                    "source": c["source"],
                    "error": c["error"],
                }
            )
            probs = c["probabilities"] or {}
            for slot in ("first", "second", "tie"):
                if slot in probs:
                    rec[f"p_{slot}"] = probs[slot]
            out.append(rec)
        return out

    def listwise_records(self, info: RunInfo) -> list[dict[str, Any]]:
        """A listwise run's calls as listwise records (docs/records.md): the slot order stored in `first` as a
        JSON list, the pick in `settings`, the slot labels' probabilities (when the judge gave them) as
        `p_slots`, slot 1 first."""
        rotations = info.config.get("rotations")
        out: list[dict[str, Any]] = []
        for c in self.calls(info.id):
            slots = self.json_value(c["first"], partial(_cell, info.id, c, "slot order"))
            settings = c["settings"] or {}
            probs = c["probabilities"]
            out.append({
                "item": c["item"], "slots": slots, "pick": settings.get("pick"), "judge": info.judge,
                "round": c["round"], "label": c["label"], "rotation": c["order_index"], "rotations": rotations,
                "protocol": "listwise", "raw": c["raw"], "prompt_hash": c["prompt_hash"],
                "p_slots": None if not probs else [probs.get(str(k)) for k in range(1, len(slots) + 1)],
                "latency_s": c["latency_s"], "input_tokens": c["input_tokens"], "output_tokens": c["output_tokens"],
                "cost_usd": c["cost_usd"], "source": c["source"], "error": c["error"],
            })
        return out


def is_listwise_run(info: RunInfo) -> bool:
    """Whether a stored run is a best-of-N (`protocol: listwise`) run."""
    return isinstance(info.config, dict) and info.config.get("protocol") == "listwise"
