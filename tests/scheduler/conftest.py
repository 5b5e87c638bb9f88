"""Scheduler fixtures: a real Store on a real file, a clock the test moves, a delivery that
records (and can fail or stall on demand), and the terminal channel for owner messages."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Protocol

import pytest

from channels.terminal import TerminalChannel
from core.events import Inbound, SessionKey
from orchestrator.config import Settings, load_settings
from orchestrator.messenger import Messenger
from orchestrator.scheduler import Scheduler
from orchestrator.scheduler.jobs import Claim
from orchestrator.store import Journal, Store
from orchestrator.supervisor import TaskSupervisor

BERLIN = "Europe/Berlin"
OWNER = SessionKey("terminal", "owner")


def berlin(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> float:
    from zoneinfo import ZoneInfo

    return dt.datetime(year, month, day, hour, minute, second, tzinfo=ZoneInfo(BERLIN)).timestamp()


class ManualClock:
    """Time moves only when the test says so."""

    def __init__(self, now: float) -> None:
        self.t = now

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(0)

    def advance(self, seconds: float) -> None:
        self.t += seconds


class RecordingDelivery:
    def __init__(self) -> None:
        self.delivered: list[tuple[int, float]] = []  # (job id, slot)
        self.started: list[tuple[int, float]] = []
        self.fail = False
        self.gate: asyncio.Event | None = None  # set: deliveries wait for it
        self.answer: bool | None = None  # what confirm() says after a crash

    async def deliver(self, claim: Claim) -> None:
        self.started.append((claim.job.id, claim.run.slot))
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise RuntimeError("the channel is down")
        self.delivered.append((claim.job.id, claim.run.slot))

    async def confirm(self, claim: Claim) -> bool | None:
        return self.answer


class Rig:
    """One scheduler on one database, driven tick by tick."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        clock: ManualClock,
        terminal: TerminalChannel,
        scheduler: Scheduler,
        delivery: RecordingDelivery,
        injected: list[Inbound],
    ) -> None:
        self.settings, self.store, self.clock = settings, store, clock
        self.terminal, self.scheduler, self.delivery = terminal, scheduler, delivery
        self.injected = injected

    async def tick(self) -> int:
        started = await self.scheduler.tick()
        await self.scheduler.idle()
        return started

    def said(self) -> list[str]:
        out: list[str] = []
        while not self.terminal.outbox.empty():
            out.append(" ".join(self.terminal.outbox.get_nowait().text.split()))
        return out


@pytest.fixture
def sched_settings(tmp_path: Path) -> Callable[..., Settings]:
    def make(**env: str) -> Settings:
        base = {
            "FETCH_HOME": str(tmp_path / "home"),
            "FETCH_TIMEZONE": BERLIN,
            "FETCH_KENNEL": "bwrap",
            "FETCH__SCHEDULER__TICK_SECONDS": "1",
            "FETCH__SCHEDULER__RETRY_BASE_SECONDS": "30",
            "FETCH__SCHEDULER__MAX_ATTEMPTS": "3",
        }
        base.update(env)
        return load_settings(None, base)

    return make


class RigFactory(Protocol):
    async def __call__(
        self, now: float, *, recording: bool = True, start: bool = True, **env: str
    ) -> Rig: ...


@pytest.fixture
async def rig_factory(
    sched_settings: Callable[..., Settings],
    tmp_path: Path,
) -> AsyncIterator[RigFactory]:
    """``await make(now)`` builds a scheduler (started, no loop) on the shared database;
    several may exist at once, as several processes would."""
    made: list[tuple[Store, Scheduler, TaskSupervisor, Journal]] = []

    async def make(now: float, *, recording: bool = True, start: bool = True, **env: str) -> Rig:
        settings = sched_settings(**env)
        store = Store(settings.db_path)
        await store.open()
        journal = Journal(tmp_path / f"journal{len(made)}")
        messenger = Messenger(store, journal)
        terminal = TerminalChannel("owner")
        messenger.add_channel(terminal)
        supervisor = TaskSupervisor()
        clock = ManualClock(now)
        injected: list[Inbound] = []

        async def inject(inbound: Inbound) -> None:
            injected.append(inbound)
            await store.inbox.accept(inbound.channel, inbound.message_id, inbound.key, {})

        scheduler = Scheduler(settings, store, inject, messenger, supervisor, clock)
        delivery = RecordingDelivery()
        if recording:
            scheduler.delivery = delivery
        made.append((store, scheduler, supervisor, journal))
        if start:
            await scheduler.start(loop=False)
        return Rig(settings, store, clock, terminal, scheduler, delivery, injected)

    yield make
    for store, scheduler, supervisor, journal in reversed(made):
        await scheduler.stop(grace=0.5)
        await supervisor.stop(0.0)
        journal.close()
        await store.close()
