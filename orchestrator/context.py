"""The typed context every handler receives: built per event, passed, never looked up.

It satisfies the instincts' contract (``instincts.contract.InstinctContext``)
structurally: the inbound event, the session, ``reply`` and one facade per instinct
family. Application handlers (conversation, tools, planner) also reach ``services``.

``subject`` is who sent the message, with their own authority (orchestrator/permissions/):
the owner, a member, or an allowlisted sender; in a group it is the sender, never the
chat. The memory and commits facades handed to instincts are bound to it, and /help,
/commands and the model's tools list only what it may use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.events import Inbound, SendResult
from orchestrator.permissions.model import OWNER, Subject
from orchestrator.session import Session
from orchestrator.task.crashpoint import kill_point

if TYPE_CHECKING:
    from orchestrator.facades.blocks import BlocksFacade
    from orchestrator.facades.commits import CommitsFacade
    from orchestrator.facades.cost import CostFacade
    from orchestrator.facades.files import FilesFacade
    from orchestrator.facades.harnesses import HarnessesFacade
    from orchestrator.facades.identity import IdentityFacade
    from orchestrator.facades.improve import ImproveFacade
    from orchestrator.facades.link import LinkFacade
    from orchestrator.facades.models import ModelsFacade
    from orchestrator.facades.skills import SkillsFacade
    from orchestrator.facades.status import StatusFacade
    from orchestrator.facades.tasks import TasksFacade
    from orchestrator.facades.workspace import WorkspaceFacade
    from orchestrator.memory.facade import MemoryFacade
    from orchestrator.permissions.facade import GrantsFacade
    from orchestrator.permissions.visible import VisibleCommands
    from orchestrator.scheduler.facade import SchedulingFacade
    from orchestrator.services import Services


@dataclass(slots=True)
class Context:
    inbound: Inbound
    session: Session
    services: Services
    text: str  # the message with the trigger stripped and validated
    subject: Subject = field(init=False)
    # Set when the message waits for the chat's running task (conversation.py): the
    # gateway keeps it queued and runs it, in order, once the chat is idle again.
    deferred: bool = False

    def __post_init__(self) -> None:
        self.services.permissions.note(self.inbound)
        self.subject = self.services.permissions.subject_of(self.inbound)

    async def permit(self, action: str, what: str | None = None) -> bool:
        """Ask the permission model (resolver.py has the order); on no, the sender has
        been told why (or the owner has been asked)."""
        return await self.services.permissions.check(
            self.subject, action, self.session.key, self.reply, what=what
        )

    async def reply(
        self, text: str, *, tokens: tuple[int, int] = (0, 0), model: str | None = None
    ) -> SendResult:
        if self.inbound.command is not None:
            # tests/crash/test_command_once.py: killed at the instant of a command's
            # reply, after its effect and before the reply leaves.
            kill_point("command:reply")
        return await self.services.messenger.send(
            self.session.key, text, tokens=tokens, model=model
        )

    # -- the instinct families' facades (built once, in orchestrator/services.py) -------
    @property
    def creator(self) -> str:
        """Who a job made now acts for when it fires: ``owner``, or the sender's id on
        this channel (a member's number), so the gate and the permission model see them."""
        return OWNER if self.subject.is_owner else self.inbound.sender

    @property
    def scheduling(self) -> SchedulingFacade:
        return self.services.facades.scheduling.of(self.creator)

    @property
    def memory(self) -> MemoryFacade:
        return self.services.facades.memory.of(self.subject.id)

    @property
    def tasks(self) -> TasksFacade:
        return self.services.facades.tasks

    @property
    def commits(self) -> CommitsFacade:
        return self.services.facades.commits.of(
            self.subject.id,
            self.services.permissions.decide(self.subject, "undo:others", self.session.key).allowed,
        )

    @property
    def workspace(self) -> WorkspaceFacade:
        return self.services.facades.workspace

    @property
    def files(self) -> FilesFacade:
        from orchestrator.facades.files import FilesFacade

        return FilesFacade(self)

    @property
    def harnesses(self) -> HarnessesFacade:
        return self.services.facades.harnesses

    @property
    def models(self) -> ModelsFacade:
        from orchestrator.facades.models import ModelsFacade

        s = self.services
        return ModelsFacade(s.planner.chain, s.harnesses, s.runner.pack, s.settings.harness.model)

    @property
    def linking(self) -> LinkFacade:
        from orchestrator.facades.link import LinkFacade

        s = self.services
        return LinkFacade(
            s.links, s.permissions, s.messenger, s.sessions, self.subject, self.inbound.key
        )

    @property
    def status(self) -> StatusFacade:
        return self.services.facades.status

    @property
    def blocks(self) -> BlocksFacade:
        return self.services.facades.blocks.of(self.subject.id)

    @property
    def improve(self) -> ImproveFacade:
        return self.services.facades.improve.of(self.subject.id)

    @property
    def skills(self) -> SkillsFacade:
        from orchestrator.skills.tool import skills_repo

        return self.services.facades.skills.of(skills_repo(self))

    @property
    def commands(self) -> VisibleCommands:
        from orchestrator.permissions.visible import VisibleCommands

        return VisibleCommands(
            self.services.instincts, self.services.permissions, self.subject, self.session.key
        )

    @property
    def grants(self) -> GrantsFacade:
        from orchestrator.permissions.facade import GrantsFacade

        return GrantsFacade(self.services.permissions, self.subject, self.session.key)

    @property
    def identity(self) -> IdentityFacade:
        from orchestrator.facades.identity import IdentityFacade

        return IdentityFacade(self.services, self.subject, self.session.key)

    @property
    def cost(self) -> CostFacade:
        from orchestrator.facades.cost import CostFacade

        services = self.services
        return CostFacade(services.costs, services.store.usage, services.runner)
