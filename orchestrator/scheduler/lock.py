"""One scheduler per database: an exclusive ``flock`` on a file beside ``fetch.db``.

A lock, not a lease row: the kernel drops it the instant the holder dies (SIGKILL
included), so a restarted Fetch takes over at once instead of waiting for a lease to run
out, and holding it proves every earlier holder is gone. It works wherever the database
itself is safe to share (one machine; SQLite's WAL needs that anyway), containers on one
host included. The file says who holds it, for the message the second process shows.

On PostgreSQL (``store.url``) there is no such file to share and no need for one: every
process schedules (``SharedLock``), the claim being a row lock (``FOR UPDATE SKIP LOCKED``)
and a run's lease the only hold on it, so a dead process's runs are taken over when their
leases run out.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path


class SchedulerLock:
    def __init__(self, db_path: Path) -> None:
        self.path = db_path.with_name(db_path.name + ".scheduler.lock")
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> bool:
        """True if this process now runs the scheduler; False if another one does."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(
            fd,
            json.dumps(
                {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
            ).encode(),
        )
        self._fd = fd
        return True

    def holder(self) -> str:
        """Who holds the lock, in words (best effort: the file may be mid-write)."""
        try:
            info = json.loads(self.path.read_text(encoding="utf-8"))
            since = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(info["since"])))
            return f"pid {info['pid']} on {info['host']}, since {since}"
        except (OSError, ValueError, KeyError, TypeError):
            return "another process"

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


class SharedLock:
    """The scheduler's "lock" on PostgreSQL: always held; the rows are the locks."""

    path = Path("postgresql")  # nothing on disk; named in no message

    def __init__(self) -> None:
        self._held = False

    @property
    def held(self) -> bool:
        return self._held

    def acquire(self) -> bool:
        self._held = True
        return True

    def holder(self) -> str:
        return "every process on this PostgreSQL database"

    def release(self) -> None:
        self._held = False
