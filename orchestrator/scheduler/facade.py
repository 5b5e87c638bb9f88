"""What /remind, /schedule and /cron say: the scheduler's answers in phone words (the
instincts' ``Scheduling`` port, instincts/contract.py). The instinct picks the verb; the
jobs, their parsing and their wording stay here, in the application."""

from __future__ import annotations

from collections.abc import Callable

from core.events import SessionKey
from orchestrator.scheduler.cron import EXAMPLE, CronError, parse_cron
from orchestrator.scheduler.jobs import OWNER, Job
from orchestrator.scheduler.phrases import When
from orchestrator.scheduler.replies import confirmation, label, listing
from orchestrator.scheduler.requests import USAGE, schedule_line
from orchestrator.scheduler.service import Scheduler, SchedulingOff

MANAGE = ("list", "ls", "cancel", "delete", "rm", "stop", "pause", "resume", "missed")
_CANCEL = ("cancel", "delete", "rm", "stop")


class SchedulingFacade:
    def __init__(
        self,
        scheduler: Callable[[], Scheduler | None],
        check: Callable[[str], str | None] = lambda text: None,
        creator: str = OWNER,
    ) -> None:
        # Late-bound: the App creates the scheduler after the services it needs.
        self._scheduler = scheduler
        # Why a prompt job could not run when it fires (scheduler/prompt_check.py).
        self._check = check
        # Who the jobs made through this facade act for when they fire (jobs.py).
        self._creator = creator

    def of(self, creator: str) -> SchedulingFacade:
        """The facade for one sender: the jobs it makes run with that sender's authority."""
        return SchedulingFacade(self._scheduler, self._check, creator)

    def _get(self) -> Scheduler:
        scheduler = self._scheduler()
        if scheduler is None:
            raise SchedulingOff("scheduling is turned off")
        return scheduler

    @property
    def enabled(self) -> bool:
        return self._scheduler() is not None

    def usage(self, kind: str) -> str:
        """Examples for "reminder", "prompt" or "cron"."""
        return EXAMPLE if kind == "cron" else USAGE[kind]

    async def _jobs(self, viewer: SessionKey | None) -> list[Job]:
        scheduler = self._get()
        key = None if viewer is None else scheduler.home_of(viewer)
        return await scheduler.jobs.listing(key, ("active", "paused", "failed"))

    async def manage(self, verb: str, rest: str, viewer: SessionKey | None) -> str | None:
        """list / cancel / pause / resume / missed, shared by the three commands."""
        if verb not in MANAGE:
            return None
        scheduler = self._get()
        words = rest.split()
        now = scheduler.clock.now()
        if verb in ("list", "ls"):
            return listing(await self._jobs(viewer), now)
        if not words or not words[0].lstrip("#").isdigit():
            return (
                f"Which job? /{verb} needs its number, e.g. /cron {verb} 3 (/cron list shows them)."
            )
        job = await scheduler.owned(int(words[0].lstrip("#")), viewer)
        if job is None:
            return f"I have no job #{words[0].lstrip('#')}. /cron list shows yours."
        if verb in _CANCEL:
            ok = await scheduler.cancel(job)
            return f"🗑 Cancelled {label(job)}." if ok else f"{label(job)} is already {job.status}."
        if verb == "pause":
            ok = await scheduler.pause(job)
            return (
                f"⏸ Paused {label(job)}. /cron resume {job.id} to start it again."
                if ok
                else f"{label(job)} is {job.status}, not active."
            )
        if verb == "resume":
            resumed = await scheduler.resume(job)
            return (
                confirmation(resumed, now)
                if resumed is not None
                else f"{label(job)} is {job.status}; only paused or failed jobs resume."
            )
        policy = {"skip": "skip", "run": "run_once", "once": "run_once"}.get(
            words[1].lower() if len(words) > 1 else ""
        )
        if policy is None:
            return (
                f"/cron missed {job.id} skip — runs missed while I was off are "
                f"only reported\n/cron missed {job.id} run — the latest missed "
                "run happens once, late"
            )
        await scheduler.jobs.set_missed_policy(job.id, policy)
        return (
            f"OK: missed runs of {label(job)} will be "
            f"{'skipped (and reported)' if policy == 'skip' else 'run once, late'}."
        )

    async def create(self, kind: str, line: str, home: SessionKey) -> str:
        """A job of ``kind`` from "<what> in|at|every <when>" (or a cron expression)."""
        try:
            check = self._check if kind == "prompt" else None
            return await schedule_line(
                self._get(), kind, line, home, check=check, creator=self._creator
            )
        except SchedulingOff as err:
            return f"⚠️ {err}"

    async def create_cron(self, line: str, home: SessionKey) -> str:
        """ "0 9 * * 1-5 <prompt>" or "@daily <prompt>": a recurring prompt job."""
        scheduler = self._get()
        words = line.split()
        size = 1 if words[0].startswith("@") else 5
        expr, prompt = " ".join(words[:size]), " ".join(words[size:]).strip()
        try:
            parsed = parse_cron(expr)
        except CronError as err:
            return f"❌ {err}"
        if not prompt:
            return f"❓ What should I do {expr}? Like: {EXAMPLE}"
        refused = self._check(prompt)
        if refused is not None:
            return refused
        try:
            job = await scheduler.create(
                kind="prompt",
                text=prompt,
                when=When(None, parsed, expr),
                home=home,
                creator=self._creator,
            )
        except SchedulingOff as err:
            return f"⚠️ {err}"
        return confirmation(job, scheduler.clock.now())
