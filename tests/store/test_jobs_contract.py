"""What the scheduler's job store (``JobPort``) promises, asserted for ``SqliteJobs``
on a real file and for ``MemoryJobs`` alike: claims, leases, the holder guard, misses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.events import SessionKey
from orchestrator.scheduler.jobs import Job, JobPort, SqliteJobs
from orchestrator.scheduler.memory_jobs import MemoryJobs
from orchestrator.scheduler.slots import MISS_GRACE_SECONDS
from tests.store.conftest import ALL, engine_store

KEY = SessionKey("terminal", "owner")
OTHER = SessionKey("telegram", "42")
T0 = 1_767_258_000.0  # 2026-01-01 09:00 UTC
DAY = 86_400.0
LEASE = 300.0
ME, THEM = "me", "them"


@pytest.fixture(params=ALL)
async def jobs(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[JobPort]:
    if request.param != "memory":
        async with engine_store(request.param, tmp_path, request) as store:
            yield SqliteJobs(store.db)
    else:
        yield MemoryJobs()


async def _add(
    jobs: JobPort,
    at: float,
    *,
    cron: str | None = None,
    kind: str = "reminder",
    missed: str = "run_once",
    key: SessionKey = KEY,
    text: str = "tea",
) -> Job:
    return await jobs.add(
        kind=kind, text=text, key=key, cron=cron, tz="UTC", spec="spec", missed=missed, next_at=at
    )


# -- jobs ------------------------------------------------------------------------------
async def test_a_job_keeps_who_made_it(jobs: JobPort) -> None:
    owners = await _add(jobs, T0 + 60)
    members = await jobs.add(
        kind="prompt",
        text="t",
        key=KEY,
        cron=None,
        tz="UTC",
        spec="s",
        missed="run_once",
        next_at=T0 + 61,
        creator="447700900123",
    )
    assert owners.creator == "owner" and members.creator == "447700900123"
    got = await jobs.get(members.id)
    assert got is not None and got.creator == "447700900123"


async def test_a_new_job_is_active_and_listed_soonest_first(jobs: JobPort) -> None:
    later = await _add(jobs, T0 + 60, text="later")
    sooner = await _add(jobs, T0 + 10, text="sooner")
    elsewhere = await _add(jobs, T0 + 5, key=OTHER)
    assert (later.status, later.text, later.key, later.next_at, later.recurring) == (
        "active",
        "later",
        KEY,
        T0 + 60,
        False,
    )
    assert await jobs.get(later.id) == later
    assert await jobs.get(later.id + 100) is None
    mine = await jobs.listing(KEY, ("active",))
    assert [j.id for j in mine] == [sooner.id, later.id]
    assert [j.id for j in await jobs.listing(None, ("active",))] == [
        elsewhere.id,
        sooner.id,
        later.id,
    ]
    assert await jobs.next_due() == T0 + 5
    assert await jobs.counts() == {"active": 3}


async def test_status_moves_only_from_the_allowed_statuses(jobs: JobPort) -> None:
    job = await _add(jobs, T0)
    assert await jobs.set_status(job.id, "paused", ("active",))
    assert not await jobs.set_status(job.id, "paused", ("active",))
    assert await jobs.next_due() is None  # a paused job is never due
    assert await jobs.set_status(job.id, "active", ("paused",), next_at=T0 + 99, keep_next=False)
    got = await jobs.get(job.id)
    assert got is not None and (got.status, got.next_at) == ("active", T0 + 99)
    assert await jobs.set_missed_policy(job.id, "skip")
    got = await jobs.get(job.id)
    assert got is not None and got.missed == "skip"
    assert not await jobs.set_missed_policy(job.id + 100, "skip")
    assert not await jobs.set_status(job.id + 100, "paused", ("active",))


# -- claiming and delivering -----------------------------------------------------------
async def test_a_due_slot_is_claimed_once_and_delivered(jobs: JobPort) -> None:
    job = await _add(jobs, T0)
    future = await _add(jobs, T0 + 3600)
    claims, handled = await jobs.claim_due(T0 + 1, ME, LEASE, T0 - 10, 100)
    assert handled == 1 and [c.job.id for c in claims] == [job.id]
    run = claims[0].run
    assert (run.slot, run.status, run.attempt, run.late) == (T0, "claimed", 1, False)
    assert await jobs.claim_due(T0 + 2, THEM, LEASE, T0 - 10, 100) == ([], 0)
    assert not await jobs.delivering(run.id, THEM)  # not the holder: nothing changes
    assert await jobs.delivering(run.id, ME)
    assert not await jobs.delivering(run.id, ME)  # already delivering
    assert await jobs.done(claims[0], ME, T0 + 3)
    assert [(r.status, r.error) for r in await jobs.runs(job.id)] == [("done", None)]
    await jobs.close_finished(T0 + 3)
    got = await jobs.get(job.id)
    assert got is not None and got.status == "done"
    assert [j.id for j in await jobs.listing(KEY, ("active",))] == [future.id]
    assert await jobs.counts() == {"active": 1, "done": 1}


async def test_a_one_shot_stays_open_while_its_run_is(jobs: JobPort) -> None:
    job = await _add(jobs, T0)
    claims, _ = await jobs.claim_due(T0, ME, LEASE, T0 - 10, 100)
    await jobs.close_finished(T0 + 1)
    got = await jobs.get(job.id)
    assert got is not None and (got.status, got.next_at) == ("active", None)
    assert await jobs.delivering(claims[0].run.id, ME)
    assert await jobs.interrupted(claims[0], ME, T0 + 2)
    await jobs.close_finished(T0 + 2)
    got = await jobs.get(job.id)
    assert got is not None and got.status == "done"


async def test_claims_respect_the_limit_in_due_order(jobs: JobPort) -> None:
    added = [await _add(jobs, T0 + i) for i in (3, 1, 2)]
    claims, handled = await jobs.claim_due(T0 + 10, ME, LEASE, T0 - 10, 2)
    assert handled == 2
    assert [c.job.id for c in claims] == [added[1].id, added[2].id]
    claims, handled = await jobs.claim_due(T0 + 10, ME, LEASE, T0 - 10, 2)
    assert [c.job.id for c in claims] == [added[0].id] and handled == 1


async def test_a_recurring_job_advances_to_its_next_slot(jobs: JobPort) -> None:
    job = await _add(jobs, T0, cron="0 9 * * *")
    claims, _ = await jobs.claim_due(T0, ME, LEASE, T0 - 10, 100)
    assert [c.run.slot for c in claims] == [T0]
    got = await jobs.get(job.id)
    assert got is not None and got.next_at == T0 + DAY and got.recurring
    claims, _ = await jobs.claim_due(T0 + DAY, ME, LEASE, T0 - 10, 100)
    assert [c.run.slot for c in claims] == [T0 + DAY]
    assert [r.slot for r in await jobs.runs(job.id)] == [T0 + DAY, T0]
    assert [r.slot for r in await jobs.runs(job.id, limit=1)] == [T0 + DAY]


# -- leases, retries, crashes ----------------------------------------------------------
async def test_a_retry_is_claimed_again_once_its_backoff_is_over(jobs: JobPort) -> None:
    await _add(jobs, T0)
    claims, _ = await jobs.claim_due(T0, ME, LEASE, T0 - 10, 100)
    run_id = claims[0].run.id
    assert await jobs.delivering(run_id, ME)
    assert not await jobs.retry(run_id, THEM, "nope", T0 + 30)
    assert await jobs.retry(run_id, ME, "channel down", T0 + 30)
    assert await jobs.reclaim(T0 + 29, ME, LEASE, orphans_of_others=False) == ([], [])
    again, unsure = await jobs.reclaim(T0 + 30, ME, LEASE, orphans_of_others=False)
    assert unsure == [] and len(again) == 1
    run = again[0].run
    assert (run.id, run.status, run.attempt, run.error) == (run_id, "claimed", 2, "channel down")
    assert await jobs.delivering(run_id, ME)


async def test_an_expired_lease_is_taken_back(jobs: JobPort) -> None:
    await _add(jobs, T0)
    await _add(jobs, T0 + 1)
    claims, _ = await jobs.claim_due(T0 + 1, THEM, LEASE, T0 - 10, 100)
    assert await jobs.delivering(claims[1].run.id, THEM)
    assert await jobs.reclaim(T0 + LEASE, ME, LEASE, orphans_of_others=False) == ([], [])
    await jobs.renew([claims[0].run.id], THEM, T0 + 2 * LEASE)
    again, unsure = await jobs.reclaim(T0 + LEASE + 2, ME, LEASE, orphans_of_others=False)
    assert [c.run.id for c in again] == []  # renewed: still THEM's
    assert [(c.run.id, c.run.status, c.run.attempt) for c in unsure] == [
        (claims[1].run.id, "delivering", 1)
    ]
    # The old holder can no longer move it; the new one decides.
    assert not await jobs.done(unsure[0], THEM, T0 + LEASE + 3)
    assert await jobs.undeliver(unsure[0].run.id, ME)
    assert await jobs.delivering(unsure[0].run.id, ME)
    assert await jobs.done(unsure[0], ME, T0 + LEASE + 4)


async def test_at_start_every_claim_of_an_earlier_process_is_taken(jobs: JobPort) -> None:
    await _add(jobs, T0)
    claims, _ = await jobs.claim_due(T0, THEM, LEASE, T0 - 10, 100)
    assert await jobs.reclaim(T0 + 1, ME, LEASE, orphans_of_others=False) == ([], [])
    again, unsure = await jobs.reclaim(T0 + 1, ME, LEASE, orphans_of_others=True)
    assert [c.run.id for c in again] == [claims[0].run.id] and unsure == []
    assert again[0].run.attempt == 1  # taken over, not a new attempt
    assert await jobs.reclaim(T0 + 2, ME, LEASE, orphans_of_others=True) == ([], [])
    assert not await jobs.delivering(claims[0].run.id, THEM)
    assert await jobs.delivering(claims[0].run.id, ME)


# -- what the owner must hear about ----------------------------------------------------
async def test_a_failed_run_fails_its_job_and_is_reported_once(jobs: JobPort) -> None:
    job = await _add(jobs, T0, cron="0 9 * * *")
    claims, _ = await jobs.claim_due(T0, ME, LEASE, T0 - 10, 100)
    assert not await jobs.fail(claims[0], THEM, "boom", T0 + 1)
    assert await jobs.fail(claims[0], ME, "boom", T0 + 1)
    got = await jobs.get(job.id)
    assert got is not None and got.status == "failed"
    reported = await jobs.unreported()
    assert [(j.id, r.status, r.error) for j, r in reported] == [(job.id, "failed", "boom")]
    await jobs.mark_reported([r.id for _j, r in reported])
    assert await jobs.unreported() == []


async def test_slots_missed_while_down_follow_the_policy(jobs: JobPort) -> None:
    up = T0 + 3 * DAY + 3600  # started an hour after the fourth 9:00 slot
    skip = await _add(jobs, T0, cron="0 9 * * *", missed="skip", text="skip")
    once = await _add(jobs, T0, cron="0 9 * * *", missed="run_once", text="once")
    claims, handled = await jobs.claim_due(up, ME, LEASE, up, 100)
    assert handled == 2
    assert [(c.job.id, c.run.slot, c.run.late) for c in claims] == [(once.id, T0 + 3 * DAY, True)]
    assert [(r.slot, r.status) for r in await jobs.runs(skip.id)] == [
        (T0 + i * DAY, "missed") for i in (3, 2, 1, 0)
    ]
    assert [(r.slot, r.status) for r in await jobs.runs(once.id)] == [
        (T0 + 3 * DAY, "claimed"),
        *((T0 + i * DAY, "missed") for i in (2, 1, 0)),
    ]
    for job in (skip, once):
        got = await jobs.get(job.id)
        assert got is not None and got.next_at == T0 + 4 * DAY
    missed = await jobs.unreported()
    assert len(missed) == 7
    assert {r.error for _j, r in missed} == {"Fetch was not running"}


async def test_a_one_shot_missed_under_skip_is_closed(jobs: JobPort) -> None:
    job = await _add(jobs, T0, missed="skip")
    up = T0 + MISS_GRACE_SECONDS + 3600
    assert await jobs.claim_due(up, ME, LEASE, up, 100) == ([], 1)
    await jobs.close_finished(up)
    got = await jobs.get(job.id)
    assert got is not None and got.status == "done"
    assert [(r.status, r.late) for r in await jobs.runs(job.id)] == [("missed", False)]


async def test_recent_prompt_runs_are_found_for_routing(jobs: JobPort) -> None:
    prompt = await _add(jobs, T0, kind="prompt", text="summarise the news")
    await _add(jobs, T0)  # a reminder: never routed
    claims, _ = await jobs.claim_due(T0, ME, LEASE, T0 - 10, 100)
    found = await jobs.recent_prompt_runs(T0 - 1)
    assert [(c.job.id, c.run.status) for c in found] == [(prompt.id, "claimed")]
    assert await jobs.recent_prompt_runs(T0 + 1) == []
    prompt_claim = next(c for c in claims if c.job.id == prompt.id)
    assert await jobs.delivering(prompt_claim.run.id, ME)
    assert await jobs.interrupted(prompt_claim, ME, T0 + 1)
    assert await jobs.recent_prompt_runs(T0 - 1) == []
