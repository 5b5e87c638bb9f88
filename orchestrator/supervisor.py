"""Every background task is owned: named, tracked, its failure reported, cancelled on stop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from contextlib import suppress
from typing import Any

log = logging.getLogger(__name__)

ErrorHandler = Callable[[str, BaseException], None]


class TaskSupervisor:
    def __init__(self, on_error: ErrorHandler | None = None) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._on_error = on_error
        self._closed = False

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
        if self._closed:
            coro.close()  # never leave a "coroutine was never awaited" behind
            raise RuntimeError(f"supervisor is stopped; refused to start {name}")
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        err = task.exception()
        if err is not None:
            log.error("task %s failed", task.get_name(), exc_info=err)
            if self._on_error is not None:
                self._on_error(task.get_name(), err)

    def running(self, prefix: str = "") -> list[asyncio.Task[Any]]:
        return [t for t in self._tasks if t.get_name().startswith(prefix)]

    async def stop(self, grace: float = 2.0) -> None:
        """Stop intake, give tasks ``grace`` seconds, then cancel and await them."""
        self._closed = True
        pending = set(self._tasks)
        if pending and grace > 0:
            _done, pending = await asyncio.wait(pending, timeout=grace)
        for task in pending:
            task.cancel()
        for task in pending:
            with suppress(asyncio.CancelledError, Exception):
                await task
