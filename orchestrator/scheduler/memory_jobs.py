"""The job store in memory: the same claims, leases and transitions as ``SqliteJobs``.

It lives beside the port rather than in ``orchestrator/store/memory.py`` because it
needs the scheduler's slot planning, and the store must not import the scheduler.
One process, no awaits inside a method: every method is as atomic as the SQL
transaction it mirrors. ``None`` comparisons follow SQL: a missing lease or holder
never matches.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from core.events import SessionKey
from orchestrator.scheduler.jobs import OFFLINE, OPEN, OWNER, Claim, Job, Run
from orchestrator.scheduler.localtime import zone
from orchestrator.scheduler.slots import plan

REPORTED_STATUSES = ("missed", "interrupted", "failed")


@dataclass(slots=True)
class _RunRow:
    id: int
    job_id: int
    slot: float
    status: str
    attempt: int = 0
    holder: str | None = None
    lease_until: float | None = None
    next_try: float | None = None
    claimed_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    late: bool = False
    reported: bool = False

    def run(self) -> Run:
        return Run(
            self.id, self.job_id, self.slot, self.status, self.attempt, self.late, self.error
        )


def _lt(value: float | None, bound: float) -> bool:
    return value is not None and value < bound


class MemoryJobs:
    def __init__(self) -> None:
        self._jobs: dict[int, Job] = {}
        self._runs: dict[int, _RunRow] = {}
        self._slots: dict[tuple[int, float], int] = {}  # UNIQUE(job_id, slot) -> run id

    def _insert_run(self, row: _RunRow) -> bool:
        """INSERT OR IGNORE: False when this (job, slot) already has a run."""
        if (row.job_id, row.slot) in self._slots:
            return False
        self._runs[row.id] = row
        self._slots[(row.job_id, row.slot)] = row.id
        return True

    def _next_run_id(self) -> int:
        return len(self._runs) + 1

    # -- jobs ------------------------------------------------------------------------
    async def add(
        self,
        *,
        kind: str,
        text: str,
        key: SessionKey,
        cron: str | None,
        tz: str,
        spec: str,
        missed: str,
        next_at: float,
        creator: str = OWNER,
    ) -> Job:
        job = Job(
            len(self._jobs) + 1,
            kind,
            text,
            key.channel,
            key.chat,
            cron,
            tz,
            spec,
            missed,
            "active",
            next_at,
            time.time(),
            creator,
        )
        self._jobs[job.id] = job
        return job

    async def get(self, job_id: int) -> Job | None:
        return self._jobs.get(job_id)

    async def listing(self, key: SessionKey | None, statuses: tuple[str, ...]) -> list[Job]:
        await self.close_finished(time.time())  # a reminder that just fired is not listed
        found = [
            j
            for j in self._jobs.values()
            if j.status in statuses
            and (key is None or (j.channel, j.chat) == (key.channel, key.chat))
        ]
        return sorted(found, key=lambda j: (j.next_at is None, j.next_at or 0.0, j.id))

    async def set_status(
        self,
        job_id: int,
        new: str,
        allowed_from: tuple[str, ...],
        next_at: float | None = None,
        keep_next: bool = True,
    ) -> bool:
        job = self._jobs.get(job_id)
        if job is None or job.status not in allowed_from:
            return False
        self._jobs[job_id] = replace(job, status=new, next_at=job.next_at if keep_next else next_at)
        return True

    async def set_missed_policy(self, job_id: int, policy: str) -> bool:
        job = self._jobs.get(job_id)
        if job is None:
            return False
        self._jobs[job_id] = replace(job, missed=policy)
        return True

    async def next_due(self) -> float | None:
        due = [
            j.next_at for j in self._jobs.values() if j.status == "active" and j.next_at is not None
        ]
        return min(due) if due else None

    # -- claiming --------------------------------------------------------------------
    async def claim_due(
        self,
        now: float,
        holder: str,
        lease: float,
        up_since: float,
        limit: int,
        why_missed: str = OFFLINE,
    ) -> tuple[list[Claim], int]:
        due = sorted(
            (
                j
                for j in self._jobs.values()
                if j.status == "active" and j.next_at is not None and j.next_at <= now
            ),
            key=lambda j: (j.next_at, j.id),
        )[:limit]
        claims: list[Claim] = []
        for job in due:
            assert job.next_at is not None
            p = plan(job.next_at, job.cron, zone(job.tz), job.missed, up_since)
            for slot in p.missed:
                self._insert_run(
                    _RunRow(
                        self._next_run_id(),
                        job.id,
                        slot,
                        "missed",
                        finished_at=now,
                        error=why_missed,
                    )
                )
            if p.more_missed:
                last = self._runs[self._slots[(job.id, p.missed[-1])]]
                last.error = f"{why_missed} (and more slots after this one)"
            # One-shots keep status 'active' with no next slot until their run ends.
            self._jobs[job.id] = replace(job, next_at=p.next_at)
            if p.run_slot is None:
                continue  # all skipped: a one-shot is closed by close_finished
            row = _RunRow(
                self._next_run_id(),
                job.id,
                p.run_slot,
                "claimed",
                attempt=1,
                holder=holder,
                lease_until=now + lease,
                claimed_at=now,
                late=p.late,
            )
            if self._insert_run(row):  # never a second run for a slot
                claims.append(Claim(job, row.run()))
        return claims, len(due)

    async def reclaim(
        self, now: float, holder: str, lease: float, *, orphans_of_others: bool
    ) -> tuple[list[Claim], list[Claim]]:
        def stale(r: _RunRow) -> bool:
            other = orphans_of_others and r.holder is not None and r.holder != holder
            return other or _lt(r.lease_until, now)

        found = sorted(
            (
                r
                for r in self._runs.values()
                if (r.status == "retry" and r.next_try is not None and r.next_try <= now)
                or (r.status in ("claimed", "delivering") and stale(r))
            ),
            key=lambda r: r.slot,
        )[:1000]
        again: list[Claim] = []
        unsure: list[Claim] = []
        for r in found:
            if r.status == "retry":
                r.attempt += 1
                r.status = "claimed"
            r.holder, r.lease_until = holder, now + lease
            claim = Claim(self._jobs[r.job_id], r.run())
            (unsure if r.status == "delivering" else again).append(claim)
        return again, unsure

    async def renew(self, run_ids: list[int], holder: str, until: float) -> None:
        for run_id in run_ids:
            r = self._runs.get(run_id)
            if r is not None and r.holder == holder and r.status in ("claimed", "delivering"):
                r.lease_until = until

    # -- transitions -----------------------------------------------------------------
    def _move(self, run_id: int, holder: str, to: str, from_: tuple[str, ...]) -> _RunRow | None:
        r = self._runs.get(run_id)
        if r is None or r.holder != holder or r.status not in from_:
            return None
        r.status = to
        return r

    async def delivering(self, run_id: int, holder: str) -> bool:
        return self._move(run_id, holder, "delivering", ("claimed",)) is not None

    async def done(self, claim: Claim, holder: str, now: float) -> bool:
        r = self._move(claim.run.id, holder, "done", ("delivering",))
        if r is None:
            return False
        r.finished_at, r.error = now, None
        return True

    async def close_finished(self, now: float) -> None:
        open_jobs = {r.job_id for r in self._runs.values() if r.status in OPEN}
        for job in list(self._jobs.values()):
            if (
                job.status == "active"
                and job.cron is None
                and job.next_at is None
                and job.id not in open_jobs
            ):
                self._jobs[job.id] = replace(job, status="done")

    async def undeliver(self, run_id: int, holder: str) -> bool:
        return self._move(run_id, holder, "claimed", ("delivering",)) is not None

    async def retry(self, run_id: int, holder: str, error: str, next_try: float) -> bool:
        r = self._move(run_id, holder, "retry", ("claimed", "delivering"))
        if r is None:
            return False
        r.error, r.next_try, r.lease_until = error, next_try, None
        return True

    async def fail(self, claim: Claim, holder: str, error: str, now: float) -> bool:
        r = self._move(claim.run.id, holder, "failed", ("claimed", "delivering"))
        if r is None:
            return False
        r.error, r.finished_at = error, now
        job = self._jobs[claim.job.id]
        if job.status in ("active", "paused"):
            self._jobs[job.id] = replace(job, status="failed")
        return True

    async def interrupted(self, claim: Claim, holder: str, now: float) -> bool:
        r = self._move(claim.run.id, holder, "interrupted", ("delivering",))
        if r is None:
            return False
        r.finished_at, r.error = now, "Fetch stopped while sending it"
        return True

    # -- what the owner must hear about ------------------------------------------------
    async def unreported(self, limit: int = 500) -> list[tuple[Job, Run]]:
        found = sorted(
            (r for r in self._runs.values() if not r.reported and r.status in REPORTED_STATUSES),
            key=lambda r: (r.job_id, r.slot),
        )[:limit]
        return [(self._jobs[r.job_id], r.run()) for r in found]

    async def mark_reported(self, run_ids: list[int]) -> None:
        for run_id in run_ids:
            if run_id in self._runs:
                self._runs[run_id].reported = True

    async def runs(self, job_id: int, limit: int = 20) -> list[Run]:
        mine = sorted(
            (r for r in self._runs.values() if r.job_id == job_id),
            key=lambda r: r.slot,
            reverse=True,
        )
        return [r.run() for r in mine[:limit]]

    async def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for job in self._jobs.values():
            counts[job.status] = counts.get(job.status, 0) + 1
        return counts

    async def recent_prompt_runs(self, since: float) -> list[Claim]:
        return [
            Claim(self._jobs[r.job_id], r.run())
            for r in self._runs.values()
            if self._jobs[r.job_id].kind == "prompt"
            and r.claimed_at is not None
            and r.claimed_at >= since
            and r.status in ("done", "delivering", "claimed", "retry")
        ]
