"""promptfoo eval results (`promptfoo eval -o results.json`) with a `select-best` assertion (the grader sees the
test's outputs in one prompt and selects one) or a pairwise `llm-rubric` (the output the grader reads shows two
answers, and the rubric states that the first-shown one is the better).

Schema (promptfoo/promptfoo, `EvaluateSummaryV3` as written by `promptfoo eval -o results.json`, version 3):
`{"results": {"version": 3, "results": [EvaluateResult, ...], ...}, "config": ...}`; each result has `testIdx`,
`promptIdx`, `provider` {id, label}, `prompt` {label}, `vars`, `testCase` {description, vars, options},
`gradingResult.componentResults[]` {pass, reason, assertion {type}}. The select-best grader is shown the outputs of
one test in the order promptfoo lists them (prompt order, then provider order), labelled 0, 1, ...; the output
it picks passes, the others fail; an unusable grader reply fails them all ("Invalid select-best verdict").

Identities: the test's vars `first_id` and `second_id` when present (the both-orders config in docs/importers.md:
two prompts `{{slot1}}`/`{{slot2}}` and each pair as two tests with the answers swapped); otherwise the output's
provider label (or id) when the two outputs come from different providers, else the prompt label. Item: vars
`item`, else the test description, else the test index. Judge: the grader provider of the test (`options.provider`).

Pairwise llm-rubric: a test whose vars name `first_id` and `second_id` and whose `llm-rubric` assertion states
that the answer shown first is the better; pass = "first", fail = "second". promptfoo writes a grader reply it
could not read as a failed assertion too ("Could not extract JSON from llm-rubric response"): such a row is a
null verdict, never "second".
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from swapjudge.errors import InputError
from swapjudge.importers.base import FileImport, ImportResult, finish, make_record, read_paths

FORMAT = "promptfoo"
SELECT_BEST = "select-best"
LLM_RUBRIC = "llm-rubric"
DEFAULT_JUDGE = "promptfoo-grader"
# reasons promptfoo gives when the grader's reply had no usable verdict (the assertion then reads as failed)
GRADER_FAILURES = ("Could not extract JSON", "Invalid select-best verdict", "llm-rubric produced malformed",
                   "Error", "No output")


def load_promptfoo_results(imp: FileImport) -> list[dict[str, Any]]:
    try:
        data = json.loads(imp.path.read_text(encoding="utf-8"))
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", path=str(imp.path)) from None
    except json.JSONDecodeError as err:
        raise InputError(f"not valid JSON ({err.msg})", path=str(imp.path), line=err.lineno) from None
    summary = data.get("results") if isinstance(data, dict) else None
    rows = summary.get("results") if isinstance(summary, dict) else None
    if not isinstance(summary, dict) or not isinstance(rows, list):
        raise InputError("not a promptfoo results file (no results.results list; write it with "
                         "`promptfoo eval -o results.json`)", path=str(imp.path))
    if summary.get("version") not in (None, 2, 3):
        imp.notes.append(f"results version {summary.get('version')!r}: read as version 3")
    return [r for r in rows if isinstance(r, dict)]


def _component(result: dict[str, Any], kind: str) -> dict[str, Any] | None:
    grading = result.get("gradingResult") or {}
    for comp in grading.get("componentResults") or []:
        if isinstance(comp, dict) and (comp.get("assertion") or {}).get("type") == kind:
            return comp
    return None


def select_best_component(result: dict[str, Any]) -> dict[str, Any] | None:
    return _component(result, SELECT_BEST)


def _ids(vars_: dict[str, Any]) -> tuple[str, str] | None:
    if vars_.get("first_id") in (None, "") or vars_.get("second_id") in (None, ""):
        return None
    return str(vars_["first_id"]), str(vars_["second_id"])


def _read_rubric(imp: FileImport, where: str, results: list[dict[str, Any]], judge_name: str | None,
                 test_index: Any) -> None:
    """A pairwise llm-rubric test: one judge call per output (each output shows both answers)."""
    for result in results:
        comp = _component(result, LLM_RUBRIC)
        if comp is None:
            continue
        test = result.get("testCase") or {}
        vars_ = result.get("vars") or test.get("vars") or {}
        ids = _ids(vars_)
        if ids is None:
            imp.flag(where, "skipped", "llm-rubric without vars first_id and second_id: not a pairwise judgment")
            continue
        reason = str(comp.get("reason") or "")
        if not isinstance(comp.get("pass"), bool) or reason.startswith(GRADER_FAILURES):
            verdict: str | None = None
            imp.flag(where, "null_verdict", f"grader gave no verdict ({reason or 'no pass value'})")
        else:
            verdict = "first" if comp["pass"] else "second"
        imp.add(make_record(
            item=promptfoo_item_id(test, vars_, test_index), first=ids[0], second=ids[1], verdict=verdict,
            judge=judge_name if judge_name is not None else grader_name(result), raw=reason or None,
            test_index=test_index, description=test.get("description"), _where=where,
        ))


def grader_name(result: dict[str, Any]) -> str:
    provider = ((result.get("testCase") or {}).get("options") or {}).get("provider")
    if isinstance(provider, dict):
        return str(provider.get("label") or provider.get("id") or DEFAULT_JUDGE)
    return str(provider) if isinstance(provider, str) and provider else DEFAULT_JUDGE


def system_name(result: dict[str, Any], by_provider: bool) -> str:
    if by_provider:
        provider = result.get("provider") or {}
        return str(provider.get("label") or provider.get("id") or "")
    prompt = result.get("prompt") or {}
    return str(prompt.get("label") or result.get("promptId") or result.get("promptIdx"))


def promptfoo_item_id(test: dict[str, Any], vars_: dict[str, Any], index: Any) -> str:
    if vars_.get("item") not in (None, ""):
        return str(vars_["item"])
    return str(test.get("description") or f"test{index}")


def read_file(imp: FileImport, *, judge_name: str | None = None) -> None:
    groups: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for result in load_promptfoo_results(imp):
        groups[result.get("testIdx")].append(result)
    for test_index, results in groups.items():
        imp.rows += 1
        where = f"{imp.path}[test {test_index}]"
        graded = [(r, select_best_component(r)) for r in results]
        if not any(comp is not None for _r, comp in graded):
            if any(_component(r, LLM_RUBRIC) is not None for r in results):
                _read_rubric(imp, where, results, judge_name, test_index)
            else:
                imp.flag(where, "skipped", "no select-best or llm-rubric assertion (no comparison to import)")
            continue
        if len(graded) != 2:
            imp.flag(where, "skipped", f"select-best over {len(graded)} outputs: not a pair")
            continue
        # the grader saw the outputs in prompt order, then provider order (file order within a prompt)
        (r1, c1), (r2, c2) = sorted(graded, key=lambda rc: rc[0].get("promptIdx") or 0)
        test = r1.get("testCase") or {}
        vars_ = r1.get("vars") or test.get("vars") or {}
        ids = _ids(vars_)
        if ids is not None:
            first, second = ids
        else:
            by_provider = (r1.get("provider") or {}).get("id") != (r2.get("provider") or {}).get("id") or \
                (r1.get("provider") or {}).get("label") != (r2.get("provider") or {}).get("label")
            first, second = system_name(r1, by_provider), system_name(r2, by_provider)
        if first == second:
            imp.flag(where, "error", f"both outputs are named {first!r}; give vars first_id and second_id")
            continue
        picked = [c is not None and c.get("pass") is True for c in (c1, c2)]
        chosen = c2 if picked == [False, True] else c1 or c2  # the selected output's reason when there is one
        reason = str((chosen or {}).get("reason") or "")
        if reason.startswith(GRADER_FAILURES):
            verdict: str | None = None
            imp.flag(where, "null_verdict", f"no single output selected ({reason})")
        elif picked == [True, False]:
            verdict = "first"
        elif picked == [False, True]:
            verdict = "second"
        else:
            verdict = None
            imp.flag(where, "null_verdict", f"no single output selected ({reason or 'grader gave no verdict'})")
        imp.add(make_record(
            item=promptfoo_item_id(test, vars_, test_index), first=first, second=second, verdict=verdict,
            judge=judge_name if judge_name is not None else grader_name(r1), raw=reason or None,
            test_index=test_index, description=test.get("description"), _where=where,
        ))


def import_promptfoo(paths: Sequence[Path], *, judge_name: str | None = None) -> ImportResult:
    """Presentation records (one per select-best test of two outputs, one per pairwise llm-rubric output)."""
    return finish(read_paths(paths, FORMAT, read_file, judge_name=judge_name))
