"""The services one App wires together, handed to handlers through ``Context``, and the
facades built from them that the instincts see (their contract: instincts/contract.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harnesses.base import HarnessRegistry
from identity import Identity
from instincts.router import InstinctRegistry
from kennel.base import Kennel
from orchestrator.blocks import Blocks
from orchestrator.config import Settings
from orchestrator.facades.blocks import BlocksFacade, zone_of
from orchestrator.facades.commits import CommitsFacade
from orchestrator.facades.harnesses import HarnessesFacade
from orchestrator.facades.improve import ImproveFacade
from orchestrator.facades.skills import SkillsFacade
from orchestrator.facades.status import StatusFacade
from orchestrator.facades.tasks import TasksFacade
from orchestrator.facades.workspace import WorkspaceFacade
from orchestrator.improve.service import Improver
from orchestrator.links import Links
from orchestrator.memory.facade import MemoryFacade
from orchestrator.messenger import Messenger
from orchestrator.permissions.service import Permissions
from orchestrator.scheduler.facade import SchedulingFacade
from orchestrator.scheduler.prompt_check import problem
from orchestrator.session import Sessions
from orchestrator.store import Journal, Store
from orchestrator.supervisor import TaskSupervisor
from orchestrator.workspace import Workspace

if TYPE_CHECKING:
    from orchestrator.alerts import Alerts
    from orchestrator.costs.ledger import CostLedger
    from orchestrator.memory import Memory
    from orchestrator.planner import Planner
    from orchestrator.scheduler import Scheduler
    from orchestrator.skills.book import SkillBook
    from orchestrator.task.approvals import Approvals
    from orchestrator.task.runner import TaskRunner


@dataclass(frozen=True, slots=True)
class Facades:
    """One per instinct family; each family talks to its facade only."""

    scheduling: SchedulingFacade
    memory: MemoryFacade
    tasks: TasksFacade
    commits: CommitsFacade
    workspace: WorkspaceFacade
    harnesses: HarnessesFacade
    improve: ImproveFacade  # /improve /prs (orchestrator/improve/)
    status: StatusFacade
    skills: SkillsFacade
    blocks: BlocksFacade


@dataclass
class Services:
    settings: Settings
    store: Store
    journal: Journal
    messenger: Messenger
    sessions: Sessions
    workspace: Workspace
    harnesses: HarnessRegistry
    kennel: Kennel
    instincts: InstinctRegistry
    identity: Identity
    skills: SkillBook  # owner + shipped + the active repo's committed skills
    supervisor: TaskSupervisor
    runner: TaskRunner
    approvals: Approvals
    planner: Planner
    alerts: Alerts
    memory: Memory
    permissions: Permissions  # who may do what (orchestrator/permissions/)
    scheduler: Scheduler | None  # None until the gateway exists (set by App)
    costs: CostLedger | None = None  # the cost ledger and budgets (orchestrator/costs/)
    started_at: float = field(default_factory=time.time)
    improver: Improver = field(init=False)  # self-improvement PRs (orchestrator/improve/)
    blocks: Blocks = field(init=False)  # memory blocks (orchestrator/blocks/)
    facades: Facades = field(init=False)
    links: Links = field(init=False)  # chats that share one session (/link)

    def __post_init__(self) -> None:
        self.blocks = Blocks(self.store.blocks, self.settings.blocks)
        self.links = Links(self.store.links)
        self.improver = Improver(
            settings=self.settings,
            store=self.store,
            messenger=self.messenger,
            runner=self.runner,
            harnesses=self.harnesses,
            kennel=self.kennel,
            supervisor=self.supervisor,
        )
        self.facades = Facades(
            scheduling=SchedulingFacade(
                lambda: self.scheduler,
                check=lambda text: problem(
                    text,
                    self.planner.configured,
                    self.workspace.repos(),
                    self.workspace.find_in_text,
                ),
            ),
            memory=MemoryFacade(self.memory),
            tasks=TasksFacade(self.runner, self.permissions, self.workspace),
            commits=CommitsFacade(self.store, self.workspace),
            workspace=WorkspaceFacade(self.workspace),
            harnesses=HarnessesFacade(self.harnesses, self.runner),
            improve=ImproveFacade(self.improver, self.sessions),
            status=StatusFacade(self),
            skills=SkillsFacade(self.skills),
            blocks=BlocksFacade(self.blocks, self.workspace, zone_of(self.settings.timezone)),
        )
