"""Storage failures as the sender should hear them.

A full disk, a read-only file or a damaged database is not a bug in a handler: the
sender is told what happened and that nothing was done, and Fetch keeps serving (it
works again once the cause is gone). ``storage_error`` tells such a failure from any
other exception and words it for a phone."""

from __future__ import annotations

import errno
import sqlite3

from core.errors import StoreError

# What the store's callers may see from SQLite or from a file write.
STORAGE_ERRORS: tuple[type[BaseException], ...] = (sqlite3.Error, OSError, StoreError)
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)


def _sqlite(err: BaseException) -> bool:
    """sqlite3's errors, or pysqlite3's (memory's driver: the same tree, another module)."""
    return any(
        cls.__module__.partition(".")[0] in ("sqlite3", "pysqlite3") for cls in type(err).__mro__
    )


def _cause(err: BaseException) -> str | None:
    if isinstance(err, OSError):
        if err.errno in _FULL:
            return "disk full?"
        if err.errno in _READ_ONLY:
            return "read-only files?"
        return "disk full or failing?" if err.errno == errno.EIO else None
    if not isinstance(err, StoreError) and not _sqlite(err):
        return None
    text = str(err).lower()
    if "full" in text:  # "database or disk is full"
        return "disk full?"
    if "disk i/o" in text:  # what SQLite says when a write fails (EFBIG, EIO, ...)
        return "disk full or failing?"
    if "readonly" in text or "read-only" in text:
        return "read-only files?"
    if "malformed" in text or "not a database" in text or "corrupt" in text:
        return "damaged database?"
    if "unreachable" in text:  # the PostgreSQL server went away (store/pg.py)
        return "database server unreachable?"
    return "database error"


def storage_error(err: BaseException) -> StoreError | None:
    """The phone-ready StoreError for a storage failure; None for anything else."""
    cause = _cause(err)
    if cause is None:
        return None
    return StoreError(
        f"I couldn't save that ({cause}) — nothing was done. Send it again once that is fixed."
    )
