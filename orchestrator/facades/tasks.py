"""/stop /pause /resume's port: end, hold or continue a chat's running task (instincts
``Tasks``)."""

from __future__ import annotations

from core.events import SessionKey
from instincts.contract import PausedTask, StoppedTask
from orchestrator.runner import PauseResult, TaskRunner


class TasksFacade:
    def __init__(self, runner: TaskRunner) -> None:
        self._runner = runner

    async def stop(self, key: SessionKey) -> StoppedTask | None:
        result = await self._runner.stop(key)
        if result is None:
            return None
        return StoppedTask(result.task_id, result.harness, result.kill_seconds,
                           len(result.leftover_pids))

    async def pause(self, key: SessionKey) -> PausedTask | None:
        return _plain(await self._runner.pause(key))

    async def resume(self, key: SessionKey) -> PausedTask | None:
        return _plain(await self._runner.resume(key))


def _plain(result: PauseResult | None) -> PausedTask | None:
    return None if result is None else PausedTask(result.task_id, result.harness,
                                                  result.processes)
