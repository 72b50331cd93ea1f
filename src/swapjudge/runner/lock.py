"""Run ownership: one process at a time judges a given run of a store, so no call is ever paid twice.

The lock is an `flock` on a small file beside the store, one file per (configuration, pairs) run. The kernel
drops an `flock` when its process dies, even by `kill -9`, so a lock file left behind is stale by
construction: the next process takes it over and says so. The file records the owner's pid, host and start
time so that a second process can name the one it is waiting for.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from swapjudge.errors import SwapjudgeError


class RunLockedError(SwapjudgeError):
    """Another live process owns this run."""


@dataclass(frozen=True)
class Owner:
    pid: int | None
    host: str | None
    started: str | None

    def describe(self) -> str:
        if self.pid is None:
            return "another swapjudge process"
        where = f" on {self.host}" if self.host and self.host != socket.gethostname() else ""
        since = f", started {self.started}" if self.started else ""
        return f"swapjudge process {self.pid}{where}{since}"


def lock_path(store_path: Path, run_key: str) -> Path:
    """The lock file of one run of a store: beside the store, named after both."""
    digest = hashlib.sha256(run_key.encode()).hexdigest()[:16]
    return store_path.with_name(f"{store_path.name}.run-{digest}.lock")


def _read_owner(handle: IO[str]) -> Owner:
    handle.seek(0)
    try:
        data = json.loads(handle.read() or "{}")
    except ValueError:
        data = {}
    return Owner(pid=data.get("pid"), host=data.get("host"), started=data.get("started"))


class RunLock:
    """Held for a run's lifetime; `acquire` raises RunLockedError (or waits, given `wait`) when it is taken."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[str] | None = None
        self.took_over: Owner | None = None  # the dead owner of a stale lock this process took over

    def acquire(self, *, wait: bool = False, on_wait: Callable[[Owner], None] | None = None,
                poll_s: float = 0.2) -> None:
        try:
            handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held until release()
        except OSError as err:
            raise SwapjudgeError(f"{self.path}: cannot create the run lock: {err.strerror}") from None
        announced = False
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                owner = _read_owner(handle)
                if not wait:
                    handle.close()
                    raise RunLockedError(
                        f"this run is already being judged by {owner.describe()} (lock {self.path}); "
                        "run again when it ends, or give {wait} to wait for it", arguments=("wait",)
                    ) from None
                if not announced and on_wait is not None:
                    on_wait(owner)
                announced = True
                time.sleep(poll_s)
        previous = _read_owner(handle)
        # A recorded owner that is not us means its process died holding the run: a stale lock, now ours.
        if previous.pid is not None and previous.pid != os.getpid():
            self.took_over = previous
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "started": datetime.now(UTC).isoformat(timespec="seconds")}))
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        if self._handle is None:
            return
        # Empty the file before unlocking: an empty file is a lock released cleanly, not a stale one.
        self._handle.seek(0)
        self._handle.truncate()
        self._handle.flush()
        fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
        self._handle.close()
        self._handle = None
