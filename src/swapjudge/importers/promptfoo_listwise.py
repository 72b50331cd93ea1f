"""promptfoo `select-best` over three or more outputs as listwise (best-of-N) records (docs/records.md).

promptfoo's select-best grader is shown a test's outputs in one prompt, in the order promptfoo lists them
(prompt order, then provider order), labelled 0, 1, ...; the output it picks passes, the others fail, and an
unusable reply fails them all ("Invalid select-best verdict"). That order is the same for every test: the file
records the order shown, but there is one rotation, so the slot's pull cannot be told from the systems'
strengths (the analysis says so and fits strengths alone). Names, item and judge are read as the pairwise
promptfoo importer reads them (`importers.promptfoo`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swapjudge.importers.base import FileImport
from swapjudge.importers.promptfoo import (
    GRADER_FAILURES,
    grader_name,
    load_promptfoo_results,
    promptfoo_item_id,
    select_best_component,
    system_name,
)

SINGLE_ROTATION = ("promptfoo shows every test's outputs in one fixed order (prompt, then provider): one rotation, "
                   "so a slot's pull cannot be told from a system's strength")


@dataclass(frozen=True)
class ListwiseImport:
    """Listwise records (dicts, ready for `reading.listwise.load_listwise`), the tests skipped and why, and the
    one-line note on the order shown."""

    records: tuple[dict[str, Any], ...]
    skipped: tuple[tuple[str, str], ...]
    note: str = SINGLE_ROTATION


def import_promptfoo_listwise(paths: Sequence[Path], *, judge_name: str | None = None) -> ListwiseImport:
    """One listwise record per promptfoo test whose select-best grader saw three or more outputs."""
    records: list[dict[str, Any]] = []
    skipped: list[tuple[str, str]] = []
    for path in paths:
        imp = FileImport(Path(path), "promptfoo")
        groups: dict[Any, list[dict[str, Any]]] = defaultdict(list)
        for result in load_promptfoo_results(imp):
            groups[result.get("testIdx")].append(result)
        for test_index, results in groups.items():
            where = f"{path}[test {test_index}]"
            graded = [(r, select_best_component(r)) for r in results]
            if not all(c is not None for _r, c in graded):
                skipped.append((where, "not every output has a select-best result"))
                continue
            if len(graded) < 3:
                skipped.append((where, f"select-best over {len(graded)} outputs: a pair (use `import promptfoo`)"))
                continue
            # the grader saw the outputs in prompt order, then file order within a prompt (a stable sort)
            ordered = sorted(graded, key=lambda rc: rc[0].get("promptIdx") or 0)
            providers = {((r.get("provider") or {}).get("id"), (r.get("provider") or {}).get("label"))
                         for r, _c in ordered}
            names = [system_name(r, len(providers) > 1) for r, _c in ordered]
            if len(set(names)) != len(names):
                skipped.append((where, f"outputs share a name ({', '.join(names)}): not one system per slot"))
                continue
            passed = [i for i, (_r, c) in enumerate(ordered) if c is not None and c.get("pass") is True]
            reasons = [str((c or {}).get("reason") or "") for _r, c in ordered]
            failed = any(r.startswith(GRADER_FAILURES) for r in reasons)
            pick = passed[0] + 1 if len(passed) == 1 and not failed else None
            first, _comp = ordered[0]
            test = first.get("testCase") or {}
            vars_ = first.get("vars") or test.get("vars") or {}
            records.append({
                "item": promptfoo_item_id(test, vars_, test_index), "slots": names, "pick": pick,
                "judge": judge_name if judge_name is not None else grader_name(first),
                "raw": reasons[passed[0]] if len(passed) == 1 else (reasons[0] or None),
                "test_index": test_index, "source_format": "promptfoo select-best", "rotations": "single",
            })
    return ListwiseImport(tuple(records), tuple(skipped))
