"""Offline engines: request files in OpenAI's batch input format written to `batch_dir`, output files in its
batch output format read back from there. vLLM's `run_batch` entry point reads and writes exactly these files
(docs/scale.md), and so can a Ray Data pipeline over many nodes; swapjudge keeps the bookkeeping.

For a submission KEY the request file is `swapjudge-KEY.requests.jsonl`; the engine writes its results to
`swapjudge-KEY.output.jsonl` (and may write failed lines to `swapjudge-KEY.errors.jsonl`)."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, BinaryIO

from swapjudge.judges.batch import BatchState, BatchSubmission, ResultLine
from swapjudge.judges.openai import OpenAIJudge
from swapjudge.judges.openai_batch import chat_line, parse_output_line


def request_file(directory: Path, key: str) -> Path:
    return directory / f"swapjudge-{key}.requests.jsonl"


def output_file(directory: Path, key: str) -> Path:
    return directory / f"swapjudge-{key}.output.jsonl"


def error_file(directory: Path, key: str) -> Path:
    return directory / f"swapjudge-{key}.errors.jsonl"


class FileBatches:
    name = "files"
    judge = OpenAIJudge  # the engine serves an OpenAI-compatible API: its bodies, its parser
    max_requests = 50_000  # one file per 50,000 requests keeps files a worker can hold
    max_bytes = 200 * 1024 * 1024
    line_overhead = 0

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def line(self, cid: str, body: dict[str, Any]) -> bytes:
        return chat_line(cid, body)

    async def submit(self, sub: BatchSubmission, payload: BinaryIO, on_uploaded: Callable[[str], None]) -> str:
        self.directory.mkdir(parents=True, exist_ok=True)
        target = request_file(self.directory, sub.key)
        partial = target.with_suffix(".partial")
        with partial.open("wb") as out:  # the engine sees the whole file or none (rename is atomic)
            shutil.copyfileobj(payload, out)
        os.replace(partial, target)
        return request_file(self.directory, sub.key).name

    async def find(self, sub: BatchSubmission, known: set[str]) -> str | None:
        path = request_file(self.directory, sub.key)
        return path.name if path.exists() else None

    async def status(self, batch_id: str) -> BatchState:
        key = batch_id.removeprefix("swapjudge-").removesuffix(".requests.jsonl")
        done = output_file(self.directory, key).exists()
        return BatchState(ended=done, provider_status="output found" if done else "waiting for output",
                          raw={"key": key})

    async def results(self, batch_id: str, state: BatchState) -> AsyncIterator[ResultLine]:
        key = str(state.raw["key"])
        for path in (output_file(self.directory, key), error_file(self.directory, key)):
            if not path.exists():
                continue
            with path.open("rb") as fh:
                for line in fh:
                    if line.strip():
                        parsed = parse_output_line(line)
                        if parsed is not None:
                            yield parsed

    async def aclose(self) -> None:
        return None
