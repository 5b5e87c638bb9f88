"""/cost's port (instincts ``Cost``): the ledger's report for the asking chat, its
running task included."""

from __future__ import annotations

from core.events import SessionKey
from orchestrator.costs.ledger import CostLedger
from orchestrator.costs.report import cost_report
from orchestrator.store.usage import UsagePort
from orchestrator.task.runner import TaskRunner


class CostFacade:
    def __init__(self, ledger: CostLedger | None, usage: UsagePort, runner: TaskRunner) -> None:
        self._ledger = ledger
        self._usage = usage
        self._runner = runner

    async def report(self, key: SessionKey) -> str:
        if self._ledger is None:
            return "💰 Costs are not recorded in this Fetch."
        running = self._runner.running(key)
        task = running.task_id if running is not None else None
        return await cost_report(self._ledger, self._usage, now=self._ledger.now, task=task)
