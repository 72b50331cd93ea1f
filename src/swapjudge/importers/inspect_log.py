"""inspect_ai eval logs (`.eval` or `.json`) written by an eval scored with swapjudge's `swap_judge` scorer.

Schema: UKGovernmentBEIS/inspect_ai `inspect_ai/log/_log.py` (`EvalLog`, `EvalSample`), read with inspect's own
`read_eval_log` (needs `pip install swapjudge[inspect]`); the per-call fields come from the scorer's
`Score.metadata["swapjudge"]` (src/swapjudge/integrations/inspect.py). Each scored sample gives two records:
item = the sample id, first/second = the evaluated model's name exactly as the log records it and "baseline",
judge = the judge model, label when the sample's metadata had one, round = the epoch - 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from swapjudge.errors import InputError
from swapjudge.importers.base import FileImport, ImportResult, finish, make_record, read_paths

FORMAT = "inspect"
METADATA_KEY = "swapjudge"  # the scorer's metadata key (integrations/inspect.py)


def _read_log(path: Path) -> Any:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise InputError("reading inspect logs needs inspect-ai: pip install 'swapjudge[inspect]'",
                         path=str(path)) from None
    if path.suffix.lower() not in (".eval", ".json"):
        raise InputError("an inspect log ends in .eval or .json", path=str(path))
    try:
        return read_eval_log(str(path))
    except Exception as err:  # inspect raises several kinds for a file that is not a log
        raise InputError(f"not a readable inspect eval log ({type(err).__name__}: "
                         f"{str(err).splitlines()[0] if str(err) else ''})", path=str(path)) from None


def _swap_scores(sample: Any) -> list[tuple[str, dict[str, Any]]]:
    """(scorer name, swapjudge metadata) for each score of the sample that swap_judge wrote."""
    out = []
    for name, score in (sample.scores or {}).items():
        meta = (score.metadata or {}).get(METADATA_KEY)
        if isinstance(meta, dict) and isinstance(meta.get("calls"), list):
            out.append((name, meta))
    return out


def read_file(imp: FileImport, *, judge_name: str | None = None) -> None:
    log = _read_log(imp.path)
    if log.status != "success":
        imp.notes.append(f"the eval's status is {log.status!r}: only the samples it logged are imported")
    for sample in log.samples or []:
        imp.rows += 1
        where = f"{imp.path}[sample {sample.id} epoch {sample.epoch}]"
        scored = _swap_scores(sample)
        if not scored:
            reason = f"sample error: {sample.error.message.splitlines()[0]}" if sample.error else \
                "no score written by swapjudge's swap_judge scorer"
            imp.flag(where, "skipped", reason)
            continue
        for scorer_name, meta in scored:
            calls = meta["calls"]
            if len(calls) != 2:
                imp.flag(where, "error", f"scorer {scorer_name}: {len(calls)} calls, expected 2")
                continue
            for call in calls:
                verdict = call.get("verdict")
                if verdict not in ("first", "second", "tie", None):
                    imp.flag(where, "error", f"scorer {scorer_name}: unknown verdict {verdict!r}")
                    continue
                if verdict is None:
                    imp.flag(where, "null_verdict", f"{call.get('first')} first: no parsable verdict")
                imp.add(make_record(
                    item=sample.id, first=str(call["first"]), second=str(call["second"]), verdict=verdict,
                    judge=judge_name if judge_name is not None else str(meta.get("judge") or ""),
                    round=int(sample.epoch) - 1, label=meta.get("label"), raw=call.get("raw"),
                    scorer=scorer_name, _where=where,
                ))


def import_inspect(paths: Sequence[Path], *, judge_name: str | None = None) -> ImportResult:
    """Presentation records (two per scored sample) from inspect eval logs."""
    return finish(read_paths(paths, FORMAT, read_file, judge_name=judge_name))
