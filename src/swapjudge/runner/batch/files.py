"""Offline engines: request files in OpenAI's batch input format written to `batch_dir`, output files in its
batch output format read back from there. vLLM's `run_batch` entry point reads and writes exactly these files
(docs/scale.md), and so can a Ray Data pipeline over many nodes; swapjudge keeps the bookkeeping.

For a submission KEY the request file is `swapjudge-KEY.requests.jsonl`; the engine writes its results to
`swapjudge-KEY.output.jsonl` (and may write failed lines to `swapjudge-KEY.errors.jsonl`).

An output file may be read while the engine still writes it: vLLM's run_batch opens it when it starts and writes
its lines in request order as they finish. So an output file is collected only when it is complete: while
`swapjudge-KEY.output.jsonl.partial` exists (the engine writes there and renames when done) it is not read at
all, and a file with fewer answered requests than were asked (or a cut last line) is stored as far as it goes
and read again on the next run (the batch engine does that: `grows`). Anything at those paths that is not a
regular file (a folder, a FIFO) is skipped with a note: opening a FIFO would block the run."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from swapjudge.errors import SwapjudgeError
from swapjudge.judges.batch import BatchState, BatchSubmission, Result, ResultLine, UnreadableLine
from swapjudge.judges.openai import OpenAIJudge
from swapjudge.judges.openai_batch import chat_line, parse_output_line

PARTIAL = ".partial"  # the engine writes `OUTPUT.partial` and renames it to OUTPUT when complete


def request_file(directory: Path, key: str) -> Path:
    return directory / f"swapjudge-{key}.requests.jsonl"


def output_file(directory: Path, key: str) -> Path:
    return directory / f"swapjudge-{key}.output.jsonl"


def error_file(directory: Path, key: str) -> Path:
    return directory / f"swapjudge-{key}.errors.jsonl"


def _kind(path: Path) -> str | None:
    """None when nothing is at `path`; "file" for a regular file (a link to one too); else what it is."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    except OSError as err:
        return f"unreadable ({err.strerror})"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    return "not a regular file"


@contextlib.contextmanager
def _open_regular(path: Path) -> Iterator[BinaryIO | None]:
    """`path` opened for reading when it is a regular file, else None. O_NONBLOCK: a FIFO put there after the
    check must not block the open; fstat then tells what was opened."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        yield None
        return
    except OSError as err:
        raise SwapjudgeError(f"cannot read {path}: {err.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        yield None
        return
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as fh:
        yield fh


def _lines(fh: BinaryIO) -> Iterator[tuple[bytes, bool]]:
    """(line, complete) for each non-blank line; complete is False for a last line without its newline."""
    for raw in fh:
        if raw.strip():
            yield raw.rstrip(b"\r\n"), raw.endswith(b"\n")


class FileBatches:
    name = "files"
    judge = OpenAIJudge  # the engine serves an OpenAI-compatible API: its bodies, its parser
    max_requests = 50_000  # one file per 50,000 requests keeps files a worker can hold
    max_bytes = 200 * 1024 * 1024
    line_overhead = 0
    grows = True  # an engine may still be writing the output file
    checks_model = True  # the engine serves the name it is given: a reply naming another model is not this judge's

    def __init__(self, directory: Path, *, model: str | None = None) -> None:
        kind = _kind(directory)
        if kind not in (None, "a folder"):
            raise SwapjudgeError(f"judge.batch_dir {directory} is {'a file' if kind == 'file' else kind}, not a folder")
        self.directory = directory
        self.model = model

    def line(self, cid: str, body: dict[str, Any]) -> bytes:
        return chat_line(cid, body)

    async def submit(self, sub: BatchSubmission, payload: BinaryIO, on_uploaded: Callable[[str], None]) -> str:
        target = request_file(self.directory, sub.key)
        partial = target.with_suffix(PARTIAL)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with partial.open("wb") as out:  # the engine sees the whole file or none (rename is atomic)
                shutil.copyfileobj(payload, out)
            os.replace(partial, target)
        except OSError as err:
            partial.unlink(missing_ok=True)  # a half-written request file is never left for the engine to find
            full = err.errno in (errno.ENOSPC, errno.EDQUOT)
            why = "disk full: nothing written (the run's calls are planned in the store; free space and run again)" \
                if full else err.strerror
            raise SwapjudgeError(f"cannot write the request file {target}: {why}") from None
        return target.name

    async def find(self, sub: BatchSubmission, known: set[str]) -> str | None:
        path = request_file(self.directory, sub.key)
        return path.name if _kind(path) == "file" else None

    async def status(self, batch_id: str) -> BatchState:
        key = batch_id.removeprefix("swapjudge-").removesuffix(".requests.jsonl")
        out = output_file(self.directory, key)
        if _kind(out.with_name(out.name + PARTIAL)) is not None:
            return BatchState(ended=False, provider_status="engine writing", raw={"key": key})
        kind = _kind(out)
        if kind is None:
            return BatchState(ended=False, provider_status="waiting for output", raw={"key": key})
        if kind != "file":
            return BatchState(ended=False, provider_status="waiting for output", raw={"key": key},
                              note=f"skipped {out}: {kind}, not a regular file")
        return BatchState(ended=True, provider_status="output found", raw={"key": key})

    async def results(self, batch_id: str, state: BatchState) -> AsyncIterator[Result]:
        key = str(state.raw["key"])
        for path in (output_file(self.directory, key), error_file(self.directory, key)):
            with _open_regular(path) as fh:
                if fh is None:
                    continue
                for line, complete in _lines(fh):
                    parsed = parse_output_line(line)
                    if parsed is None:
                        yield UnreadableLine(len(line), cut=not complete)
                    else:
                        yield self._explained(parsed)

    def _explained(self, res: ResultLine) -> ResultLine:
        """A failure that says the engine serves no such model gets the fix appended."""
        if res.failure and self.model and "does not exist" in res.failure and "404" in res.failure:
            return ResultLine(res.custom_id, None, f"{res.failure} (serve it under the name judge.model gives: "
                                                   f"run_batch --served-model-name {self.model})")
        return res

    async def aclose(self) -> None:
        return None
