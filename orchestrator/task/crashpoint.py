"""Named crash points for the crash tests (tests/crash/): with
``FETCH_CRASH_AT=<name>[,<name>...]`` the process dies at the first of those points it
reaches, exactly as a SIGKILL would leave it (``os._exit``: no cleanup, no flush).
Unset, a crash point costs one test."""

from __future__ import annotations

import os
import signal

_AT = frozenset(filter(None, os.environ.get("FETCH_CRASH_AT", "").split(",")))


def crash_point(name: str) -> None:
    if _AT and name in _AT:
        os._exit(137)


def kill_point(name: str) -> None:
    """Like ``crash_point``, by a real SIGKILL to this process (the kernel ends it: not
    even ``os._exit``'s own code runs)."""
    if _AT and name in _AT:
        os.kill(os.getpid(), signal.SIGKILL)
