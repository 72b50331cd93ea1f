"""Progress of the calls: a live bar on a terminal, plain lines elsewhere."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn


class CallProgress:
    """A live bar on a terminal; elsewhere (a CI log, a file) a plain line at every tenth of the calls."""

    def __init__(self, console: Console | None, total: int, enabled: bool) -> None:
        self.enabled = enabled and total > 0
        self.progress: Progress | None = None
        self.task: Any = None
        self.console = console
        self.total = total
        self.plain = self.enabled and console is not None and not console.is_terminal
        self._next_line = 0
        if self.enabled and not self.plain:
            self.progress = Progress(
                TextColumn("judging"),
                BarColumn(),
                TaskProgressColumn(),
                TextColumn("{task.completed}/{task.total} calls"),
                TextColumn("[red]{task.fields[failures]} failed[/]"),
                TextColumn("{task.fields[rate]:.1f} calls/s"),
                TextColumn("{task.fields[spend]}"),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=console,
                transient=False,
                refresh_per_second=4,
            )
            self.task = self.progress.add_task("judging", total=total, failures=0, rate=0.0, spend="$0.0000")

    def __enter__(self) -> CallProgress:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def update(self, done: int, failures: int, rate: float, spend: float | None) -> None:
        text = f"${spend:.4f}" if spend is not None else "spend n/a"
        if self.progress is not None:
            self.progress.update(self.task, completed=done, failures=failures, rate=rate, spend=text)
        elif self.plain and self.console is not None and (done >= self._next_line or done == self.total):
            eta = f", about {(self.total - done) / rate:.0f} s left" if rate > 0 and done < self.total else ""
            self.console.print(f"  judging: {done}/{self.total} calls ({done / self.total:.0%}), {failures} failed, "
                               f"{rate:.2f} calls/s, {text}{eta}", highlight=False, markup=False)
            self._next_line = done + max(1, -(-self.total // 10))
