"""/harness's port: the coding CLIs and whether each can run here (instincts
``Harnesses``)."""

from __future__ import annotations

from harnesses.base import Harness, HarnessRegistry
from instincts.contract import HarnessInfo
from orchestrator.task.runner import TaskRunner


class HarnessesFacade:
    def __init__(self, registry: HarnessRegistry, runner: TaskRunner) -> None:
        self._registry = registry
        self._runner = runner

    def _info(self, harness: Harness) -> HarnessInfo:
        avail = self._runner.availability(harness)
        return HarnessInfo(harness.name, avail.usable, avail.detail)

    def default(self) -> str:
        return self._runner.default_harness()

    def all(self) -> list[HarnessInfo]:
        return [self._info(h) for h in self._registry.all()]

    def get(self, name: str) -> HarnessInfo:
        return self._info(self._registry.get(name))
