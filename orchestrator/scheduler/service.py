"""The scheduler's lifecycle as the app sees it (the implementation lands here)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from orchestrator.clock import Clock
from orchestrator.config import Settings
from orchestrator.events import Inbound
from orchestrator.messenger import Messenger
from orchestrator.store import Store
from orchestrator.supervisor import TaskSupervisor

Inject = Callable[[Inbound], Awaitable[None]]


class Scheduler:
    def __init__(
        self, settings: Settings, store: Store, inject: Inject, messenger: Messenger,
        supervisor: TaskSupervisor, clock: Clock,
    ) -> None:
        self.settings = settings
        self.store = store
        self.inject = inject  # a fired job enters here like a phone message
        self.messenger = messenger
        self.supervisor = supervisor
        self.clock = clock

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    def status_line(self) -> str:
        return "scheduler: not running"
