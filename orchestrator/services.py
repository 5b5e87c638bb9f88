"""The services one App wires together, handed to handlers through ``Context``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harnesses.base import HarnessRegistry
from identity import Identity
from instincts.router import InstinctRegistry
from kennel.base import Kennel
from orchestrator.config import Settings
from orchestrator.messenger import Messenger
from orchestrator.session import Sessions
from orchestrator.store import Journal, Store
from orchestrator.supervisor import TaskSupervisor
from orchestrator.workspace import Workspace
from skills import Skill

if TYPE_CHECKING:
    from orchestrator.alerts import Alerts
    from orchestrator.approvals import Approvals
    from orchestrator.memory import Memory
    from orchestrator.planner import Planner
    from orchestrator.runner import TaskRunner
    from orchestrator.scheduler import Scheduler


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
    skills: list[Skill]
    supervisor: TaskSupervisor
    runner: TaskRunner
    approvals: Approvals
    planner: Planner
    alerts: Alerts
    memory: Memory
    scheduler: Scheduler | None  # None until the gateway exists (set by App)
    started_at: float = field(default_factory=time.time)
