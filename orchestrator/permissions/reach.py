"""Sends to the owner that failed: a diff or a permission question nobody saw. Each is
logged and kept for /status (the last few), so "why did nothing happen" has an answer
in any chat; what failed was undone where it happened (no approval left waiting)."""

from __future__ import annotations

import logging
import time
from collections import deque

log = logging.getLogger(__name__)


class OwnerReach:
    def __init__(self, keep: int = 5) -> None:
        self.failed: deque[tuple[float, str]] = deque(maxlen=keep)

    def failed_to(self, what: str, err: BaseException) -> str:
        """Record that ``what`` did not reach the owner; the line the sender is told."""
        why = str(err) or type(err).__name__
        line = f"I could not reach the owner with {what}: {why}"
        log.warning("%s", line)
        self.failed.append((time.time(), line))
        return line

    def lines(self) -> list[str]:
        return [
            f"📵 {line} ({time.strftime('%H:%M', time.localtime(ts))})" for ts, line in self.failed
        ]
