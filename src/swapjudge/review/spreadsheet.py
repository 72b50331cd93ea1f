"""Reading a CSV that went through a spreadsheet: whatever separator, encoding and stray blank rows it came back
with, each row numbered as the spreadsheet shows it (the header is row 1, a cell with line breaks is one row)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from swapjudge.errors import InputError
from swapjudge.reading.textfiles import allow_long_cells, from_spreadsheet, read_bytes

SEPARATORS = (",", ";", "\t")
SEPARATOR_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}


@dataclass(frozen=True)
class SheetTable:
    """A spreadsheet's rows as dicts keyed by the lower-cased header, each with its spreadsheet row number."""

    source: str
    rows: tuple[tuple[int, dict[str, str]], ...]
    separator: str
    encoding: str
    warnings: tuple[str, ...]


def decode_sheet(data: bytes, source: str) -> tuple[str, str, list[str]]:
    """(text, encoding, warnings): UTF-8 with or without a byte-order mark, UTF-16 with one (Excel's "Unicode
    text"), else Windows-1252, the encoding Excel on Windows saves CSV in (said in a one-line warning)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16"), "utf-16", []
    try:
        return data.decode("utf-8-sig"), "utf-8", []
    except UnicodeDecodeError as err:
        first_bad = err.start
    # cp1252 leaves five bytes undefined; latin-1 reads every byte, so those few fall back to it
    try:
        text, encoding = data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        text, encoding = data.decode("latin-1"), "latin-1"
    return text, encoding, [f"{source}: not UTF-8 (byte {first_bad}); read as {encoding} (Windows-1252/Latin-1), "
                            "as Excel saves CSV: check accented characters in the records"]


def sniff_separator(text: str) -> str:
    """The separator of the header row: whichever of `,` `;` tab occurs most outside quotes (comma on a tie)."""
    line = text.split("\n", 1)[0]
    counts = {sep: _unquoted_count(line, sep) for sep in SEPARATORS}
    return max(SEPARATORS, key=lambda sep: (counts[sep], sep == ","))


def _unquoted_count(line: str, sep: str) -> int:
    count, quoted = 0, False
    for char in line:
        if char == '"':
            quoted = not quoted
        elif char == sep and not quoted:
            count += 1
    return count


def read_sheet_table(path: str | Path, required: Iterable[str]) -> SheetTable:
    """The rows of a CSV saved by a spreadsheet. Headers match case-insensitively and with spaces trimmed; fully
    blank rows are dropped. A missing required column is an InputError naming it."""
    source = "<stdin>" if str(path) == "-" else str(path)
    text, encoding, warnings = decode_sheet(read_bytes(Path(path)), source)
    separator = sniff_separator(text)
    allow_long_cells()  # an answer on the sheet can be longer than csv's default limit
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=separator)
    header = next(reader, None)
    if header is None or not any(cell.strip() for cell in header):
        raise InputError("empty sheet (no header row)", path=source)
    names = [cell.strip().lower() for cell in header]
    missing = [name for name in required if name not in names]
    if missing:
        found = ", ".join(n for n in names if n) or "(none)"
        raise InputError(f"missing column (columns found with {SEPARATOR_NAMES[separator]} as separator: {found})",
                         path=source, field=missing[0], more=len(missing) - 1)
    rows: list[tuple[int, dict[str, str]]] = []
    for number, cells in enumerate(reader, start=2):
        if not any(cell.strip() for cell in cells):
            continue  # a blank row: spreadsheets keep them at the end, people leave them between blocks
        row = {name: "" for name in names if name}
        for name, cell in zip(names, cells, strict=False):
            if name:
                row[name] = from_spreadsheet(cell)  # the `'` swapjudge put before a formula-like text, taken off
        if len(cells) > len(names) and any(cell.strip() for cell in cells[len(names):]):
            row["\x00extra"] = "yes"  # cells beyond the header: the caller names the row
        rows.append((number, row))
    return SheetTable(source, tuple(rows), separator, encoding, tuple(warnings))
