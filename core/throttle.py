"""Log lines about strangers, rate-limited: a flood must not fill the disk through the
log. One budget for all such lines (not one per sender: strangers are unbounded, and
memory per stranger would be a trace of them too); what was held back is counted and
said in the next line that passes."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable


class LogThrottle:
    def __init__(
        self,
        logger: logging.Logger,
        per_window: int = 10,
        window: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log, self._per_window, self._window, self._clock = logger, per_window, window, clock
        self._started = -window
        self._used = 0
        self.suppressed = 0

    def info(self, message: str, *args: object) -> None:
        now = self._clock()
        if now - self._started >= self._window:
            self._started, self._used = now, 0
        if self._used >= self._per_window:
            self.suppressed += 1
            return
        self._used += 1
        if self.suppressed:
            message += " (%d similar lines suppressed)"
            args = (*args, self.suppressed)
            self.suppressed = 0
        self._log.info(message, *args)
