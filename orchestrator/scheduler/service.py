"""The scheduler: one tick loop per database that claims due slots, fires them through
the delivery port, and keeps the owner told about what did not happen.

Each tick, in order: take back what a crash left (at start: everything an earlier process
held, since the lock proves it is gone; later: only expired leases) and due retries;
claim due slots in batches (a claim advances the job to its next slot in the same
transaction, so a run that outlasts the tick is never claimed twice); renew the leases
of runs in flight; report misses and failures. Then it sleeps until the next slot is due
or the tick interval passes, whichever is first (a new job wakes it at once).
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Callable
from typing import Any

from core.clock import Clock
from core.events import SessionKey
from core.tasks import cancel_and_wait
from orchestrator.config import Settings
from orchestrator.messenger import Messenger
from orchestrator.scheduler.cron import Cron
from orchestrator.scheduler.delivery import ChatDelivery, Delivery, Inject, job_session
from orchestrator.scheduler.jobs import (
    CLOCK_JUMP,
    OFFLINE,
    OWNER,
    Claim,
    Job,
    JobPort,
    Run,
    SqliteJobs,
)
from orchestrator.scheduler.localtime import zone
from orchestrator.scheduler.lock import SchedulerLock, SharedLock
from orchestrator.scheduler.ntfy import Ntfy
from orchestrator.scheduler.phrases import When
from orchestrator.scheduler.replies import problems_text
from orchestrator.scheduler.slots import MISS_GRACE_SECONDS
from orchestrator.scheduler.words import in_words
from orchestrator.store import Store
from orchestrator.supervisor import TaskSupervisor

log = logging.getLogger(__name__)
CLAIM_BATCH = 500
MAX_CONCURRENT_FIRES = 32
REPORT_EVERY_SECONDS = 30.0
ROUTE_MEMORY_SECONDS = 7 * 86400  # job sessions whose replies may still come after a restart


class SchedulingOff(Exception):
    """This process does not run the scheduler (another one does); the text says which."""


class Scheduler:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        inject: Inject,
        messenger: Messenger,
        supervisor: TaskSupervisor,
        clock: Clock,
    ) -> None:
        self.settings = settings
        self.store = store
        self.inject = inject  # a fired job enters here like a phone message
        self.messenger = messenger
        self.supervisor = supervisor
        self.clock = clock
        self.jobs: JobPort = SqliteJobs(store.db)
        # SQLite: one scheduler per file (a flock). PostgreSQL: every process schedules,
        # and only a run's expired lease is taken back (never "all of another holder's").
        self.shared = bool(settings.store.url)
        self.lock: SchedulerLock | SharedLock = (
            SharedLock() if self.shared else SchedulerLock(settings.db_path)
        )
        cfg = settings.scheduler
        self.ntfy = Ntfy(cfg.ntfy_url) if cfg.ntfy_url else None
        self.delivery: Delivery = ChatDelivery(store, messenger, inject, self.ntfy)
        self.holder = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.refusal: str | None = None
        self.up_since = 0.0
        # Slots due before this (less the grace) are misses: the start, or the last
        # forward jump of the clock between two ticks (a suspend, an NTP step), which is
        # treated like a restart (_notice_jump).
        self._catch_up_since = 0.0
        self._jumped = False  # the latest catch-up came from a clock jump, not a start
        self._last_tick_at: float | None = None
        self.fired = 0
        self.failures = 0
        self._first_tick = True
        self._loop_task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._in_flight: dict[int, asyncio.Task[None]] = {}
        self._pushes: set[asyncio.Task[Any]] = set()  # ntfy copies of job sessions' replies
        self._stopped = False
        self._job_locks: dict[int, asyncio.Lock] = {}
        self._slots = asyncio.Semaphore(MAX_CONCURRENT_FIRES)
        self._homes: dict[SessionKey, SessionKey] = {}
        self._next_due: float | None = None
        self._active = 0
        self._last_report = float("-inf")

    # -- lifecycle -------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.lock.held

    async def start(self, *, loop: bool = True) -> None:
        """Take the database's scheduler lock and start ticking. If another process holds
        it, Fetch still runs (chat, tasks, approvals) and says scheduling is elsewhere."""
        if not self.lock.acquire():
            self.refusal = (
                f"not running here: {self.lock.holder()} already runs the "
                f"scheduler for {self.settings.db_path}"
            )
            log.warning("scheduler %s", self.refusal)
            return
        self.up_since = self._catch_up_since = self.clock.now()
        self._last_tick_at = None
        self._stopped = False
        for claim in await self.jobs.recent_prompt_runs(self.up_since - ROUTE_MEMORY_SECONDS):
            self._route(claim)  # replies of job sessions replayed after a restart
        await self._refresh_summary()
        if loop:
            self._loop_task = self.supervisor.spawn(self._loop(), name="scheduler:tick")

    async def stop(self, grace: float = 5.0) -> None:
        """Reverse of start: no more ticks, then the deliveries and pushes in flight end
        (given ``grace``), then the lock and the push client go."""
        task, self._loop_task = self._loop_task, None
        await cancel_and_wait(task)
        # Deliveries in flight are short (a send, a hand-over to the gateway): let them
        # end rather than leave runs whose outcome the next start cannot know.
        await self._finish(set(self._in_flight.values()), grace)
        self._stopped = True  # replies after this are not pushed: the chat has them
        await self._finish(set(self._pushes), grace)
        self.lock.release()
        if self.ntfy is not None:
            await self.ntfy.close()

    @staticmethod
    async def _finish(tasks: set[asyncio.Task[Any]], grace: float) -> None:
        if tasks:
            _done, pending = await asyncio.wait(tasks, timeout=grace)
            await cancel_and_wait(*pending)

    async def _loop(self) -> None:
        tick = self.settings.scheduler.tick_seconds
        while True:
            try:
                await self.tick()
            except Exception:  # a bad tick must not end scheduling: log, try again
                log.exception("scheduler tick failed")
            now = self.clock.now()
            pause = tick if self._next_due is None else min(tick, max(0.0, self._next_due - now))
            self._wake.clear()
            # Whichever comes first: the pause ends (on the injected clock) or wake().
            sleeper = self.supervisor.spawn(self.clock.sleep(pause), name="scheduler:sleep")
            waker = self.supervisor.spawn(self._wake.wait(), name="scheduler:wake")
            try:
                await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                await cancel_and_wait(waker, sleeper)

    def wake(self) -> None:
        self._wake.set()

    # -- the tick --------------------------------------------------------------------
    async def tick(self) -> int:
        """One pass; returns how many runs it started."""
        if not self.running:
            return 0
        cfg = self.settings.scheduler
        now = self.clock.now()
        self._notice_jump(now)
        started = 0
        again, unsure = await self.jobs.reclaim(
            now,
            self.holder,
            cfg.lease_seconds,
            orphans_of_others=self._first_tick and not self.shared,
        )
        self._first_tick = False
        for claim in unsure:
            if claim.run.id not in self._in_flight:
                await self._settle_interrupted(claim)
        for claim in again:
            if claim.run.id not in self._in_flight:
                self._start(claim)
                started += 1
        while True:
            claims, handled = await self.jobs.claim_due(
                now,
                self.holder,
                cfg.lease_seconds,
                self._catch_up_since,
                CLAIM_BATCH,
                CLOCK_JUMP if self._jumped else OFFLINE,
            )
            for claim in claims:
                self._start(claim)
            started += len(claims)
            if handled < CLAIM_BATCH:
                break
            await asyncio.sleep(0)  # let the fires of this batch start before the next
        await self.jobs.renew(list(self._in_flight), self.holder, now + cfg.lease_seconds)
        await self.jobs.close_finished(now)
        if now - self._last_report >= REPORT_EVERY_SECONDS:
            await self.report()
        await self._refresh_summary()
        return started

    def _notice_jump(self, now: float) -> None:
        """Ticks come at most ``tick_seconds`` apart; a longer gap means the clock jumped
        forward (or the machine slept) with this process running. The slots it skipped
        came due while nothing could run them, exactly as during a restart: the latest
        runs once, late (``run_once``), the others are recorded and reported as missed,
        not fired one per tick."""
        last, self._last_tick_at = self._last_tick_at, now
        gap = now - last if last is not None else 0.0
        if gap > self.settings.scheduler.tick_seconds + MISS_GRACE_SECONDS:
            log.warning("the clock moved %.0f s between two ticks: treated like a restart", gap)
            self._catch_up_since = now
            self._jumped = True

    async def _refresh_summary(self) -> None:
        self._next_due = await self.jobs.next_due()
        self._active = (await self.jobs.counts()).get("active", 0)

    def _start(self, claim: Claim) -> None:
        task = self.supervisor.spawn(self._fire(claim), name=f"job:{claim.job.id}:{claim.run.id}")
        run_id = claim.run.id
        self._in_flight[run_id] = task

        def forget(_task: asyncio.Task[None]) -> None:
            self._in_flight.pop(run_id, None)

        task.add_done_callback(forget)

    async def _fire(self, claim: Claim) -> None:
        lock = self._job_locks.setdefault(claim.job.id, asyncio.Lock())
        # One run of a job at a time: a run that outlasts its period delays the next slot
        # instead of overlapping it (the next slot is already claimed, so it is not lost).
        async with self._slots, lock:
            if not await self.jobs.delivering(claim.run.id, self.holder):
                return  # the claim was taken back meanwhile
            if claim.job.kind == "prompt":
                self._route(claim)
            try:
                await self.delivery.deliver(claim)
            except asyncio.CancelledError:
                raise  # stays 'delivering': the next start asks the delivery path
            except Exception as err:
                await self._attempt_failed(claim, err)
                return
            if await self.jobs.done(claim, self.holder, self.clock.now()):
                self.fired += 1
        if not lock.locked() and len(self._job_locks) > 10_000:
            self._job_locks.clear()  # bounded: locks of finished jobs are not needed again

    async def _attempt_failed(self, claim: Claim, err: Exception) -> None:
        cfg = self.settings.scheduler
        error = f"{type(err).__name__}: {err}"[:300]
        log.warning(
            "job %d run %d attempt %d failed: %s",
            claim.job.id,
            claim.run.id,
            claim.run.attempt,
            error,
        )
        now = self.clock.now()
        if claim.run.attempt < cfg.max_attempts:
            backoff = cfg.retry_base_seconds * 2 ** (claim.run.attempt - 1)
            await self.jobs.retry(claim.run.id, self.holder, error, now + backoff)
            return
        if await self.jobs.fail(claim, self.holder, error, now):
            self.failures += 1
            await self.report()

    async def _settle_interrupted(self, claim: Claim) -> None:
        """A run a crash left mid-delivery: done if the delivery path knows it arrived,
        fired again if it knows it did not, else reported (never sent twice)."""
        try:
            arrived = await self.delivery.confirm(claim)
        except Exception:
            log.exception("confirming run %d failed", claim.run.id)
            arrived = None
        now = self.clock.now()
        if arrived is True:
            if await self.jobs.done(claim, self.holder, now):
                self.fired += 1
        elif arrived is False:
            await self.jobs.undeliver(claim.run.id, self.holder)
            self._start(claim)
        else:
            await self.jobs.interrupted(claim, self.holder, now)

    async def report(self) -> None:
        """Tell each owner chat about misses, interrupted sends and failed jobs, once."""
        self._last_report = self.clock.now()
        found = await self.jobs.unreported()
        by_chat: dict[SessionKey, list[tuple[Job, Run]]] = {}
        for job, run in found:
            by_chat.setdefault(job.key, []).append((job, run))
        for key, items in by_chat.items():
            text = problems_text(items, self.clock.now())
            try:
                await self.messenger.send(key, text)
            except Exception as err:  # the channel is down: try again at the next report
                log.warning("could not report scheduler problems to %s: %s", key, err)
                continue
            await self.jobs.mark_reported([run.id for _job, run in items])

    async def idle(self) -> None:
        """Wait until no run is in flight (tests, shutdown)."""
        while self._in_flight:
            await asyncio.gather(*self._in_flight.values(), return_exceptions=True)

    # -- routes for job sessions -------------------------------------------------------
    def _route(self, claim: Claim) -> None:
        session = job_session(claim)
        self._homes[session] = claim.job.key
        self.messenger.route(session, claim.job.key, self._pusher(claim.job))

    def _pusher(self, job: Job) -> Callable[[str], None] | None:
        """With ntfy configured, each message of a job's session is also pushed, in the
        background: a slow push server must never hold up the chat."""
        ntfy = self.ntfy
        if ntfy is None:
            return None

        def push(text: str) -> None:
            if self._stopped:  # shutting down: the chat has the message anyway
                return
            try:
                task = self.supervisor.spawn(
                    ntfy.push(f"Fetch job #{job.id}", text, tags="repeat"),
                    name=f"ntfy:job:{job.id}",
                )
            except RuntimeError:  # the supervisor is stopping
                return
            self._pushes.add(task)
            task.add_done_callback(self._pushes.discard)

        return push

    def home_of(self, key: SessionKey) -> SessionKey:
        """The owner's chat for a job's session (a job may schedule more work)."""
        return self._homes.get(key, key)

    # -- what commands and tools call ---------------------------------------------------
    def _check_running(self) -> None:
        if not self.running:
            why = self.refusal or "the scheduler is not started"
            raise SchedulingOff(
                f"Scheduling is off in this Fetch: {why}. Use that one, or stop it and restart me."
            )

    async def create(
        self,
        *,
        kind: str,
        text: str,
        when: When,
        home: SessionKey,
        missed: str = "run_once",
        creator: str = OWNER,
    ) -> Job:
        self._check_running()
        tz = self.settings.timezone
        if when.cron is not None:
            first = when.cron.next_after(self.clock.now(), zone(tz))
        else:
            assert when.at is not None
            first = when.at
        job = await self.jobs.add(
            kind=kind,
            text=text,
            key=self.home_of(home),
            cron=when.cron.expr if when.cron else None,
            tz=tz,
            spec=when.spec,
            missed=missed,
            next_at=first,
            creator=creator,
        )
        await self._refresh_summary()
        self.wake()
        return job

    async def owned(self, job_id: int, key: SessionKey | None) -> Job | None:
        """The job if ``key`` may touch it (None: the owner, who may touch every job)."""
        job = await self.jobs.get(job_id)
        if job is None or job.status == "cancelled":
            return None
        if key is not None and job.key != self.home_of(key):
            return None
        return job

    async def cancel(self, job: Job) -> bool:
        ok = await self.jobs.set_status(
            job.id, "cancelled", ("active", "paused", "failed"), keep_next=False, next_at=None
        )
        await self._refresh_summary()
        return ok

    async def pause(self, job: Job) -> bool:
        ok = await self.jobs.set_status(job.id, "paused", ("active",))
        await self._refresh_summary()
        return ok

    async def resume(self, job: Job) -> Job | None:
        """Active again from now: a recurring job's next slot is the next one from now
        (what passed while paused is not a miss: the owner asked for quiet); a one-shot
        whose time passed while paused fires at once."""
        self._check_running()
        now = self.clock.now()
        if job.cron is not None:
            next_at: float | None = Cron(job.cron).next_after(now, zone(job.tz))
        else:
            next_at = max(job.next_at or now, now)
        ok = await self.jobs.set_status(
            job.id, "active", ("paused", "failed"), keep_next=False, next_at=next_at
        )
        await self._refresh_summary()
        self.wake()
        return await self.jobs.get(job.id) if ok else None

    def status_line(self) -> str:
        if not self.running:
            return f"scheduler: {self.refusal or 'not running'}"
        parts = [f"scheduler: {self._active} active job{'s' * (self._active != 1)}"]
        if self._next_due is not None:
            parts.append(f"next {in_words(self._next_due - self.clock.now())}")
        if self.failures:
            parts.append(f"{self.failures} failed since start")
        if self.ntfy is not None:
            parts.append("ntfy push on")
        return ", ".join(parts)
