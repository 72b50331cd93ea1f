"""Item ids, system names and judge names with ANSI or OSC sequences in them reach the terminal escaped: every C0
and C1 control but the newline, in every value a command prints (tables, sentences, notes, Markdown, errors),
while rich's own styling still works and data written to `-o -` stays byte for byte what a file gets."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.table import Table
from rich.text import Text

from swapjudge.cli.terminal import EscapingStream, SafeConsole, escape_controls

SRC = str(Path(__file__).resolve().parents[2] / "src")
BLINK = "sys\x1b[5;31mBLINK\x1b[0m"  # blinking red
LINK = "other\x1b]8;;http://attacker.example/\x07click\x1b]8;;\x07"  # a hyperlink (OSC 8)
TITLE = "osc\x1b]0;window title"  # an unterminated OSC: it swallows what follows
JUDGE = "judge\x9b31mred"  # C1 CSI
ITEM = "q\x1b[2J"  # clear the screen


def _raw_controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) < 0xA0]


def test_escape_controls_escapes_c0_and_c1_but_the_newline() -> None:
    every = "".join(chr(c) for c in range(0xA0))
    out = escape_controls(every)
    assert _raw_controls(out) == [] and out.count("\n") == 1
    assert "\\x1b" in out and "\\x9b" in out and "\\x7f" in out and "\\x00" in out and "\\t" in out and "\\r" in out
    printable = "".join(chr(c) for c in range(0x20, 0x7F)) + "é ü — 中文 \u00a0"
    assert escape_controls(printable) == printable


def _records(directory: Path) -> Path:
    rows = []
    for i in range(10):
        item = ITEM if i == 0 else f"q{i}"
        for first, second, verdict in ((BLINK, LINK, "first"), (LINK, BLINK, "second" if i % 3 else "first")):
            rows.append({"item": item, "first": first, "second": second, "verdict": verdict, "judge": JUDGE})
            rows.append({"item": item, "first": first if first == BLINK else TITLE,
                         "second": second if second == BLINK else TITLE, "verdict": verdict, "judge": "second"})
    path = directory / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _cli(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "swapjudge", *args], cwd=cwd, capture_output=True, text=True,
                          encoding="utf-8", env={**os.environ, "PYTHONPATH": SRC, "COLUMNS": "120", **env},
                          timeout=180)


COMMANDS = [
    ("analyze", "records.jsonl"),
    ("analyze", "records.jsonl", "-f", "markdown"),
    ("analyze", "records.jsonl", "--judge", "second", "--a", BLINK, "--b", TITLE),
    ("analyze", "records.jsonl", "--a", "nope"),  # an error that lists the systems
    ("rank", "records.jsonl", "--judge", "second", "--min-consistency", "0", "--bootstrap", "20"),
    ("rank", "records.jsonl", "--judge", "second", "--min-consistency", "0", "--bootstrap", "20", "-f", "markdown"),
    ("segments", "records.jsonl", "--by", "judge"),
    ("agreement", "records.jsonl"),
]


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a[:1] + a[2:3]) for a in COMMANDS])
def test_no_command_prints_a_raw_control_character(tmp_path: Path, args: tuple[str, ...]) -> None:
    _records(tmp_path)
    done = _cli(tmp_path, *args)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1, 2)
    assert _raw_controls(done.stdout) == [] and _raw_controls(done.stderr) == [], (done.stdout, done.stderr)
    shown = done.stdout + done.stderr
    assert any(escape_controls(name) in shown.replace("\n", "") for name in (BLINK, LINK, TITLE, JUDGE, ITEM)), shown


def test_rich_styling_still_reaches_a_terminal(tmp_path: Path) -> None:
    _records(tmp_path)
    done = _cli(tmp_path, "analyze", "records.jsonl", "--judge", JUDGE, FORCE_COLOR="1", TERM="xterm-256color")
    assert done.returncode == 1  # the gate fails: 6 of 10 pairs consistent
    out = done.stdout
    assert "\x1b[1;31m" in out  # rich's bold red of the failed gate: its styling is there ...
    for raw in ("\x1b[5;31m", "\x1b]", "\x9b", "\x1b[2J", "\x07"):  # ... and none of the values' sequences
        assert raw not in out
    unstyled = re.sub("\x1b\\[[0-9;]*m", "", out)  # rich's own styling taken off (its highlighter splits the text)
    assert "judge\\x9b31mred" in unstyled and "\\x1b[5;31mBLINK\\x1b[0m" in unstyled


def test_the_consoles_escape_text_they_did_not_parse() -> None:
    buffer = io.StringIO()
    console = SafeConsole(file=buffer, width=200, force_terminal=True, color_system="standard")
    table = Table("system", "note")
    table.add_row(BLINK, Text(LINK, style="bold"))
    console.print(table)
    console.print(Text(TITLE + " and more", style="red"), "[green]ok[/]", ITEM)
    out = buffer.getvalue()
    without_style = out.replace("\x1b[1m", "").replace("\x1b[31m", "").replace("\x1b[32m", "").replace("\x1b[0m", "")
    assert _raw_controls(without_style) == [] and "\x1b[32m" in out and "\x1b[31m" in out
    for value in (BLINK, LINK, TITLE, ITEM):  # rich's Text drops BEL itself; the other controls show escaped
        assert escape_controls(value).replace("\\x07", "") in without_style.replace("\\x07", "")
    # a value escaped after layout makes its line longer: the line is kept whole, not cut at the width
    table_lines = re.sub("\x1b\\[[0-9;]*m", "", out).splitlines()[:5]
    assert [line[-1] for line in table_lines] == ["┓", "┃", "┩", "│", "┘"]


def test_data_on_stdout_is_written_as_a_file_gets_it(tmp_path: Path) -> None:
    """`-o -` is data, not text for the terminal: the same bytes as the file, C1 characters included."""
    table = tmp_path / "calls.csv"
    table.write_text("q,left,right,winner\n" + "".join(f"{JUDGE}{i},{BLINK},b,L\n{JUDGE}{i},b,{BLINK},R\n"
                                                        for i in range(3)), encoding="utf-8")
    args = ("import", "csv", "calls.csv", "--item", "q", "--first", "left", "--second", "right", "--verdict", "winner",
            "--map", "L=first,R=second")
    to_file = _cli(tmp_path, *args, "-o", "out.jsonl")
    to_stdout = subprocess.run([sys.executable, "-m", "swapjudge", *args, "-o", "-"], cwd=tmp_path,
                               capture_output=True, env={**os.environ, "PYTHONPATH": SRC}, timeout=120)
    assert to_file.returncode == to_stdout.returncode == 0, to_stdout.stderr
    assert to_stdout.stdout == (tmp_path / "out.jsonl").read_bytes()
    assert "\x9b".encode() in to_stdout.stdout  # C1 kept in the data; JSON escapes C0 itself


def test_the_stream_wrapper_hands_bytes_and_rich_the_stream_below() -> None:
    raw = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    stream = EscapingStream(raw)
    print(f"item {ITEM}", file=stream)
    stream.flush()
    assert raw.buffer.getvalue() == b"item q\\x1b[2J\n"
    assert stream.buffer is raw.buffer and stream.rich_proxied_file is raw
    del stream  # collecting the wrapper leaves the stream below open
    assert not raw.closed
