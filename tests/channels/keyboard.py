"""The owner's keyboard for a terminal that reads stdin: a pipe stands in for it."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def keyboard(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """``sys.stdin`` is a pipe, open until the block ends; yields the end to type into.
    At the end: EOF, so the reader thread (a daemon, not a task) ends, and it is joined."""
    read_end, write_end = os.pipe()
    stdin = os.fdopen(read_end, "r")
    monkeypatch.setattr(sys, "stdin", stdin)
    try:
        yield write_end
    finally:
        os.close(write_end)
        for thread in threading.enumerate():
            if thread.name == "terminal-stdin":
                thread.join(5)
        stdin.close()
