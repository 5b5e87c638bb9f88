"""Memory's lifecycle as the app sees it (the implementation lands here)."""

from __future__ import annotations

from orchestrator.config import Settings
from orchestrator.events import SessionKey
from orchestrator.supervisor import TaskSupervisor


class Memory:
    def __init__(self, settings: Settings, supervisor: TaskSupervisor) -> None:
        self.settings = settings
        self.supervisor = supervisor

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    def observe(self, key: SessionKey) -> None:
        """After every turn: archive old messages in the background, never blocking."""
        return None

    async def context_for(self, prompt: str) -> str:
        """Relevant memories for a new task ("" when none)."""
        return ""

    def status_line(self) -> str:
        return "memory: off"
