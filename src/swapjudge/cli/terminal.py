"""What the CLI prints reaches a terminal (or a CI log that renders escape sequences) as text: every control
character of the values printed, C0 and C1 but the newline, is escaped (`\\x1b`, `\\x9b`, `\\t`, `\\r`), so an item
id or a system name from someone else's file cannot blink, recolour, retitle the window, hide what follows or open
a link. Two places do it, below every command:

- the consoles (`SafeConsole`): each string is escaped before rich parses and lays it out, and a render hook
  escapes every other text segment (a `Text` a renderer built), so rich's own styling, added after, still works;
- stdout (`EscapingStream`, installed for the length of a command): what a command prints without a console
  (Markdown, a decision's text) is escaped as it is written. Data written to `-o -` goes to the stream's bytes
  (`reading.textfiles.atomic_text`), exactly as a file gets it, and rich consoles unwrap the stream
  (`rich_proxied_file`), so neither is touched twice.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any

from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderHook, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text

# C0 controls but the newline, DEL, and the C1 controls (U+0080-U+009F)
CONTROLS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")
_NAMED = {"\t": "\\t", "\r": "\\r"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or f"\\x{ord(char):02x}"


def escape_controls(text: str) -> str:
    """The text with each control character but the newline written as its escape (`\\x1b`, `\\t`, ...)."""
    return CONTROLS.sub(_escaped, text) if CONTROLS.search(text) else text


class _Escaped:
    """A renderable whose text segments come out with their control characters escaped (control segments, rich's
    own cursor moves, pass as they are)."""

    def __init__(self, inner: ConsoleRenderable) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.inner, options):
            if segment.control or not CONTROLS.search(segment.text):
                yield segment
            else:
                yield Segment(escape_controls(segment.text), segment.style)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.inner)


class _EscapeHook(RenderHook):
    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_Escaped(r) for r in renderables]


class SafeConsole(Console):
    """A rich Console that escapes the control characters of everything it prints (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.push_render_hook(_EscapeHook())

    def print(self, *objects: Any, crop: bool = False, **kwargs: Any) -> None:
        # an escape written after layout (in a Text a renderer built) can make a line longer than the width: it is
        # kept whole, for the terminal to wrap, never cut (rich's lines are never longer otherwise)
        super().print(*objects, crop=crop, **kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Text:
        # escaped before markup and layout, so widths count the escapes as printed
        return super().render_str(escape_controls(text), **kwargs)

    @property
    def file(self) -> IO[str]:
        """The stream below any wrapper (rich's live display proxy, `EscapingStream`): what this console writes is
        escaped already, with its styling added after."""
        stream: Any = self._file or (sys.stderr if self.stderr else sys.stdout)
        while getattr(stream, "rich_proxied_file", None) is not None:
            stream = stream.rich_proxied_file
        return stream  # type: ignore[no-any-return]

    @file.setter
    def file(self, new_file: IO[str]) -> None:
        self._file = new_file


class EscapingStream(io.TextIOBase):
    """A text stream that writes through to `stream` with every control character but the newline escaped."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    @property
    def rich_proxied_file(self) -> IO[str]:
        """rich consoles write to the stream itself: SafeConsole escapes the values and styles them after."""
        return self._stream

    @property
    def buffer(self) -> Any:
        """The bytes below: data (`-o -`) is written there as it is."""
        return getattr(self._stream, "buffer", None)

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", "utf-8") or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self._stream, "errors", None)

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._stream.write(escape_controls(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:  # type: ignore[override]
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not getattr(self._stream, "closed", False):
            self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    def close(self) -> None:
        # the stream below is stdout, not this wrapper's to close (nor when the wrapper is collected)
        self.flush()


@contextlib.contextmanager
def escaping_stdout() -> Iterator[None]:
    """For the length of a command: stdout escapes the control characters of everything printed to it."""
    original = sys.stdout
    if isinstance(original, EscapingStream) or original is None:
        yield
        return
    sys.stdout = EscapingStream(original)
    try:
        yield
    finally:
        if isinstance(sys.stdout, EscapingStream):
            sys.stdout = original
