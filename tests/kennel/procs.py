"""What a test asks /proc about processes, read on its own (not through the kennel's code,
whose word the tests check)."""

from __future__ import annotations

from pathlib import Path


def running(pid: int) -> bool:
    """The process exists and has not ended (a zombie has: only its exit status waits)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in {"Z", "X"}
