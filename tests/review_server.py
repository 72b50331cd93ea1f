"""`swapjudge review serve` as a real subprocess on 127.0.0.1 for tests and the benchmark: started with --port 0,
its printed `NAME: URL` lines parsed, stopped (or killed) on exit."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Self
from urllib.parse import parse_qs, urlsplit

import httpx

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}


def write_pairs(path: Path, items: Sequence[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for it in items:
            f.write(json.dumps(it, ensure_ascii=False) + "\n")
    return path


def simple_pairs(path: Path, n: int, a: str = "sysALPHA", b: str = "sysBETA") -> Path:
    """n items, each with two answers whose text names neither system."""
    return write_pairs(path, [{"item": f"q{i:03d}", "prompt": f"Question number {i}: explain it.",
                               "answers": {a: f"first-kind answer to {i}", b: f"second-kind answer to {i}"}}
                              for i in range(n)])


class ReviewServer:
    """The review server in a subprocess. `links[name]` is each reviewer's URL, `tokens[name]` its token,
    `owner` the owner's token, `base` the server's URL."""

    def __init__(self, pairs: Path, store: Path, reviewers: Sequence[str], *options: str) -> None:
        self.args = [sys.executable, "-m", "swapjudge", "review", "serve", str(pairs), "--store", str(store),
                     "--reviewers", ",".join(reviewers), "--port", "0", *options]
        self.reviewers = list(reviewers)
        self.links: dict[str, str] = {}
        self.tokens: dict[str, str] = {}
        self.owner = ""
        self.base = ""
        self.stderr_lines: list[str] = []
        self.stdout_lines: list[str] = []
        self.proc: subprocess.Popen[str] | None = None

    def start(self, timeout: float = 60.0) -> Self:
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=ENV, cwd=ROOT)
        lines: queue.Queue[tuple[str, str]] = queue.Queue()

        def pump(stream: IO[str], name: str, keep: list[str]) -> None:
            for line in stream:
                keep.append(line.rstrip("\n"))
                lines.put((name, line.rstrip("\n")))

        assert self.proc.stdout is not None and self.proc.stderr is not None
        threading.Thread(target=pump, args=(self.proc.stdout, "out", self.stdout_lines), daemon=True).start()
        threading.Thread(target=pump, args=(self.proc.stderr, "err", self.stderr_lines), daemon=True).start()
        deadline = time.monotonic() + timeout
        while len(self.links) < len(self.reviewers) or not self.owner:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                time.sleep(0.2)
                raise RuntimeError("review server did not start: " + "\n".join(self.stderr_lines[-20:]))
            try:
                stream, line = lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            name, sep, url = line.partition(": ")
            if stream == "out" and sep:
                self.links[name] = url
                self.tokens[name] = parse_qs(urlsplit(url).query)["token"][0]
            elif stream == "err" and line.startswith("status page (owner only): "):
                self.owner = parse_qs(urlsplit(url).query)["token"][0]
        first = urlsplit(next(iter(self.links.values())))
        self.base = f"{first.scheme}://{first.netloc}"
        while time.monotonic() < deadline:  # listening from the start; wait until it answers
            try:
                httpx.get(self.base + "/", timeout=2.0)
                return self
            except httpx.TransportError:
                time.sleep(0.1)
        raise RuntimeError("review server does not answer")

    @property
    def port(self) -> int:
        return int(urlsplit(self.base).port or 0)

    def client(self, reviewer: str) -> httpx.Client:
        token = self.owner if reviewer == "owner" else self.tokens[reviewer]
        return httpx.Client(base_url=self.base, headers={"Authorization": f"Bearer {token}"}, timeout=30.0)

    def kill(self) -> None:
        """SIGKILL: no shutdown of any kind."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        return int(self.proc.returncode)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def vote(client: httpx.Client, task: str, choice: str) -> httpx.Response:
    return client.post("/api/vote", json={"task": task, "choice": choice})
