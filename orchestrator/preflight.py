"""Checks before start-up touches anything, and the one-line reason when start-up fails.

A home Fetch cannot write to, a database that is empty or not SQLite, a full disk: each
is something the owner fixes outside Fetch, so the answer is one clear line and exit code
2, never a traceback. An existing database is never replaced: SQLite would silently turn
a 0-byte ``fetch.db`` into a fresh one, losing every job and the commit history the owner
could still restore from a backup.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
from pathlib import Path

from core.errors import FetchError

SQLITE_MAGIC = b"SQLite format 3\x00"


class CannotStart(FetchError):
    """Start-up refused; the message is the whole explanation."""


def check_home(home: Path) -> None:
    """The home exists and Fetch can create files in it."""
    try:
        home.mkdir(parents=True, exist_ok=True)
        probe = home / f".fetch-write-test-{os.getpid()}"
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as err:  # named after the home, not the probe file
        raise CannotStart(describe(OSError(err.errno, err.strerror, str(home)))) from None


def check_database(db: Path) -> None:
    """An existing ``fetch.db`` must be a SQLite file with something in it."""
    try:
        if not db.exists():
            return
        with db.open("rb") as f:
            head = f.read(len(SQLITE_MAGIC))
        wal = db.with_name(db.name + "-wal")
        wal_size = wal.stat().st_size if wal.exists() else 0
    except OSError as err:
        raise CannotStart(describe(err, db)) from None
    if not head and wal_size == 0:  # WAL mode: a young database may live in -wal alone
        raise CannotStart(
            f"the database {db} is empty (0 bytes); not starting, so nothing is "
            "overwritten. Restore it from a backup, or move it away to start afresh."
        )
    if head and head != SQLITE_MAGIC:
        raise CannotStart(
            f"the database {db} is not a SQLite database (corrupt?); not starting, so "
            "nothing is overwritten. Restore it from a backup, or move it away to start "
            "afresh."
        )


def describe(err: BaseException, where: Path | None = None) -> str:
    """One line for an error that stopped start-up (OS and SQLite errors included)."""
    if isinstance(err, FetchError):
        cause = err.__cause__
        if isinstance(cause, OSError | sqlite3.Error) and not isinstance(err, CannotStart):
            return describe(cause, where)
        return str(err)
    if isinstance(err, OSError):
        place = err.filename or where
        if err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            return f"the disk is full (writing {place}); free some space and start again."
        if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return f"cannot write to {place} ({err.strerror}); check its owner and mode."
        return f"{place}: {err.strerror or err}"
    if isinstance(err, sqlite3.Error):
        text = str(err)
        if "full" in text or (where is not None and _nearly_full(where)):
            return f"the disk is full ({text}); free some space and start again."
        if "readonly" in text or "unable to open" in text:
            return f"the database cannot be written ({text}); check the home's owner and mode."
        return (
            f"the database failed ({text}); not starting, so nothing is overwritten. "
            "Restore it from a backup, or move it away to start afresh."
        )
    if isinstance(err, subprocess.CalledProcessError):
        said = err.stderr.decode(errors="replace") if isinstance(err.stderr, bytes) else ""
        last = said.strip().splitlines()[-1:] or [f"exit status {err.returncode}"]
        command = " ".join(str(a) for a in err.cmd[:2]) if isinstance(err.cmd, list) else ""
        if "No space left" in last[0]:
            return f"the disk is full ({command}: {last[0]}); free some space and start again."
        return f"{command} failed: {last[0]}"
    return f"{type(err).__name__}: {err} (details in fetch.log)"


def _nearly_full(path: Path) -> bool:
    """SQLite reports a full disk as "disk I/O error" when the WAL index cannot grow."""
    try:
        stat = os.statvfs(path)
    except OSError:
        return False
    return stat.f_bavail * stat.f_frsize < 1024 * 1024
