"""The scheduler's guarantees, tick by tick on a clock the test moves, on a real SQLite
file: one run per slot, leases, retries, misses, one scheduler per database."""

from __future__ import annotations

import asyncio
import time

import pytest

from orchestrator.scheduler.cron import parse_cron
from orchestrator.scheduler.jobs import Claim
from orchestrator.scheduler.localtime import zone
from orchestrator.scheduler.phrases import When, parse_when
from orchestrator.scheduler.service import SchedulingOff
from tests.scheduler.conftest import BERLIN, OWNER, Rig, RigFactory, berlin

T0 = berlin(2025, 3, 3, 8, 0)  # a Monday


async def remind(rig: Rig, text: str, phrase: str, **kw: str) -> int:
    when = parse_when(phrase, rig.clock.now(), zone(BERLIN))
    job = await rig.scheduler.create(kind="reminder", text=text, when=when, home=OWNER, **kw)
    return job.id


async def every(rig: Rig, text: str, expr: str, **kw: str) -> int:
    job = await rig.scheduler.create(
        kind="reminder", text=text, when=When(None, parse_cron(expr), expr), home=OWNER, **kw
    )
    return job.id


async def runs(rig: Rig, job_id: int) -> list[tuple[float, str]]:
    return [(r.slot, r.status) for r in reversed(await rig.scheduler.jobs.runs(job_id, 5000))]


async def test_one_shot_fires_once_at_its_time(rig_factory: RigFactory) -> None:
    rig = await rig_factory(T0)
    job = await remind(rig, "tea", "in 10m")
    assert await rig.tick() == 0
    rig.clock.advance(599)
    assert await rig.tick() == 0
    rig.clock.advance(1)
    assert await rig.tick() == 1
    for _ in range(5):
        rig.clock.advance(1)
        assert await rig.tick() == 0
    assert rig.delivery.delivered == [(job, T0 + 600)]
    assert (await rig.scheduler.jobs.get(job)).status == "done"  # type: ignore[union-attr]


async def test_a_run_three_ticks_long_fires_once_per_slot(rig_factory: RigFactory) -> None:
    rig = await rig_factory(T0)
    job = await every(rig, "slow", "* * * * *")
    rig.delivery.gate = asyncio.Event()
    rig.clock.advance(60)
    assert await rig.scheduler.tick() == 1  # the 08:01 slot, now running
    for _ in range(3):  # three ticks while it still runs: nothing new is claimed
        rig.clock.advance(1)
        assert await rig.scheduler.tick() == 0
    rig.delivery.gate.set()
    await rig.scheduler.idle()
    for minute in range(2, 6):
        rig.clock.t = T0 + 60 * minute
        rig.delivery.gate = asyncio.Event()
        assert await rig.scheduler.tick() == 1
        for _ in range(3):
            rig.clock.advance(1)
            assert await rig.scheduler.tick() == 0
        rig.delivery.gate.set()
        await rig.scheduler.idle()
    slots = [T0 + 60 * m for m in range(1, 6)]
    assert rig.delivery.started == [(job, s) for s in slots]
    assert rig.delivery.delivered == [(job, s) for s in slots]
    assert await runs(rig, job) == [(s, "done") for s in slots]


async def test_a_run_longer_than_its_period_delays_the_next_slot_never_drops_it(
    rig_factory: RigFactory,
) -> None:
    rig = await rig_factory(T0)
    job = await every(rig, "slower", "* * * * *")
    rig.delivery.gate = asyncio.Event()
    rig.clock.advance(60)
    await rig.scheduler.tick()
    rig.clock.advance(60)
    assert await rig.scheduler.tick() == 1  # the next slot is claimed, waits its turn
    await asyncio.sleep(0.05)
    assert rig.delivery.started == [(job, T0 + 60)]  # no overlap
    rig.delivery.gate.set()
    await rig.scheduler.idle()
    assert rig.delivery.delivered == [(job, T0 + 60), (job, T0 + 120)]


async def test_second_scheduler_on_the_same_database_refuses(rig_factory: RigFactory) -> None:
    first = await rig_factory(T0)
    second = await rig_factory(T0)
    assert first.scheduler.running and not second.scheduler.running
    line = second.scheduler.status_line()
    assert "not running here" in line and "pid" in line and "fetch.db" in line
    with pytest.raises(SchedulingOff, match="Scheduling is off"):
        await remind(second, "x", "in 1m")
    await remind(first, "x", "in 1m")
    second.clock.advance(120)
    assert await second.tick() == 0  # it never claims anything
    await first.scheduler.stop()
    third = await rig_factory(T0 + 120)
    assert third.scheduler.running  # the lock went with the first one
    assert await third.tick() == 1


async def test_failed_runs_retry_with_backoff_then_the_job_fails_and_the_owner_is_told(
    rig_factory: RigFactory,
) -> None:
    rig = await rig_factory(T0)
    job = await remind(rig, "water the plants", "in 1m")
    rig.delivery.fail = True
    rig.clock.advance(60)
    assert await rig.tick() == 1  # attempt 1 fails: retry in 30 s
    rig.clock.advance(29)
    assert await rig.tick() == 0
    rig.clock.advance(1)
    assert await rig.tick() == 1  # attempt 2 fails: retry in 60 s
    rig.clock.advance(59)
    assert await rig.tick() == 0
    rig.clock.advance(1)
    assert await rig.tick() == 1  # attempt 3 fails: out of attempts
    assert len(rig.delivery.started) == 3 and not rig.delivery.delivered
    said = rig.said()
    assert any(
        "#1 “water the plants” failed 3 times" in s
        and "the channel is down" in s
        and "/cron resume 1" in s
        for s in said
    ), said
    assert (await rig.scheduler.jobs.get(job)).status == "failed"  # type: ignore[union-attr]
    rig.clock.advance(3600)
    assert await rig.tick() == 0 and rig.said() == []  # told once, nothing more runs


async def test_retry_that_succeeds_delivers_once(rig_factory: RigFactory) -> None:
    rig = await rig_factory(T0)
    job = await remind(rig, "x", "in 1m")
    rig.delivery.fail = True
    rig.clock.advance(60)
    await rig.tick()
    rig.delivery.fail = False
    rig.clock.advance(30)
    await rig.tick()
    assert rig.delivery.delivered == [(job, T0 + 60)]
    assert await runs(rig, job) == [(T0 + 60, "done")]


async def test_missed_slots_run_once_now_and_every_miss_is_reported(
    rig_factory: RigFactory,
) -> None:
    before = await rig_factory(T0)
    job = await every(before, "check the build", "0 9 * * *")
    await before.scheduler.stop()  # Fetch is off from Monday 08:00 ...
    after = await rig_factory(berlin(2025, 3, 6, 10, 30))  # ... to Thursday 10:30
    assert await after.tick() == 1
    slots = [berlin(2025, 3, d, 9, 0) for d in (3, 4, 5, 6)]
    assert after.delivery.delivered == [(job, slots[-1])]  # the latest, once, late
    assert await runs(after, job) == [(s, "missed") for s in slots[:-1]] + [(slots[-1], "done")]
    report = " ".join(after.said())
    assert "Missed while I was offline: #1 “check the build”" in report
    assert "Mon 3 Mar 09:00 CET, Tue 4 Mar 09:00 CET, Wed 5 Mar 09:00 CET" in report
    assert "I ran the latest one late" in report
    next_at = (await after.scheduler.jobs.get(job)).next_at  # type: ignore[union-attr]
    assert next_at == berlin(2025, 3, 7, 9, 0)
    after.clock.advance(60)
    await after.tick()
    assert after.said() == []  # each miss is reported once


async def test_missed_slots_skipped_by_policy_are_recorded_and_reported(
    rig_factory: RigFactory,
) -> None:
    before = await rig_factory(T0)
    job = await every(before, "standup", "30 9 * * 1-5", missed="skip")
    once = await remind(before, "call the bank", "at 11:00", missed="skip")
    late = await remind(before, "buy milk", "at 12:00")
    await before.scheduler.stop()
    after = await rig_factory(berlin(2025, 3, 4, 13, 0))
    assert await after.tick() == 1  # only "buy milk" (run_once) runs, late
    assert after.delivery.delivered == [(late, berlin(2025, 3, 3, 12, 0))]
    assert await runs(after, job) == [
        (berlin(2025, 3, 3, 9, 30), "missed"),
        (berlin(2025, 3, 4, 9, 30), "missed"),
    ]
    assert await runs(after, once) == [(berlin(2025, 3, 3, 11, 0), "missed")]
    report = " ".join(after.said())
    assert "#1 “standup”" in report and "#2 “call the bank”" in report
    assert "skipped, as set for this job" in report


async def test_a_late_reminder_says_it_is_late(rig_factory: RigFactory) -> None:
    before = await rig_factory(T0, recording=False)
    await remind(before, "stretch", "at 8:30")
    await before.scheduler.stop()
    after = await rig_factory(T0 + 3600, recording=False)
    await after.tick()
    said = after.said()
    assert said == ["⏰ stretch (due 08:30; I was offline then, so it comes late)"]


async def test_restart_within_the_grace_is_not_a_miss(rig_factory: RigFactory) -> None:
    before = await rig_factory(T0, recording=False)
    await remind(before, "stretch", "in 10s")
    await before.scheduler.stop()
    after = await rig_factory(T0 + 30, recording=False)
    await after.tick()
    assert after.said() == ["⏰ stretch"]


async def test_a_crashed_claim_is_taken_back_by_the_next_scheduler(
    rig_factory: RigFactory,
) -> None:
    crashed = await rig_factory(T0)
    job = await remind(crashed, "x", "in 1m")
    crashed.delivery.gate = asyncio.Event()  # claimed, never finished: then "killed"
    crashed.clock.advance(60)
    claims, _ = await crashed.scheduler.jobs.claim_due(
        crashed.clock.now(), "dead-worker", 300, T0, 10
    )
    assert len(claims) == 1
    crashed.scheduler.lock.release()
    later = await rig_factory(T0 + 61)
    assert later.scheduler.running
    assert await later.tick() == 1  # at once: the lock proves the holder is gone
    assert later.delivery.delivered == [(job, T0 + 60)]
    assert await runs(later, job) == [(T0 + 60, "done")]


async def test_an_expired_lease_is_taken_back(rig_factory: RigFactory) -> None:
    rig = await rig_factory(T0)
    await rig.tick()  # the first tick (start-up recovery) is behind us
    job = await remind(rig, "x", "in 1m")
    rig.clock.advance(60)
    claims, _ = await rig.scheduler.jobs.claim_due(rig.clock.now(), "stuck-worker", 300, T0, 10)
    assert len(claims) == 1
    rig.clock.advance(299)
    assert await rig.tick() == 0  # the lease still holds
    rig.clock.advance(2)
    assert await rig.tick() == 1
    assert rig.delivery.delivered == [(job, T0 + 60)]


async def test_a_slot_can_never_be_claimed_twice(rig_factory: RigFactory) -> None:
    rig = await rig_factory(T0)
    job = await remind(rig, "x", "in 1m")
    rig.clock.advance(60)
    assert await rig.tick() == 1
    # Even if the job were put back on the same slot (a bug, a restored backup), the
    # unique (job, slot) key refuses a second run.
    await rig.store.db.conn.execute(
        "UPDATE jobs SET status='active', next_at=? WHERE id=?", (T0 + 60, job)
    )
    assert await rig.tick() == 0
    assert rig.delivery.delivered == [(job, T0 + 60)]


async def test_interrupted_reminder_is_reported_not_sent_twice(
    rig_factory: RigFactory,
) -> None:
    crashed = await rig_factory(T0, recording=False)
    job = await remind(crashed, "take the pills", "in 1m")
    crashed.clock.advance(60)
    claims, _ = await crashed.scheduler.jobs.claim_due(crashed.clock.now(), "dead", 300, T0, 10)
    await crashed.scheduler.jobs.delivering(claims[0].run.id, "dead")  # then SIGKILL
    await crashed.scheduler.stop()
    later = await rig_factory(T0 + 65, recording=False)
    await later.tick()
    said = later.said()
    assert not any(s.startswith("⏰") for s in said)  # at most once: never re-sent
    assert any(
        "stopped while sending #1 “take the pills”" in s and "may not have reached you" in s
        for s in said
    ), said
    assert await runs(later, job) == [(T0 + 60, "interrupted")]


async def test_interrupted_prompt_job_is_confirmed_by_the_gateway_record(
    rig_factory: RigFactory,
) -> None:
    crashed = await rig_factory(T0, recording=False)
    job = await crashed.scheduler.create(
        kind="prompt", text="/status", when=parse_when("in 1m", T0, zone(BERLIN)), home=OWNER
    )
    crashed.clock.advance(60)
    await crashed.tick()
    assert [i.message_id for i in crashed.injected] == [f"job:{job.id}:{int(T0 + 60)}"]
    assert crashed.injected[0].from_owner and crashed.injected[0].chat.startswith("job-")
    # Pretend the process died after the hand-over, before it wrote "done".
    await crashed.store.db.conn.execute("UPDATE job_runs SET status='delivering'")
    await crashed.scheduler.stop()
    later = await rig_factory(T0 + 70, recording=False)
    await later.tick()
    assert later.injected == []  # the gateway had it: done, not injected again
    assert await runs(later, job.id) == [(T0 + 60, "done")]


async def test_pause_resume_cancel(rig_factory: RigFactory) -> None:
    rig = await rig_factory(T0)
    job_id = await every(rig, "x", "*/10 * * * *")
    job = await rig.scheduler.jobs.get(job_id)
    assert job is not None and await rig.scheduler.pause(job)
    rig.clock.advance(3600)
    assert await rig.tick() == 0  # paused: nothing, and no misses either
    resumed = await rig.scheduler.resume(job)
    assert resumed is not None and resumed.next_at == T0 + 3600 + 600
    rig.clock.advance(600)
    assert await rig.tick() == 1
    assert await rig.scheduler.cancel(resumed)
    rig.clock.advance(600)
    assert await rig.tick() == 0
    assert rig.said() == []


async def test_status_line(rig_factory: RigFactory) -> None:
    rig = await rig_factory(T0)
    await remind(rig, "x", "in 90m")
    assert rig.scheduler.status_line() == "scheduler: 1 active job, next in 1 hour 30 minutes"


class SpeedClock:
    """Real time, 120x faster: one scheduled minute passes in half a real second."""

    SPEED = 120.0

    def __init__(self, start: float) -> None:
        self.start, self.m0 = start, time.monotonic()

    def now(self) -> float:
        return self.start + (time.monotonic() - self.m0) * self.SPEED

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds / self.SPEED)


async def test_real_loop_a_run_three_ticks_long_fires_once_per_slot(
    rig_factory: RigFactory,
) -> None:
    # The tick is 6 scheduled seconds (50 ms real); each run takes 150 ms real, three ticks.
    rig = await rig_factory(T0, start=False, FETCH__SCHEDULER__TICK_SECONDS="6")
    clock = SpeedClock(T0)
    rig.scheduler.clock = clock
    slow = rig.delivery
    real_deliver = slow.deliver

    async def three_ticks(claim: Claim) -> None:
        await asyncio.sleep(0.15)
        await real_deliver(claim)

    slow.deliver = three_ticks  # type: ignore[method-assign]
    await rig.scheduler.start()
    job = await every(rig, "slow", "* * * * *")
    await asyncio.sleep(6 * 60 / SpeedClock.SPEED + 0.3)  # six scheduled minutes
    await rig.scheduler.stop()
    slots = [s for _job, s in slow.delivered]
    assert len(slots) >= 5
    assert slots == [T0 + 60 * m for m in range(1, len(slots) + 1)]  # each once, in order
    assert all(status == "done" for _slot, status in await runs(rig, job))
