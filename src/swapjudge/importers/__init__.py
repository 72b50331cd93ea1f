"""Importers for other harnesses' judgments: each turns foreign files into presentation records (docs/records.md).

`FORMATS` maps a format name to its `ImportFormat` (what it reads, where the schema is defined, which options
apply, and the function to call); `import_files(name, paths, options)` runs one. Every importer returns an
`ImportResult`: the records plus one `ImportReport` per file listing every awkward row.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swapjudge.errors import InputError

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ below loads each name on first use
    from swapjudge.importers.alpaca_eval import OrderChoice, import_alpaca_eval  # noqa: F401
    from swapjudge.importers.arena_hard import import_arena_hard  # noqa: F401
    from swapjudge.importers.base import AWKWARD_MEANING, Awkward, ImportReport, ImportResult, Record, write_records
    from swapjudge.importers.csv_table import CsvColumns, check_keep, import_csv, parse_map  # noqa: F401
    from swapjudge.importers.fastchat import import_fastchat  # noqa: F401
    from swapjudge.importers.inspect_log import import_inspect  # noqa: F401
    from swapjudge.importers.judgebench import import_judgebench  # noqa: F401
    from swapjudge.importers.label_studio import import_label_studio  # noqa: F401
    from swapjudge.importers.listwise_formats import (  # noqa: F401
        import_deepeval_arena,
        import_langwatch,
        import_promptfoo_select_best,
    )
    from swapjudge.importers.llmbar import RoundChoice, import_llmbar  # noqa: F401
    from swapjudge.importers.promptfoo import import_promptfoo  # noqa: F401
    from swapjudge.importers.shi2024 import PerCallConsistency, import_shi2024, per_call_consistency  # noqa: F401

# Where each name this package exports lives: its module is imported on first use, so listing FORMATS (the
# help of `swapjudge import`, built on every command's start) loads no importer.
_HOMES = {
    "OrderChoice": "alpaca_eval", "import_alpaca_eval": "alpaca_eval", "import_arena_hard": "arena_hard",
    "AWKWARD_MEANING": "base", "Awkward": "base", "ImportReport": "base", "ImportResult": "base", "Record": "base",
    "write_records": "base", "CsvColumns": "csv_table", "check_keep": "csv_table", "import_csv": "csv_table",
    "parse_map": "csv_table", "import_fastchat": "fastchat", "import_inspect": "inspect_log",
    "import_judgebench": "judgebench", "import_label_studio": "label_studio", "RoundChoice": "llmbar",
    "import_llmbar": "llmbar",
    "import_promptfoo": "promptfoo", "import_promptfoo_select_best": "listwise_formats",
    "import_deepeval_arena": "listwise_formats", "import_langwatch": "listwise_formats",
    "PerCallConsistency": "shi2024", "import_shi2024": "shi2024",
    "per_call_consistency": "shi2024",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


@dataclass(frozen=True)
class ImportOptions:
    """Every importer option; each format reads the ones listed in its `ImportFormat.options`."""

    judge_name: str | None = None
    baseline: str | None = None
    round_choice: RoundChoice = "last"
    order: OrderChoice = "recorded"
    item: str | None = None
    first: str | None = None
    second: str | None = None
    verdict: str | None = None
    map: str | None = None
    judge: str | None = None
    label: str | None = None
    round: str | None = None
    delimiter: str | None = None
    seed: int = 0
    keep: tuple[str, ...] = ()
    identical_draws: bool = False

    def given(self) -> set[str]:
        """Names of the options set to something other than their default."""
        defaults = ImportOptions()
        return {f.name for f in fields(self) if getattr(self, f.name) != getattr(defaults, f.name)}


@dataclass(frozen=True)
class ImportFormat:
    """One foreign format: its name, what it is, where its schema is defined, its options, its importer."""

    name: str
    summary: str
    source: str
    options: tuple[str, ...]
    run: Callable[[Sequence[Path], ImportOptions], ImportResult]


def _csv(paths: Sequence[Path], o: ImportOptions) -> ImportResult:
    from swapjudge.importers.csv_table import CsvColumns, check_keep, import_csv, parse_map

    needed = {"item": o.item, "first": o.first, "second": o.second, "verdict": o.verdict, "map": o.map}
    missing = [name for name, value in needed.items() if not value]
    if missing:
        raise InputError("format csv needs " + ", ".join("{" + name + "}" for name in missing), arguments=missing)
    assert o.item and o.first and o.second and o.verdict and o.map  # narrowed by the check above
    columns = CsvColumns(item=o.item, first=o.first, second=o.second, verdict=o.verdict, judge=o.judge,
                         label=o.label, round=o.round, keep=check_keep(o.keep))
    return import_csv(paths, columns=columns, mapping=parse_map(o.map), judge_name=o.judge_name,
                      delimiter=o.delimiter)


FORMATS: dict[str, ImportFormat] = {
    f.name: f
    for f in (
        ImportFormat(
            "fastchat", "FastChat llm_judge pairwise judgments (MT-Bench *_pair.jsonl)",
            "lm-sys/FastChat fastchat/llm_judge/common.py (play_a_match_pair)", ("judge_name",),
            lambda p, o: __getattr__("import_fastchat")(p, judge_name=o.judge_name),
        ),
        ImportFormat(
            "arena-hard", "arena-hard-auto model judgments (model_judgment/<judge>/<model>.jsonl)",
            "lmarena/arena-hard-auto gen_judgment.py, src/arenahard/gen_judgment.py, show_result.py",
            ("baseline", "judge_name"),
            lambda p, o: __getattr__("import_arena_hard")(p, baseline=o.baseline, judge_name=o.judge_name),
        ),
        ImportFormat(
            "judgebench", "JudgeBench judge outputs (outputs/dataset=...,judge_model=....jsonl)",
            "ScalerLab/JudgeBench run_judge.py, utils/judges.py, utils/metrics.py", ("judge_name",),
            lambda p, o: __getattr__("import_judgebench")(p, judge_name=o.judge_name),
        ),
        ImportFormat(
            "llmbar", "LLMBar evaluator results (Dataset/<set>/evaluators/<model>/<method>/result.json)",
            "princeton-nlp/LLMBar LLMEvaluator/evaluate.py (annotate)", ("round_choice", "judge_name"),
            lambda p, o: __getattr__("import_llmbar")(p, round_choice=o.round_choice, judge_name=o.judge_name),
        ),
        ImportFormat(
            "alpaca-eval", "AlpacaEval annotations JSON (single order per pair)",
            "tatsu-lab/alpaca_eval src/alpaca_eval/annotators/pairwise_evaluator.py, processors.py",
            ("order", "seed", "judge_name", "identical_draws"),
            lambda p, o: __getattr__("import_alpaca_eval")(p, order=o.order, judge_name=o.judge_name, seed=o.seed,
                                                           identical_draws=o.identical_draws),
        ),
        ImportFormat(
            "shi2024", "Shi et al. 2024 verdict CSV (verdicts_both_orders.csv of Position-Bias-Analyzer)",
            "Slimshilin/Position-Bias-Analyzer (the verdicts_both_orders.csv tables)", ("judge_name",),
            lambda p, o: __getattr__("import_shi2024")(p, judge_name=o.judge_name),
        ),
        ImportFormat(
            "inspect", "inspect_ai eval logs (*.eval or *.json) scored with swapjudge's swap_judge scorer",
            "UKGovernmentBEIS/inspect_ai inspect_ai/log/_log.py; swapjudge.integrations.inspect (the scorer)",
            ("judge_name",),
            lambda p, o: __getattr__("import_inspect")(p, judge_name=o.judge_name),
        ),
        ImportFormat(
            "promptfoo", "promptfoo eval results (promptfoo eval -o results.json): select-best, pairwise llm-rubric",
            "promptfoo/promptfoo src/types (EvaluateSummaryV3), src/matchers (select-best)", ("judge_name",),
            lambda p, o: __getattr__("import_promptfoo")(p, judge_name=o.judge_name),
        ),
        ImportFormat(
            "promptfoo-select-best", "promptfoo select-best over three or more outputs, as listwise (best-of-N) "
            "records (one fixed order: one rotation)",
            "promptfoo/promptfoo src/matchers (select-best), src/types (EvaluateSummaryV3)", ("judge_name",),
            lambda p, o: __getattr__("import_promptfoo_select_best")(p, judge_name=o.judge_name),
        ),
        ImportFormat(
            "deepeval-arena", "DeepEval ArenaGEval results (the compare() experiment: testRuns per contestant), "
            "as listwise records; the order shown is not recorded",
            "confident-ai/deepeval deepeval/evaluate/compare.py, metrics/arena_g_eval, test_run/api.py",
            ("judge_name",),
            lambda p, o: __getattr__("import_deepeval_arena")(p, judge_name=o.judge_name),
        ),
        ImportFormat(
            "langwatch", "LangWatch evaluation results (langwatch.evaluation log_results: best-of-N rows whose "
            "label names the chosen candidate), as listwise records",
            "langwatch/langwatch python-sdk/src/langwatch/evaluation/evaluation.py (log, _send_batch)",
            ("judge_name",),
            lambda p, o: __getattr__("import_langwatch")(p, judge_name=o.judge_name),
        ),
        ImportFormat(
            "label-studio", "Label Studio Pairwise project export (Export, JSON: tasks with annotations)",
            "HumanSignal/label-studio docs guide/task_format; web/libs/editor/src/tags/control/Pairwise.js",
            ("judge_name",),
            lambda p, o: __getattr__("import_label_studio")(p, judge_name=o.judge_name),
        ),
        ImportFormat(
            "csv", "any table of judge calls, by naming its columns and the verdict mapping",
            "this project (docs/importers.md)",
            ("item", "first", "second", "verdict", "map", "judge", "label", "round", "keep", "delimiter",
             "judge_name"),
            _csv,
        ),
    )
}


def import_files(name: str, paths: Sequence[Path], options: ImportOptions | None = None) -> ImportResult:
    """Run the importer for format `name` on `paths`; options that do not apply to it are an error."""
    fmt = FORMATS.get(name)
    if fmt is None:
        raise InputError(f"unknown import format {name!r}; known: {', '.join(FORMATS)}")
    options = options or ImportOptions()
    stray = sorted(options.given() - set(fmt.options))
    if stray:
        names = ", ".join("{" + s + "}" for s in stray)
        raise InputError(f"option{'s' if len(stray) > 1 else ''} {names} do{'' if len(stray) > 1 else 'es'} "
                         f"not apply to format {name}", arguments=stray)
    for path in paths:
        if str(path) != "-" and not Path(path).is_file():  # `-`: stdin
            raise InputError("no such file", path=str(path))
    return fmt.run(paths, options)


__all__ = [
    "AWKWARD_MEANING",
    "FORMATS",
    "Awkward",
    "ImportFormat",
    "ImportOptions",
    "ImportReport",
    "ImportResult",
    "PerCallConsistency",
    "Record",
    "import_files",
    "per_call_consistency",
    "write_records",
]
