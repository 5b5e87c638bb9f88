"""/stop's port: end a chat's running task (instincts ``Tasks``)."""

from __future__ import annotations

from core.events import SessionKey
from instincts.contract import StoppedTask
from orchestrator.runner import TaskRunner


class TasksFacade:
    def __init__(self, runner: TaskRunner) -> None:
        self._runner = runner

    async def stop(self, key: SessionKey) -> StoppedTask | None:
        result = await self._runner.stop(key)
        if result is None:
            return None
        return StoppedTask(result.task_id, result.harness, result.kill_seconds,
                           len(result.leftover_pids))
