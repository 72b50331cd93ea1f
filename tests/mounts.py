"""Real file systems for the store's failure tests: a small tmpfs that fills up, a read-only bind mount.

Each command runs in a private mount namespace (`unshare -m` as root, `unshare -rm` as any other user where
unprivileged user namespaces are allowed), so a mount never outlives its command nor shows outside it. The CLI
runs there as a real subprocess on this checkout's code; what a test inspects afterwards is copied out of the
mount first (a tmpfs vanishes with its namespace).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def swapjudge(*args: str | Path) -> str:
    """The shell words that run the CLI of this checkout."""
    return shlex.join([sys.executable, "-m", "swapjudge", *map(str, args)])


def in_namespace(script: str, *, cwd: Path, timeout_s: float = 180) -> subprocess.CompletedProcess[str]:
    """`script` (sh) in a private mount namespace. Fails (never skips) where no namespace can be made: these tests
    need root or unprivileged user namespaces."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.fail("these tests mount file systems: they need util-linux's `unshare`")
    flags = ["-m"] if os.geteuid() == 0 else ["-r", "-m"]
    done = subprocess.run([unshare, *flags, "sh", "-c", script], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(SRC)}, timeout=timeout_s)
    if "unshare failed" in done.stderr or "unshare:" in done.stderr.split("\n", 1)[0]:
        pytest.fail(f"cannot make a private mount namespace (root or user namespaces needed): {done.stderr}")
    return done


def tmpfs(mount_point: Path, size_kib: int) -> str:
    """The shell line mounting a tmpfs of `size_kib` KiB on `mount_point` (an empty folder)."""
    return f"mount -t tmpfs -o size={size_kib}k tmpfs {shlex.quote(str(mount_point))}"


def read_only_bind(source: Path, mount_point: Path) -> str:
    """The shell line showing `source` at `mount_point` read-only (writes there fail with EROFS, even for root)."""
    src, dst = shlex.quote(str(source)), shlex.quote(str(mount_point))
    return f"mount --bind {src} {dst} && mount -o remount,bind,ro {dst}"


def fill(directory: Path, leave_bytes: int) -> str:
    """The shell line filling the file system under `directory` so that about `leave_bytes` stay free (tmpfs
    counts whole 4 KiB pages)."""
    d = shlex.quote(str(directory))
    return (f"free=$(( $(stat -f -c '%a*%S' {d}) - {leave_bytes} )); "
            f"[ $free -gt 0 ] && head -c $free /dev/zero > {d}/.filler; true")


def copy_out(mount_point: Path, out: Path) -> str:
    """The shell line copying what a tmpfs holds to `out` before the namespace (and the tmpfs) ends."""
    return f"cp -a {shlex.quote(str(mount_point))}/. {shlex.quote(str(out))}/"


def script(*lines: str, keep_status_of: int | None = None) -> str:
    """Shell lines run in order; with `keep_status_of`, the script exits with that line's status (the lines after
    it, e.g. `copy_out`, still run)."""
    if keep_status_of is None:
        return " && ".join(lines)
    before, main, after = lines[:keep_status_of], lines[keep_status_of], lines[keep_status_of + 1:]
    parts: Sequence[str] = [*(f"{line} || exit 99" for line in before), f"{main}; rc=$?", *after, "exit $rc"]
    return "; ".join(parts)
