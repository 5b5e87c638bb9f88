"""What a live process does for the processes that died next to it (PostgreSQL).

Several Fetch processes may share one PostgreSQL database (a rolling restart, a
scheduler process next to a chat process). Each is alive while its own connection holds
an advisory lock on its name (``PgDatabase.holder``, ``gone``): the server frees it the
moment the process's connection drops, a SIGKILL included, and never while the process
lives (a stalled process keeps its work, so nothing it still handles is taken twice).

Without this, a killed process's queued messages waited for the next start. ``TakeOver``
is an owned loop (started by the app after the channels, stopped before them) that every
``period`` seconds recovers the tasks gone processes left running (``recover``: each taken
over by one guarded UPDATE, ``WorkPort.adopt_tasks``, then reported and cleaned up as a
restart does), takes over the queued messages of gone processes (``InboxPort.adopt``:
one UPDATE guarded by the old holder, so of two survivors only one wins each row) and
hands them to ``replay`` (the gateway's normal path), then sends the held notices of the
channels this process runs (``deliver``: each a claim, ``outbox.py``). On SQLite one
process owns the file: the app does not start it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from core.tasks import Spawner, cancel_and_wait

log = logging.getLogger(__name__)

PERIOD = 5.0  # seconds between passes: how long a dead process's message may wait


class TakeOver:
    def __init__(
        self,
        adopt: Callable[[], Awaitable[list[dict[str, Any]]]],
        replay: Callable[[list[dict[str, Any]]], Awaitable[int]],
        deliver: Callable[[], Awaitable[int]],
        spawner: Spawner,
        period: float | None = None,
        recover: Callable[[], Awaitable[int]] | None = None,
    ) -> None:
        self._recover = recover
        self._adopt = adopt
        self._replay = replay
        self._deliver = deliver
        self._spawner = spawner
        self.period = PERIOD if period is None else period
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is None:
            self._task = self._spawner.spawn(self._loop(), name="store:take-over")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def once(self) -> tuple[int, int]:
        """One pass: (messages taken over and replayed, held notices sent). The gone
        processes' cut-short tasks first (``recover``): their chats are idle again
        before their messages run."""
        if self._recover is not None and (recovered := await self._recover()):
            log.info("recovered %d task(s) a stopped process left running", recovered)
        taken = await self._adopt()
        replayed = await self._replay(taken) if taken else 0
        if replayed:
            log.info("took over %d queued message(s) of a stopped process", replayed)
        return replayed, await self._deliver()

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.period)
            try:
                await self.once()
            except Exception as err:  # the server away for a moment: the next pass tries
                log.warning("take-over of stopped processes' work failed: %s", err)
