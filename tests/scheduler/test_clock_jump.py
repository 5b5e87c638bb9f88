"""A forward jump of the clock while Fetch runs (a suspend and resume, an NTP step) is
treated like a restart (issue 22): the latest slot it skipped runs once, late; the
others are recorded as missed and reported once. Before, each skipped slot fired on its
own tick: a ``*/5`` job 36 times in 36 seconds after a three-hour jump."""

from __future__ import annotations

import asyncio

from tests.scheduler.conftest import RigFactory
from tests.scheduler.test_service import T0, SpeedClock, every, runs

# The laptop slept almost three hours: it wakes at 11:01:41, between two slots.
JUMP = 3 * 3600 - 100


async def test_a_forward_jump_runs_the_latest_slot_once_and_reports_the_rest(
    rig_factory: RigFactory,
) -> None:
    rig = await rig_factory(T0)
    job = await every(rig, "check the build", "*/5 * * * *")
    rig.clock.advance(300)
    assert await rig.tick() == 1  # 08:05, on time
    rig.clock.advance(1)
    await rig.tick()
    rig.said()
    rig.clock.advance(JUMP)
    fired = 0
    for _ in range(40):  # forty ticks, a second apart
        fired += await rig.tick()
        rig.clock.advance(1)
    assert fired == 1
    slots = [T0 + 300 * n for n in range(2, 37)]  # 08:10 ... 11:00
    assert rig.delivery.delivered == [(job, T0 + 300), (job, slots[-1])]
    assert await runs(rig, job) == [(T0 + 300, "done")] + [(s, "missed") for s in slots[:-1]] + [
        (slots[-1], "done")
    ]
    report = " ".join(rig.said())
    assert "#1 “check the build”" in report and "I ran the latest one late" in report
    # Said as what happened: not "while I was offline" (Fetch ran all along).
    assert "Missed when the clock jumped forward" in report and "offline" not in report
    assert (await rig.scheduler.jobs.get(job)).next_at == T0 + 300 * 37  # type: ignore[union-attr]


async def test_ticks_a_minute_apart_are_no_jump(rig_factory: RigFactory) -> None:
    """A slow tick (a busy machine) is not a jump: every slot still runs, none is late."""
    rig = await rig_factory(T0)
    job = await every(rig, "minutely", "* * * * *")
    for _ in range(5):
        rig.clock.advance(60)
        assert await rig.tick() == 1
    assert await runs(rig, job) == [(T0 + 60 * m, "done") for m in range(1, 6)]
    assert len(rig.delivery.delivered) == 5
    assert "late" not in " ".join(rig.said())


class JumpingClock(SpeedClock):
    """Real time, sped up, that the test can step forward as NTP would."""

    def __init__(self, start: float) -> None:
        super().__init__(start)
        self.offset = 0.0

    def now(self) -> float:
        return super().now() + self.offset


async def test_real_loop_after_a_jump_fires_once(rig_factory: RigFactory) -> None:
    rig = await rig_factory(T0, start=False, FETCH__SCHEDULER__TICK_SECONDS="1")
    clock = JumpingClock(T0)
    rig.scheduler.clock = clock
    await rig.scheduler.start()
    job = await every(rig, "check the build", "*/5 * * * *")
    await asyncio.sleep(0.2)  # 08:00:24
    clock.offset = 3 * 3600 + 101 - 24  # 11:01:41: 11:05 is 199 scheduled seconds away
    await asyncio.sleep(1.0)  # 120 scheduled seconds: 120 ticks
    await rig.scheduler.stop()
    assert rig.delivery.delivered == [(job, T0 + 300 * 36)]  # 11:00, late, once
    assert len([r for r in await runs(rig, job) if r[1] == "missed"]) == 35
