"""Best-of-N judgments of other harnesses as listwise records (docs/records.md): `swapjudge import FORMAT`.

- `promptfoo-select-best`: promptfoo's select-best over three or more outputs (`importers.promptfoo_listwise`):
  the order shown is recorded, but it is one fixed order for every test (one rotation).
- `deepeval-arena`: DeepEval ArenaGEval results, as `deepeval.compare` posts them (an experiment: one test run
  per contestant, `testRuns[].testCases[]` with `order`, `actualOutput` and `metricsData[]`, score 1 for the
  winner). ArenaGEval shows the contestants in an order it does not save (recent releases shuffle them under
  masked names), so the records say `order_shown: false`.
- `langwatch`: LangWatch evaluation results (the `log_results` body of `langwatch.evaluation`: `dataset[]` and
  `evaluations[]` with `index`, `name`, `status`, `label`, `inputs`/`data`). LangWatch has no built-in best-of-N
  evaluator: a best-of-N row is an evaluation whose `label` names the chosen candidate and whose inputs list the
  candidates; the order shown is recorded only when the inputs give it as `slots` (a list, slot 1 first).

A file that does not record the order shown is said so in one line, and its records are single-rotation data
the slot audit cannot measure (`order_shown: false`: `analyze` gives no slot figure and says why).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from swapjudge.errors import InputError
from swapjudge.importers.base import FileImport, ImportResult, index_location, open_input
from swapjudge.reading.listwise import MIN_SLOTS

ORDER_NOT_RECORDED = ("{fmt} does not record the order in which the judge saw the answers: the records are "
                      "single-rotation data with `order_shown: false`, and no slot figure can be measured")


def _result(imports: Sequence[FileImport]) -> ImportResult:
    records = [rec for imp in imports for rec in imp.records]
    return ImportResult(records=tuple(records), reports=tuple(imp.finish() for imp in imports))


def _load_json(imp: FileImport) -> Any:
    try:
        with open_input(imp.path) as handle:
            text = handle.read()
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", path=str(imp.path)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    rows = []  # JSON Lines: one document a line (several posted batches of one run)
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise InputError(f"not valid JSON ({err.msg})", path=str(imp.path), line=number) from None
    return rows


# ---- promptfoo select-best -------------------------------------------------------------------------------------


def import_promptfoo_select_best(paths: Sequence[Path], *, judge_name: str | None = None) -> ImportResult:
    """promptfoo select-best tests over three or more outputs, one listwise record each (tests over two outputs
    are pairs: `import promptfoo`)."""
    from swapjudge.importers.promptfoo_listwise import SINGLE_ROTATION, import_promptfoo_listwise

    imports = []
    for path in paths:
        imp = FileImport(Path(path), "promptfoo-select-best")
        found = import_promptfoo_listwise([Path(path)], judge_name=judge_name)
        imp.rows = len(found.records) + len(found.skipped)
        for where, why in found.skipped:
            imp.flag(where, "skipped", why)
        for record in found.records:
            if record["pick"] is None:
                imp.flag(f"{path}[test {record['test_index']}]", "null_verdict",
                         "the grader selected no output, or several, or its reply was unusable: pick null")
            imp.add(dict(record))
        if found.records:
            imp.notes.append(SINGLE_ROTATION)
        imports.append(imp)
    return _result(imports)


# ---- DeepEval ArenaGEval -------------------------------------------------------------------------------------


def _test_runs(data: Any, imp: FileImport) -> list[dict[str, Any]]:
    """The test runs of a DeepEval file: an experiment ({"testRuns": [...]}), a list of test runs, or one."""
    if isinstance(data, dict) and isinstance(data.get("testRuns"), list):
        runs = data["testRuns"]
    elif isinstance(data, list):
        runs = data
    elif isinstance(data, dict) and isinstance(data.get("testCases"), list):
        runs = [data]
    else:
        raise InputError("not a DeepEval arena result: expected an experiment with `testRuns`, a list of test "
                         "runs, or a test run with `testCases`", path=str(imp.path))
    return [r for r in runs if isinstance(r, dict)]


def import_deepeval_arena(paths: Sequence[Path], *, judge_name: str | None = None) -> ImportResult:
    """DeepEval ArenaGEval results: one listwise record per arena test case with three or more contestants. The
    contestants are listed by name (`order_shown: false`: DeepEval does not save the order its judge saw), the
    winner is the contestant scored 1, and a test case whose metric errored has a null pick."""
    imports = []
    for path in paths:
        imp = FileImport(Path(path), "deepeval-arena")
        cases: dict[tuple[str, Any], list[tuple[str, dict[str, Any], dict[str, Any]]]] = defaultdict(list)
        for run_index, run in enumerate(_test_runs(_load_json(imp), imp)):
            name = run.get("identifier")
            if not isinstance(name, str) or not name:
                imp.flag(index_location(imp.path, run_index), "error",
                         "a test run without `identifier` (the contestant's name)")
                continue
            for case in run.get("testCases") or []:
                if not isinstance(case, dict):
                    continue
                for metric in case.get("metricsData") or []:
                    if isinstance(metric, dict) and "Arena" in str(metric.get("name", "")):
                        key = (str(metric.get("name")), case.get("order", case.get("name")))
                        cases[key].append((name, case, metric))
        for (metric_name, order), entries in cases.items():
            imp.rows += 1
            where = f"{path}[test case {order}]"
            names = sorted({n for n, _c, _m in entries})
            if len(names) < MIN_SLOTS:
                imp.flag(where, "skipped", f"{len(names)} contestants: a best-of-N call shows at least {MIN_SLOTS} "
                         "(a pair whose order shown DeepEval does not record)")
                continue
            if len(names) != len(entries):
                imp.flag(where, "error", "a contestant appears twice in one arena test case")
                continue
            winners = [n for n, _c, m in entries if m.get("score") == 1 and not m.get("error")]
            errors = [str(m["error"]) for _n, _c, m in entries if m.get("error")]
            pick = names.index(winners[0]) + 1 if len(winners) == 1 else None
            if pick is None:
                imp.flag(where, "null_verdict", f"metric error: {errors[0]}" if errors else
                         f"{len(winners)} contestants scored 1: no single winner")
            _n, case, metric = entries[0]
            model = metric.get("evaluationModel")
            imp.add({
                "item": str(case.get("name") or f"test_case_{order}"), "slots": names, "pick": pick,
                "judge": judge_name if judge_name is not None else (f"{metric_name}/{model}" if model
                                                                    else metric_name),
                "order_shown": False, "raw": metric.get("reason"), "input": case.get("input"),
                "source_format": "deepeval ArenaGEval",
            })
        if imp.records:
            imp.notes.append(ORDER_NOT_RECORDED.format(fmt="DeepEval ArenaGEval"))
        imports.append(imp)
    return _result(imports)


# ---- LangWatch -----------------------------------------------------------------------------------------------

_CANDIDATE_KEYS = ("slots", "candidates", "contestants", "outputs")


def _batches(data: Any, imp: FileImport) -> list[dict[str, Any]]:
    batches = data if isinstance(data, list) else [data]
    if not all(isinstance(b, dict) and isinstance(b.get("evaluations"), list) for b in batches):
        raise InputError("not a LangWatch evaluation result: expected the `log_results` body (an object with "
                         "`evaluations`), or a list or JSON Lines of them", path=str(imp.path))
    return batches


def _candidates(inputs: dict[str, Any]) -> tuple[list[str] | None, bool]:
    """The candidates of a best-of-N evaluation's inputs and whether their order is the order shown (`slots`)."""
    for key in _CANDIDATE_KEYS:
        value = inputs.get(key)
        if isinstance(value, dict):
            value = list(value)
        if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
            return (list(value) if key == "slots" else sorted(value)), key == "slots"
    return None, False


def import_langwatch(paths: Sequence[Path], *, judge_name: str | None = None) -> ImportResult:
    """LangWatch evaluation results: one listwise record per evaluation whose inputs list three or more
    candidates (`slots`, the order shown; or `candidates`, `contestants`, `outputs`, order not recorded) and
    whose `label` names the one chosen. The item is the dataset entry's `id` or `item` at the evaluation's
    `index` (else the index); the judge is the evaluation's name."""
    imports = []
    for path in paths:
        imp = FileImport(Path(path), "langwatch")
        unordered = 0
        for batch in _batches(_load_json(imp), imp):
            entries = {e.get("index"): e.get("entry") for e in batch.get("dataset") or [] if isinstance(e, dict)}
            for position, evaluation in enumerate(batch["evaluations"]):
                imp.rows += 1
                where = f"{path}[evaluations {position}]"
                if not isinstance(evaluation, dict):
                    imp.flag(where, "error", "an evaluation must be an object")
                    continue
                inputs = evaluation.get("inputs", evaluation.get("data")) or {}
                slots, ordered = _candidates(inputs if isinstance(inputs, dict) else {})
                if slots is None or len(slots) < MIN_SLOTS:
                    imp.flag(where, "skipped", "not a best-of-N evaluation: its inputs list no three or more "
                             "candidates (`slots`, `candidates`, `contestants` or `outputs`)")
                    continue
                if len(set(slots)) != len(slots):
                    imp.flag(where, "error", "a candidate is listed twice")
                    continue
                status, label = evaluation.get("status", "processed"), evaluation.get("label")
                if status == "skipped":
                    imp.flag(where, "skipped", "LangWatch skipped this evaluation")
                    continue
                pick = slots.index(label) + 1 if status == "processed" and label in slots else None
                if pick is None:
                    imp.flag(where, "null_verdict", f"status {status!r}, label {label!r}: no candidate chosen")
                index = evaluation.get("index")
                entry = entries.get(index)
                item = entry.get("id", entry.get("item")) if isinstance(entry, dict) else None
                unordered += not ordered
                imp.add({
                    "item": str(item if item is not None else index), "slots": slots, "pick": pick,
                    "judge": judge_name if judge_name is not None else str(evaluation.get("name")
                                                                           or evaluation.get("evaluator") or ""),
                    **({} if ordered else {"order_shown": False}), "raw": evaluation.get("details"),
                    "score": evaluation.get("score"), "index": index, "source_format": "langwatch",
                })
        if unordered:
            imp.notes.append(ORDER_NOT_RECORDED.format(fmt=f"LangWatch ({unordered} evaluations list their "
                                                       "candidates without `slots`)"))
        imports.append(imp)
    return _result(imports)
