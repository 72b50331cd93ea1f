"""`swapjudge run` of a configuration with `cascade:`: parse done by `run`, here the call and the rendering."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from swapjudge.cli.app import OutputFormat, conclude, dump_json, end, stderr, wide_console
from swapjudge.outcome import Conclusion

if TYPE_CHECKING:
    from swapjudge.config import LoadedConfig


def cascade_command(loaded: LoadedConfig, config: Path, *, dry_run: bool, store: Path | None, progress: bool,
                    wait: bool, output: OutputFormat) -> None:
    from swapjudge.report.cascade_run import cascade_lines, estimate_lines
    from swapjudge.workflows import cascade_run

    if dry_run:
        est = cascade_run.dry_run_cascade(loaded, store=store)
        if output is OutputFormat.json:
            dump_json(est.to_dict())
        else:
            wide_console().print("\n".join(estimate_lines(est)), highlight=False, markup=False)
        return
    result = cascade_run.run_cascade(loaded, store=store, console=stderr, progress=progress, handle_sigint=True,
                                     wait=wait)
    if result.interrupted:
        stderr.print("\n".join(cascade_lines(result)), highlight=False, markup=False)
        stderr.print(f"interrupted: every finished call is stored. Resume with: swapjudge run {config}",
                     highlight=False, markup=False)
        end(Conclusion.interrupted)
    if output is OutputFormat.json:
        dump_json(result.to_dict())
    else:
        wide_console().print("\n".join(cascade_lines(result)), highlight=False, markup=False)
    conclude(result)
