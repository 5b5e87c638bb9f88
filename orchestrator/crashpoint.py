"""Named crash points for the crash tests (tests/crash/): with ``FETCH_CRASH_AT=<name>``
the process dies at that point exactly as a SIGKILL would leave it (``os._exit``: no
cleanup, no flush). Unset, a crash point costs one comparison."""

from __future__ import annotations

import os

_AT = os.environ.get("FETCH_CRASH_AT", "")


def crash_point(name: str) -> None:
    if _AT and name == _AT:
        os._exit(137)
