"""The spawn port: how a part that must not import the application (a channel plugin)
starts a background task that the application still owns (named, tracked, its failure
reported, cancelled on stop). ``orchestrator.supervisor.TaskSupervisor`` satisfies it."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, Protocol


class Spawner(Protocol):
    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]: ...


async def cancel_and_wait(*tasks: asyncio.Task[Any] | None) -> None:
    """Cancel ``tasks`` and wait until each has ended, in the order given (pass them in
    reverse start order). Their failures were already reported by whoever owns them."""
    current = asyncio.current_task()
    asked = current.cancelling() if current is not None else 0
    for task in tasks:
        if task is None:
            continue
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            if current is not None and current.cancelling() > asked:
                raise  # we were cancelled while waiting, not just the task: pass it on
        except Exception:  # reported by the owner's done callback
            pass
