"""One Fetch per home: an exclusive ``flock`` on ``FETCH_HOME/fetch.lock``, held for the
life of the ``fetch`` process.

Two processes on one home would both answer every message and race on the same
repositories. A lock, not a pid file, for the reason the scheduler's lock gives
(orchestrator/scheduler/lock.py): the kernel drops it the instant the holder dies, SIGKILL
included, so a stale file never blocks a restart. The file says who holds it, for the
refusal the second process prints.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from core.errors import FetchError


class HomeBusy(FetchError):
    """Another process runs Fetch on this home."""


class HomeLock:
    def __init__(self, home: Path) -> None:
        self.path = home / "fetch.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Hold the lock, or raise ``HomeBusy`` naming the holder's pid."""
        if self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._holder(fd)
            os.close(fd)
            raise HomeBusy(
                f"Fetch is already running on this home ({holder}): {self.path.parent}"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    @staticmethod
    def _holder(fd: int) -> str:
        # The holder writes its pid right after taking the lock; a read in between
        # finds nothing, hence the fallback.
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        return f"pid {text}" if text.isdigit() else "another process"

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing drops the flock; the file stays for the next holder
