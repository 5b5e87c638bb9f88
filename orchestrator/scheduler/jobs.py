"""The job store (``JobPort``) and its SQLite implementation: jobs and their runs in
``fetch.db``, every state change one SQL write.

A run row exists per (job, slot) (UNIQUE): inserting it *is* claiming the slot, so a slot
can never be started twice, whoever asks. Its life:

    claimed ──► delivering ──► done
       │            │  └─────► retry (after backoff) ──► claimed ... ──► failed
       │            └ crash: confirmed by the delivery path, or ──► interrupted
       └ crash: the lease runs out (or the next scheduler starts) ──► claimed again
    missed: recorded when the process was down and the policy skipped the slot

Every transition names the holder (this process's token) in its WHERE clause, so a
worker whose claim was taken back cannot overwrite the new holder's state.

The same SQL runs on SQLite and PostgreSQL (``orchestrator/store/engine.py``). On
PostgreSQL several processes claim at once: a claim locks the rows it takes
(``FOR UPDATE SKIP LOCKED``: another process skips them, and re-checks a row changed
under it), so two schedulers never take the same job's slot or the same expired run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

from core.events import SessionKey
from orchestrator.scheduler.localtime import zone
from orchestrator.scheduler.slots import plan
from orchestrator.store.engine import Engine

JOB_COLUMNS = (
    "id, kind, text, channel, chat, cron, tz, spec, missed, status, next_at, created, creator"
)
OPEN = ("claimed", "delivering", "retry")
# Why a slot was missed (``job_runs.error``), as the report words it (replies.py).
OFFLINE = "Fetch was not running"
CLOCK_JUMP = "the clock jumped forward"
OWNER = "owner"  # the creator of a job the owner made (the permission model's subject id)


@dataclass(frozen=True, slots=True)
class Job:
    id: int
    kind: str  # reminder | prompt
    text: str
    channel: str
    chat: str
    cron: str | None
    tz: str
    spec: str
    missed: str  # run_once | skip
    status: str  # active | paused | done | failed | cancelled
    next_at: float | None
    created: float
    # Who made it: ``owner``, or the maker's sender id on the job's channel (a member's
    # number). A fired prompt job speaks as them, with their authority (migration 12).
    creator: str = OWNER

    @property
    def key(self) -> SessionKey:
        return SessionKey(self.channel, self.chat)

    @property
    def recurring(self) -> bool:
        return self.cron is not None


@dataclass(frozen=True, slots=True)
class Run:
    id: int
    job_id: int
    slot: float
    status: str
    attempt: int
    late: bool
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Claim:
    job: Job
    run: Run


def _job(row: Any) -> Job:
    return Job(
        int(row[0]),
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        row[7],
        row[8],
        row[9],
        None if row[10] is None else float(row[10]),
        float(row[11]),
        str(row[12]),
    )


def _run(row: Any) -> Run:
    return Run(int(row[0]), int(row[1]), float(row[2]), row[3], int(row[4]), bool(row[5]), row[6])


RUN_COLUMNS = "r.id, r.job_id, r.slot, r.status, r.attempt, r.late, r.error"
J_COLUMNS = ", ".join("j." + c.strip() for c in JOB_COLUMNS.split(","))


class JobPort(Protocol):
    """The scheduler's job store. ``holder`` is the claiming process's token: a
    transition names it, so a worker whose claim was taken back changes nothing."""

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
    ) -> Job: ...

    async def get(self, job_id: int) -> Job | None: ...

    async def listing(self, key: SessionKey | None, statuses: tuple[str, ...]) -> list[Job]:
        """Jobs in ``statuses`` (of one chat, or all), soonest first."""

    async def set_status(
        self,
        job_id: int,
        new: str,
        allowed_from: tuple[str, ...],
        next_at: float | None = None,
        keep_next: bool = True,
    ) -> bool:
        """Move a job whose status is in ``allowed_from``; False if it was not."""

    async def set_missed_policy(self, job_id: int, policy: str) -> bool: ...

    async def next_due(self) -> float | None:
        """The earliest ``next_at`` of an active job."""

    # -- claiming --------------------------------------------------------------------
    async def claim_due(
        self,
        now: float,
        holder: str,
        lease: float,
        up_since: float,
        limit: int,
        why_missed: str = ...,
    ) -> tuple[list[Claim], int]: ...

    async def reclaim(
        self, now: float, holder: str, lease: float, *, orphans_of_others: bool
    ) -> tuple[list[Claim], list[Claim]]: ...

    async def renew(self, run_ids: list[int], holder: str, until: float) -> None: ...

    # -- transitions -----------------------------------------------------------------
    async def delivering(self, run_id: int, holder: str) -> bool: ...

    async def done(self, claim: Claim, holder: str, now: float) -> bool: ...

    async def close_finished(self, now: float) -> None: ...

    async def undeliver(self, run_id: int, holder: str) -> bool: ...

    async def retry(self, run_id: int, holder: str, error: str, next_try: float) -> bool: ...

    async def fail(self, claim: Claim, holder: str, error: str, now: float) -> bool: ...

    async def interrupted(self, claim: Claim, holder: str, now: float) -> bool: ...

    # -- what the owner must hear about ----------------------------------------------
    async def unreported(self, limit: int = 500) -> list[tuple[Job, Run]]: ...

    async def mark_reported(self, run_ids: list[int]) -> None: ...

    async def runs(self, job_id: int, limit: int = 20) -> list[Run]:
        """The job's runs, newest slot first."""

    async def counts(self) -> dict[str, int]:
        """How many jobs per status."""

    async def recent_prompt_runs(self, since: float) -> list[Claim]: ...


class SqliteJobs:
    def __init__(self, db: Engine) -> None:
        self._db = db

    def _skip_locked(self, table: str = "") -> str:
        """PostgreSQL: the rows a claim reads are locked, and rows another claim holds
        are skipped. SQLite's transaction holds the whole file already."""
        if self._db.dialect != "postgresql":
            return ""
        return f" FOR UPDATE{f' OF {table}' if table else ''} SKIP LOCKED"

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
        now = time.time()
        # An effect: the /remind, /schedule or /cron message is closed with it (once.py).
        async with self._db.effect() as db:
            cur = await db.execute(
                "INSERT INTO jobs(kind, text, channel, chat, cron, tz, spec, missed, status,"
                " next_at, created, updated, creator)"
                " VALUES (?,?,?,?,?,?,?,?, 'active', ?,?,?,?)",
                (
                    kind,
                    text,
                    key.channel,
                    key.chat,
                    cron,
                    tz,
                    spec,
                    missed,
                    next_at,
                    now,
                    now,
                    creator,
                ),
            )
            job_id = int(cur.lastrowid or 0)
        job = await self.get(job_id)
        assert job is not None
        return job

    async def get(self, job_id: int) -> Job | None:
        rows = list(
            await self._db.conn.execute_fetchall(
                f"SELECT {JOB_COLUMNS} FROM jobs WHERE id=?", (job_id,)
            )
        )
        return _job(rows[0]) if rows else None

    async def listing(self, key: SessionKey | None, statuses: tuple[str, ...]) -> list[Job]:
        await self.close_finished(time.time())  # a reminder that just fired is not listed
        marks = ",".join("?" * len(statuses))
        sql = f"SELECT {JOB_COLUMNS} FROM jobs WHERE status IN ({marks})"
        params: tuple[Any, ...] = statuses
        if key is not None:
            sql += " AND channel=? AND chat=?"
            params += (key.channel, key.chat)
        rows = await self._db.conn.execute_fetchall(
            sql + " ORDER BY next_at IS NULL, next_at, id", params
        )
        return [_job(r) for r in rows]

    async def set_status(
        self,
        job_id: int,
        new: str,
        allowed_from: tuple[str, ...],
        next_at: float | None = None,
        keep_next: bool = True,
    ) -> bool:
        marks = ",".join("?" * len(allowed_from))
        set_next = "" if keep_next else ", next_at=?"
        params: tuple[Any, ...] = (
            new,
            time.time(),
            *(() if keep_next else (next_at,)),
            job_id,
            *allowed_from,
        )
        async with self._db.transaction() as db:
            cur = await db.execute(
                f"UPDATE jobs SET status=?, updated=?{set_next} WHERE id=? AND status IN ({marks})",
                params,
            )
            return cur.rowcount == 1

    async def set_missed_policy(self, job_id: int, policy: str) -> bool:
        async with self._db.transaction() as db:
            cur = await db.execute(
                "UPDATE jobs SET missed=?, updated=? WHERE id=?", (policy, time.time(), job_id)
            )
            return cur.rowcount == 1

    async def next_due(self) -> float | None:
        rows = list(
            await self._db.conn.execute_fetchall(
                "SELECT MIN(next_at) FROM jobs WHERE status='active'"
            )
        )
        return None if not rows or rows[0][0] is None else float(rows[0][0])

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
        """Claim the due slot of up to ``limit`` jobs in one transaction: insert its run,
        advance the job to its next slot, record missed slots. Returns the claims and how
        many jobs were handled (a job whose slots were all skipped has no claim)."""
        claims: list[Claim] = []
        async with self._db.transaction(rows_locked=True) as db:
            rows = list(
                await db.execute_fetchall(
                    f"SELECT {JOB_COLUMNS} FROM jobs WHERE status='active' AND next_at <= ?"
                    f" ORDER BY next_at LIMIT ?{self._skip_locked()}",
                    (now, limit),
                )
            )
            for row in rows:
                job = _job(row)
                assert job.next_at is not None
                p = plan(job.next_at, job.cron, zone(job.tz), job.missed, up_since)
                if p.missed:
                    await db.executemany(
                        "INSERT INTO job_runs(job_id, slot, status, finished_at,"
                        " error) VALUES (?,?, 'missed', ?, ?) ON CONFLICT DO NOTHING",
                        [(job.id, s, now, why_missed) for s in p.missed],
                    )
                if p.more_missed:
                    await db.execute(
                        "UPDATE job_runs SET error=? || ' (and more slots after this one)'"
                        " WHERE job_id=? AND slot=?",
                        (why_missed, job.id, p.missed[-1]),
                    )
                # One-shots keep status 'active' with no next slot until their run ends.
                await db.execute(
                    "UPDATE jobs SET next_at=?, updated=? WHERE id=?", (p.next_at, now, job.id)
                )
                if p.run_slot is None:
                    continue  # all skipped: a one-shot is closed by close_finished
                cur = await db.execute(
                    "INSERT INTO job_runs(job_id, slot, status, attempt, holder,"
                    " lease_until, claimed_at, late) VALUES (?,?, 'claimed', 1, ?,?,?,?)"
                    " ON CONFLICT DO NOTHING",
                    (job.id, p.run_slot, holder, now + lease, now, int(p.late)),
                )
                if cur.rowcount == 1:  # 0: that slot already has a run; never a second
                    claims.append(
                        Claim(
                            job,
                            Run(int(cur.lastrowid or 0), job.id, p.run_slot, "claimed", 1, p.late),
                        )
                    )
        return claims, len(rows)

    async def reclaim(
        self, now: float, holder: str, lease: float, *, orphans_of_others: bool
    ) -> tuple[list[Claim], list[Claim]]:
        """Runs to take (back): retries whose backoff is over, claims whose lease ran out
        (or, at start, every claim of an earlier process: the lock proves it is gone).
        Returns (claimed again, interrupted mid-delivery: to be confirmed)."""
        stale = "(r.holder != ? OR r.lease_until < ?)" if orphans_of_others else "r.lease_until < ?"
        stale_args: tuple[Any, ...] = (holder, now) if orphans_of_others else (now,)
        async with self._db.transaction(rows_locked=True) as db:
            rows = list(
                await db.execute_fetchall(
                    f"SELECT {RUN_COLUMNS}, {J_COLUMNS}"
                    " FROM job_runs r JOIN jobs j ON j.id = r.job_id WHERE"
                    f" ((r.status='retry' AND r.next_try <= ?) OR (r.status IN ('claimed',"
                    f" 'delivering') AND {stale})) ORDER BY r.slot LIMIT 1000"
                    f"{self._skip_locked('r')}",
                    (now, *stale_args),
                )
            )
            again: list[Claim] = []
            unsure: list[Claim] = []
            for row in rows:
                run, job = _run(row[:7]), _job(row[7:])
                bump = 1 if run.status == "retry" else 0
                await db.execute(
                    "UPDATE job_runs SET holder=?, lease_until=?, attempt=attempt+?,"
                    " status=CASE status WHEN 'retry' THEN 'claimed' ELSE status END"
                    " WHERE id=?",
                    (holder, now + lease, bump, run.id),
                )
                status = "claimed" if run.status == "retry" else run.status
                claim = Claim(
                    job,
                    Run(
                        run.id,
                        run.job_id,
                        run.slot,
                        status,
                        run.attempt + bump,
                        run.late,
                        run.error,
                    ),
                )
                (unsure if status == "delivering" else again).append(claim)
        return again, unsure

    async def renew(self, run_ids: list[int], holder: str, until: float) -> None:
        if not run_ids:
            return
        async with self._db.transaction() as db:
            await db.executemany(
                "UPDATE job_runs SET lease_until=? WHERE id=? AND holder=? AND status IN"
                " ('claimed', 'delivering')",
                [(until, i, holder) for i in run_ids],
            )

    # -- transitions -----------------------------------------------------------------
    async def _move(
        self,
        run_id: int,
        holder: str,
        to: str,
        from_: tuple[str, ...],
        extra: str = "",
        params: tuple[Any, ...] = (),
    ) -> bool:
        # One statement, autocommit: atomic on its own and one round trip, which is what
        # lets a burst of 10,000 due reminders go out at thousands a second.
        marks = ",".join("?" * len(from_))
        cur = await self._db.write(
            f"UPDATE job_runs SET status=?{extra} WHERE id=? AND holder=? AND status IN ({marks})",
            (to, *params, run_id, holder, *from_),
        )
        return cur.rowcount == 1

    async def delivering(self, run_id: int, holder: str) -> bool:
        return await self._move(run_id, holder, "delivering", ("claimed",))

    async def done(self, claim: Claim, holder: str, now: float) -> bool:
        """The run is done. A one-shot job is closed by ``close_finished`` (derived from
        its runs, so a crash between the two writes cannot leave it half done)."""
        return await self._move(
            claim.run.id, holder, "done", ("delivering",), ", finished_at=?, error=NULL", (now,)
        )

    async def close_finished(self, now: float) -> None:
        """One-shot jobs whose slot has been claimed and whose run has ended are done."""
        await self._db.write(
            "UPDATE jobs SET status='done', updated=? WHERE status='active' AND cron IS NULL"
            " AND next_at IS NULL AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE"
            " r.job_id = jobs.id AND r.status IN ('claimed', 'delivering', 'retry'))",
            (now,),
        )

    async def undeliver(self, run_id: int, holder: str) -> bool:
        """The delivery path says a crash stopped it before anything arrived."""
        return await self._move(run_id, holder, "claimed", ("delivering",))

    async def retry(self, run_id: int, holder: str, error: str, next_try: float) -> bool:
        return await self._move(
            run_id,
            holder,
            "retry",
            ("claimed", "delivering"),
            ", error=?, next_try=?, lease_until=NULL",
            (error, next_try),
        )

    async def fail(self, claim: Claim, holder: str, error: str, now: float) -> bool:
        """Out of attempts: the run and its job are failed (the owner is told)."""
        async with self._db.transaction() as db:
            cur = await db.execute(
                "UPDATE job_runs SET status='failed', error=?, finished_at=? WHERE id=? AND"
                " holder=? AND status IN ('claimed', 'delivering')",
                (error, now, claim.run.id, holder),
            )
            if cur.rowcount != 1:
                return False
            await db.execute(
                "UPDATE jobs SET status='failed', updated=? WHERE id=? AND"
                " status IN ('active', 'paused')",
                (now, claim.job.id),
            )
            return True

    async def interrupted(self, claim: Claim, holder: str, now: float) -> bool:
        return await self._move(
            claim.run.id,
            holder,
            "interrupted",
            ("delivering",),
            ", finished_at=?, error=?",
            (now, "Fetch stopped while sending it"),
        )

    # -- what the owner must hear about ------------------------------------------------
    async def unreported(self, limit: int = 500) -> list[tuple[Job, Run]]:
        rows = await self._db.conn.execute_fetchall(
            f"SELECT {RUN_COLUMNS}, {J_COLUMNS}"
            " FROM job_runs r JOIN jobs j ON j.id = r.job_id WHERE r.reported = 0 AND"
            " r.status IN ('missed', 'interrupted', 'failed') ORDER BY r.job_id, r.slot"
            " LIMIT ?",
            (limit,),
        )
        return [(_job(r[7:]), _run(r[:7])) for r in rows]

    async def mark_reported(self, run_ids: list[int]) -> None:
        async with self._db.transaction() as db:
            await db.executemany(
                "UPDATE job_runs SET reported=1 WHERE id=?", [(i,) for i in run_ids]
            )

    async def runs(self, job_id: int, limit: int = 20) -> list[Run]:
        rows = await self._db.conn.execute_fetchall(
            f"SELECT {RUN_COLUMNS} FROM job_runs r WHERE r.job_id=? ORDER BY r.slot DESC LIMIT ?",
            (job_id, limit),
        )
        return [_run(r) for r in rows]

    async def counts(self) -> dict[str, int]:
        rows = await self._db.conn.execute_fetchall(
            "SELECT status, COUNT(*) FROM jobs GROUP BY status"
        )
        return {str(r[0]): int(r[1]) for r in rows}

    async def recent_prompt_runs(self, since: float) -> list[Claim]:
        rows = await self._db.conn.execute_fetchall(
            f"SELECT {RUN_COLUMNS}, {J_COLUMNS}"
            " FROM job_runs r JOIN jobs j ON j.id = r.job_id WHERE j.kind='prompt' AND"
            " r.claimed_at >= ? AND r.status IN ('done', 'delivering', 'claimed', 'retry')",
            (since,),
        )
        return [Claim(_job(r[7:]), _run(r[:7])) for r in rows]
