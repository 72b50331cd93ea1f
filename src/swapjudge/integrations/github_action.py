"""The GitHub Action's step (`action.yml` at the repository root): decide, write the Markdown verdict to the job
summary, expose it as step outputs for a pull-request comment, and fail the step unless the candidate ships.

Run as `python -m swapjudge.integrations.github_action`. The action passes its inputs in SWAPJUDGE_* environment
variables (never interpolated into a shell line); each has a command-line option too, for a local try:

    python -m swapjudge.integrations.github_action --decision decision.yaml --records records.jsonl

Exit status: 0 ship (and inconclusive with `--inconclusive pass`), 1 keep, 3 inconclusive, 2 bad input. Outputs
(in $GITHUB_OUTPUT): `verdict` (ship, keep, inconclusive or error), `exit-code`, `headline` and `markdown` (the
whole verdict, multi-line, in the heredoc form `name<<DELIMITER`).
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

ENV = {"decision": "SWAPJUDGE_DECISION", "records": "SWAPJUDGE_RECORDS", "config": "SWAPJUDGE_CONFIG",
       "store": "SWAPJUDGE_STORE", "run": "SWAPJUDGE_RUN", "allow_missing": "SWAPJUDGE_ALLOW_MISSING",
       "inconclusive": "SWAPJUDGE_INCONCLUSIVE"}


def _parser() -> argparse.ArgumentParser:
    def env(name: str, default: str | None = None) -> str | None:
        return os.environ.get(ENV[name]) or default

    p = argparse.ArgumentParser(prog="python -m swapjudge.integrations.github_action",
                                description="swapjudge decide for a CI step: job summary, outputs, exit status.")
    p.add_argument("--decision", default=env("decision"), help="The decision file (YAML).")
    p.add_argument("--records", default=env("records"), help="Presentation records or a run store.")
    p.add_argument("--config", default=env("config"), help="A run configuration: run it, then decide on its run.")
    p.add_argument("--store", default=env("store"), help="The run store (the ledger; the run's store with --config).")
    p.add_argument("--run", default=env("run"), help="With a store as --records: the run (default: latest).")
    p.add_argument("--allow-missing", default=env("allow_missing", "0"), help="Missing calls tolerated.")
    p.add_argument("--inconclusive", default=env("inconclusive", "fail"), choices=("pass", "fail"),
                   help="Whether an inconclusive verdict passes the step.")
    return p


def _heredoc(name: str, value: str) -> str:
    delimiter = f"SWAPJUDGE_{uuid.uuid4().hex}"  # never a line of the value
    return f"{name}<<{delimiter}\n{value.rstrip(chr(10))}\n{delimiter}\n"


def _append(variable: str, text: str) -> None:
    path = os.environ.get(variable)
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text)


def _outputs(verdict: str, code: int, headline: str, markdown: str) -> None:
    _append("GITHUB_OUTPUT", f"verdict={verdict}\nexit-code={code}\n" + _heredoc("headline", headline)
            + _heredoc("markdown", markdown))


def main(argv: Sequence[str] | None = None) -> int:
    from swapjudge.errors import SwapjudgeError

    args = _parser().parse_args(argv)
    try:
        return _decide(args)
    except SwapjudgeError as err:
        message = f"swapjudge decide: error: {err}"
        print(message, file=sys.stderr)
        _append("GITHUB_STEP_SUMMARY", f"### ⛔ {message}\n\nNo verdict: the step fails (bad input).\n")
        _outputs("error", 2, message, message)
        return 2


def _decide(args: argparse.Namespace) -> int:
    from swapjudge.errors import SwapjudgeError
    from swapjudge.outcome import Conclusion
    from swapjudge.report.decision import render_markdown, render_text
    from swapjudge.workflows.decide import decide, is_store

    if not args.decision:
        raise SwapjudgeError("no decision file: give --decision (the action's `decision` input)")
    if bool(args.records) == bool(args.config):
        raise SwapjudgeError("give either records (a records file or a run store) or a run configuration")
    try:
        allow_missing = int(args.allow_missing)
        run = int(args.run) if args.run else None
    except ValueError as err:
        raise SwapjudgeError(f"allow-missing and run must be whole numbers ({err})") from None
    store = Path(args.store) if args.store else None
    if args.config:
        import swapjudge

        result = swapjudge.run(args.config, store=store)
        records: Path = result.store_path
        run = result.run_id
    else:
        records = Path(args.records)
    ledger = None if is_store(records) else (store or Path("swapjudge.db"))
    verdict = decide(records, args.decision, run=run, allow_missing=allow_missing, store=ledger)
    markdown = render_markdown(verdict)
    print(render_text(verdict), end="")
    code = verdict.exit_code
    if verdict.outcome is Conclusion.inconclusive and args.inconclusive == "pass":
        code = 0
        markdown += "\n_Inconclusive passes this step (`inconclusive: pass`)._\n"
    _append("GITHUB_STEP_SUMMARY", markdown + "\n")
    _outputs(verdict.verdict, code, verdict.headline, markdown)
    return code


if __name__ == "__main__":
    sys.exit(main())
