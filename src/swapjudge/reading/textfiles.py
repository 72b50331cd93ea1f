"""Text files in and out: the files users give (JSON Lines, CSV) read one way, every bad line named in the same
words; and the files swapjudge writes, written one way: atomically."""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from swapjudge.errors import InputError, SwapjudgeError

STDIO = "-"  # the conventional name of stdin (for an input) and stdout (for an output)
# A text cell a spreadsheet runs as a formula when it starts with one of these (OWASP, "CSV injection")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
ESCAPED_CELL = r"^'+[=+\-@\t\r]"  # a cell `spreadsheet_cell` escaped, as a regular expression
# Python's csv module refuses a cell over 131,072 characters; a judge's reply or an answer can be longer
CSV_CELL_LIMIT = min(sys.maxsize, 2**31 - 1)  # the C long csv takes, on every platform
_stdin_bytes: bytes | None = None  # stdin can be read once; a second reader of `-` gets the same bytes


def is_stdio(path: str | Path) -> bool:
    return str(path) == STDIO


def read_stdin() -> bytes:
    """All of stdin, read once per process."""
    global _stdin_bytes
    if _stdin_bytes is None:
        _stdin_bytes = sys.stdin.buffer.read()
    return _stdin_bytes


def looks_like_csv(data: bytes) -> bool:
    """For input without a file name (stdin): JSON Lines start with `{`, anything else is read as CSV."""
    return not data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")


def read_bytes(path: Path) -> bytes:
    """The file's bytes (`-`: stdin); a missing or unreadable file is an InputError."""
    if is_stdio(path):
        return read_stdin()
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path=str(path)) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", path=str(path)) from None


def decode_text(data: bytes, path: str) -> str:
    """UTF-8 text, a byte-order mark dropped; other bytes are an InputError naming the first bad one."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text (byte {err.start})", path=path) from None


def has_lone_surrogate(text: str) -> bool:
    """True when the text holds a surrogate code point (U+D800 to U+DFFF) on its own, as a JSON escape can give:
    no UTF-8 file, HTTP body or SQLite text can hold one."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def read_text(path: Path) -> str:
    """The file's UTF-8 text; a missing, unreadable or non-UTF-8 file is an InputError."""
    return decode_text(read_bytes(path), str(path))


# the JSON escape of a surrogate code point: only such an escape can put a lone surrogate into decoded text
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _surrogate_field(value: Any, where: str) -> str | None:
    """The dotted field (`prompt`, `answers.v1`; the mapping's own name for a key) holding a lone surrogate."""
    if isinstance(value, str):
        return where if has_lone_surrogate(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if has_lone_surrogate(str(key)):
                return where or str(key)
            found = _surrogate_field(item, f"{where}.{key}" if where else str(key))
            if found is not None:
                return found
    if isinstance(value, list):
        for item in value:
            found = _surrogate_field(item, where)
            if found is not None:
                return found
    return None


def json_lines(text: str, path: str) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) for every non-blank line; a line that is not JSON is an InputError naming it,
    and so is a text holding a lone surrogate (no file, request or store can hold one), by its field."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(f"not valid JSON ({err.msg} at column {err.colno})", path=path, line=number) from None
        except RecursionError:
            raise InputError("JSON nested too deeply to read", path=path, line=number) from None
        except ValueError as err:  # e.g. an integer of more digits than Python converts (4,300)
            why = "an integer too long to read (over 4,300 digits)" if "digits" in str(err) else str(err)
            raise InputError(f"not readable JSON: {why}", path=path, line=number) from None
        if _SURROGATE_ESCAPE.search(line):
            field = _surrogate_field(value, "")
            if field is not None:
                raise InputError("not valid Unicode (lone surrogate)", path=path, line=number, field=field or None)
        yield number, value


def spreadsheet_cell(value: Any) -> Any:
    """A value as a CSV written for people holds it: a text a spreadsheet would run as a formula gets a leading
    `'`, as OWASP advises, and so does a text that merely looks like such an escaped one, so that
    `from_spreadsheet` gives back exactly the text written. Numbers and other values pass as they are."""
    if isinstance(value, str) and value.lstrip("'").startswith(FORMULA_STARTS):
        return "'" + value
    return value


def from_spreadsheet(cell: str) -> str:
    """A CSV cell's text with the `'` that `spreadsheet_cell` put before a formula-like text taken off again."""
    if cell.startswith("'") and cell.lstrip("'").startswith(FORMULA_STARTS):
        return cell[1:]
    return cell


def allow_long_cells() -> None:
    """Let Python's csv module read cells of any length (its default limit is 131,072 characters)."""
    if csv.field_size_limit() < CSV_CELL_LIMIT:
        csv.field_size_limit(CSV_CELL_LIMIT)


def csv_rows(text: str, path: str, *, required: Iterable[str] = (), delimiter: str = ","
             ) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line where the record starts, row) per CSV record, after checking the header names every `required`
    column; a row with more cells than the header is an InputError, one with fewer has None in the rest. Each
    cell is read as `from_spreadsheet` gives it back (the files swapjudge writes escape formula-like text)."""
    allow_long_cells()
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = reader.fieldnames or []
    for name in required:
        if name not in header:
            raise InputError("missing column", path=path, line=1, field=name)
    previous = 1
    for row in reader:
        # a quoted cell may span lines: the record starts just after the previous one ended
        start, previous = previous + 1, reader.line_num
        if None in row:
            raise InputError("more cells than header columns", path=path, line=start)
        yield start, {k: from_spreadsheet(v) if isinstance(v, str) else v for k, v in row.items()}


@contextmanager
def atomic_text(path: Path, *, create_parent: bool = True) -> Iterator[TextIO]:
    """A text handle whose content replaces `path` only when the block ends cleanly: temp file beside it, fsync,
    rename, so a crash leaves the old file or the whole new one. Without `create_parent`, a missing folder is an
    InputError (an output path with a typo in it)."""
    if is_stdio(path):
        # `-o -`: stdout, written as it comes (there is no file to replace atomically)
        yield from _stdout_data()
        return
    target = Path(path)
    directory = target.parent
    try:
        if create_parent:
            directory.mkdir(parents=True, exist_ok=True)
        elif not directory.is_dir():
            raise InputError("output folder does not exist", path=str(directory))
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as err:
        raise SwapjudgeError(f"{target}: cannot write: {err.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o666 & ~_umask())  # mkstemp makes 0600; an output is shared like any file the user writes
        os.replace(tmp_name, target)
    except OSError as err:
        Path(tmp_name).unlink(missing_ok=True)
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            raise SwapjudgeError(f"{target}: disk full: nothing written (a file already there is left as it "
                                 "was)") from None
        raise
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def _stdout_data() -> Iterator[TextIO]:
    """stdout for data: its bytes, as UTF-8 with no newline translation, exactly as a file gets them (what the CLI
    prints as text is escaped for the terminal on its way; data is not text to be escaped). A stdout without
    bytes below it (a plain StringIO) takes the text as it is."""
    out = sys.stdout
    out.flush()
    binary = getattr(out, "buffer", None)
    if binary is None:
        yield out
        out.flush()
        return
    handle = io.TextIOWrapper(binary, encoding="utf-8", newline="", write_through=True)
    try:
        yield handle
        handle.flush()
    finally:
        handle.detach()  # the stream stays open: it is stdout


def write_atomic(path: Path, text: str) -> None:
    """Write text so that the file is either the old one or the whole new one, never half written."""
    with atomic_text(path) as handle:
        handle.write(text)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
