"""`make run`: audit the embedded local judge on the bundled labelled pairs, offline.

1. assembles and verifies the default model (once; later runs reuse the verified file);
2. runs the example configuration (every pair in both orders, stored and resumable, progress shown);
3. the identical-answer probe (swapjudge.runner.identical_probe): a seeded sample of 10 answers, each in both
   slots, same scaffolding; each probe call is made right after the run's call that shows its answer in slot 1
   (the same code word frames both), so the local judge evaluates only the tokens after that answer;
4. prints the audit (accuracy per order against the labels, order-controlled accuracy, swap-consistency with
   its interval, flip direction with its p-value, the probe) and writes the report files under out/: the HTML
   report (every flipped pair's answers side by side), the analysis as JSON and Markdown, and the records.

    .venv/bin/python examples/local_audit.py [examples/local_llmbar.yaml] [--probe N]
Exit status: 0, or 1 when the judge falls below the consistency gate (the audit is still printed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from swapjudge.config import LoadedConfig, load_config
from swapjudge.core.analysis import analyze_records
from swapjudge.errors import SwapjudgeError
from swapjudge.judges.local import LocalJudge, from_config
from swapjudge.judges.model_files import PACKAGED_MODELS, ensure_model
from swapjudge.reading.records import records_from_dicts
from swapjudge.reading.textfiles import write_atomic
from swapjudge.report import markdown, text
from swapjudge.runner.identical_probe import IdenticalProbeSession
from swapjudge.runner.session import run_async
from swapjudge.store import Store
from swapjudge.store.analysis import run_records

ROOT = Path(__file__).resolve().parent.parent
stdout, stderr = Console(), Console(stderr=True, soft_wrap=True)
if not stdout.is_terminal:  # a log has no width to fit: never split a table cell or a sentence at 80 columns
    stdout = Console(width=1000)


def ensure_judge_model(loaded: LoadedConfig) -> None:
    model = PACKAGED_MODELS.get(str(loaded.config.judge.model))
    if model is None:
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

    with Progress(TextColumn("  assembling + hashing"), BarColumn(), DownloadColumn(), console=stderr,
                  transient=True) as bar:
        task = bar.add_task("model", total=model.size)
        path = ensure_model(model, progress=lambda done, total: bar.update(task, completed=done))
    stderr.print(f"  {model.name}: sha256 verified, {path}", highlight=False, soft_wrap=True)


async def judge_and_probe(loaded: LoadedConfig, judge: LocalJudge, probe_n: int) -> tuple[Any, list[dict[str, Any]]]:
    cfg = loaded.config
    stderr.print(f"[bold][2/4][/] judging {cfg.pairs.path} in both orders, and the identical-answer probe on "
                 f"{probe_n} answers (a seeded sample, the same text in both slots): each probe call right after "
                 "the call that shows its answer in slot 1, so the KV cache serves the task and that answer")
    probe = IdenticalProbeSession(loaded, judge, sample=probe_n)
    outcome = await run_async(loaded, judge=judge, console=stderr, progress=True, handle_sigint=True,
                              after_call=probe.after_call)
    if outcome.interrupted:
        raise SwapjudgeError(f"interrupted; finished calls are stored in {outcome.store_path}: `make run` resumes")
    alongside = len(probe.records)
    stderr.print(f"  {outcome.stats.made} calls made, {outcome.stats.cached + outcome.stats.already_stored} reused "
                 f"from the store, {alongside} probe calls alongside, {outcome.elapsed_s:.1f} s", highlight=False)
    stderr.print(f"[bold][3/4][/] identical-answer probe: {probe_n - alongside} calls left to make")
    started = time.perf_counter()
    result = await probe.finish()
    stderr.print(f"  {result.planned} probe calls in all, {time.perf_counter() - started:.1f} s for the rest",
                 highlight=False)
    return outcome, list(result.records)


def write_html_report(loaded: LoadedConfig, stem: Path) -> str | None:
    """The HTML report people read (answers side by side for every flipped pair), from the records just written;
    None when matplotlib (the [report] extra) is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        stderr.print("  (no HTML report: pip install 'swapjudge[report]')", highlight=False)
        return None
    from swapjudge.report.html import render_html
    from swapjudge.workflows.report import report

    cfg = loaded.config
    inputs = report(stem.with_suffix(".records.jsonl"), pairs=loaded.pairs_path, a=cfg.pairs.a, b=cfg.pairs.b,
                    tie_policy=cfg.tie_policy, min_consistency=cfg.gates.min_self_consistency,
                    confidence=cfg.confidence)
    path = stem.with_suffix(".report.html")
    write_atomic(path, render_html(inputs))
    return str(path)


def accuracy_side_by_side(analyses: list[Any]) -> list[str]:
    """One line per judge: accuracy against the labels of the raw verdicts and of the debiased ones."""
    lines = []
    for a in analyses:
        if a.accuracy is None or a.debiased is None:
            continue
        acc = a.accuracy
        parts = [f"raw, right in both orders {acc.right_both} of {acc.pairs}",
                 f"raw, better answer in slot 1 {acc.right_first} / in slot 2 {acc.right_second}"]
        for name, m in (("order-averaged", a.debiased.order_averaged), ("slot prior removed", a.debiased.calibrated)):
            if m is not None and m.accuracy is not None:
                parts.append(f"{name} {m.accuracy.k} of {m.accuracy.n}")
        lines.append("accuracy against the labels: " + "; ".join(parts)
                     + " (debiased verdicts are a mitigation; the gate stays with the raw verdicts)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path, nargs="?", default=ROOT / "examples" / "local_llmbar.yaml")
    parser.add_argument("--probe", type=int, default=10, help="answers in the identical-answer probe")
    parser.add_argument("--out", type=Path, default=ROOT / "out")
    args = parser.parse_args()
    started = time.perf_counter()
    try:
        loaded = load_config(args.config)
        stderr.print(f"[bold][1/4][/] judge model {loaded.config.judge.model}")
        ensure_judge_model(loaded)
        judge = from_config(loaded.config.judge)
        outcome, probes = asyncio.run(judge_and_probe(loaded, judge, args.probe))
        judge.close()
        with Store(outcome.store_path) as store:
            records = run_records(store, outcome.run_id)
        # the verdict probabilities ride along: the audit shows verdicts debiased from both orders beside the raw
        core = ("judge", "round", "item", "first", "second", "verdict", "label", "p_first", "p_second")
        rows = [{k: r[k] for k in core if k in r} for r in records]
        rows += [{k: p[k] for k in core if k in p} for p in probes]
        cfg = loaded.config
        analyses = analyze_records(records_from_dicts(rows, source=str(outcome.store_path)), a=cfg.pairs.a,
                                   b=cfg.pairs.b, tie_policy=cfg.tie_policy,
                                   min_consistency=cfg.gates.min_self_consistency, confidence=cfg.confidence)
    except SwapjudgeError as err:
        stderr.print(f"[bold red]error:[/] {err}", highlight=False)
        return 2
    stderr.print("[bold][4/4][/] audit")
    text.print_analyses(stdout, analyses)
    for line in accuracy_side_by_side(analyses):
        stdout.print(line, highlight=False, soft_wrap=True)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / args.config.stem
    write_atomic(stem.with_suffix(".records.jsonl"),
                 "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [*records, *probes]))
    payload = [a.to_dict() for a in analyses]
    write_atomic(stem.with_suffix(".analysis.json"),
                 json.dumps(payload[0] if len(payload) == 1 else {"judges": payload}, indent=2) + "\n")
    write_atomic(stem.with_suffix(".analysis.md"), markdown.render_analyses(analyses))
    html = write_html_report(loaded, stem)
    stdout.print(f"\nreports: {html + ', ' if html else ''}{stem}.analysis.json, {stem}.analysis.md, "
                 f"records {stem}.records.jsonl; "
                 f"store {outcome.store_path.resolve()} (run {outcome.run_id}); "
                 f"{time.perf_counter() - started:.0f} s in all",
                 highlight=False, soft_wrap=True)
    # The report above already states the gate's verdict; the exit status carries it too.
    return 0 if all(a.gate.passed for a in analyses) else 1


if __name__ == "__main__":
    sys.exit(main())
