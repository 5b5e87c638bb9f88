"""The typed context every handler receives: built per event, passed, never looked up.

It satisfies the instincts' contract (``instincts.contract.InstinctContext``)
structurally: the inbound event, the session, ``reply`` and one facade per instinct
family. Application handlers (conversation, tools, planner) also reach ``services``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.events import Inbound, SendResult
from orchestrator.session import Session

if TYPE_CHECKING:
    from instincts.router import InstinctRegistry
    from orchestrator.facades.commits import CommitsFacade
    from orchestrator.facades.harnesses import HarnessesFacade
    from orchestrator.facades.status import StatusFacade
    from orchestrator.facades.tasks import TasksFacade
    from orchestrator.facades.workspace import WorkspaceFacade
    from orchestrator.memory.facade import MemoryFacade
    from orchestrator.scheduler.facade import SchedulingFacade
    from orchestrator.services import Services


@dataclass(slots=True)
class Context:
    inbound: Inbound
    session: Session
    services: Services
    text: str  # the message with the trigger stripped and validated

    async def reply(
        self, text: str, *, tokens: tuple[int, int] = (0, 0), model: str | None = None
    ) -> SendResult:
        return await self.services.messenger.send(
            self.session.key, text, tokens=tokens, model=model
        )

    # -- the instinct families' facades (built once, in orchestrator/services.py) -------
    @property
    def scheduling(self) -> SchedulingFacade:
        return self.services.facades.scheduling

    @property
    def memory(self) -> MemoryFacade:
        return self.services.facades.memory

    @property
    def tasks(self) -> TasksFacade:
        return self.services.facades.tasks

    @property
    def commits(self) -> CommitsFacade:
        return self.services.facades.commits

    @property
    def workspace(self) -> WorkspaceFacade:
        return self.services.facades.workspace

    @property
    def harnesses(self) -> HarnessesFacade:
        return self.services.facades.harnesses

    @property
    def status(self) -> StatusFacade:
        return self.services.facades.status

    @property
    def commands(self) -> InstinctRegistry:
        return self.services.instincts
