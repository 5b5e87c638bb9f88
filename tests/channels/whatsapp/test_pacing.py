"""Outbound pacing on a fake clock: a minimum gap, and a hard cap per rolling minute."""

from __future__ import annotations

import asyncio

import pytest

from channels.whatsapp.pacing import Pacer


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def time(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


async def send_times(pacer: Pacer, clock: FakeClock, n: int) -> list[float]:
    times = []
    for _ in range(n):
        await pacer.acquire()
        times.append(clock.now)
    return times


async def test_min_interval_between_sends() -> None:
    clock = FakeClock()
    pacer = Pacer(3.0, 100, clock=clock.time, sleep=clock.sleep)
    assert await send_times(pacer, clock, 4) == [0.0, 3.0, 6.0, 9.0]


async def test_hard_cap_per_rolling_minute() -> None:
    clock = FakeClock()
    pacer = Pacer(1.0, 12, clock=clock.time, sleep=clock.sleep)
    times = await send_times(pacer, clock, 40)
    for start in times:  # no 60-second window ever holds more than 12 sends
        assert sum(1 for t in times if start <= t < start + 60) <= 12
    assert times[11] == 11.0 and times[12] == 60.0  # a burst of 12, then wait for the window


async def test_time_spent_elsewhere_counts() -> None:
    clock = FakeClock()
    pacer = Pacer(3.0, 12, clock=clock.time, sleep=clock.sleep)
    await pacer.acquire()
    clock.now += 10  # the model thought for 10 s
    assert await pacer.acquire() == 0.0 and clock.sleeps == []


async def test_concurrent_senders_keep_the_gap() -> None:
    clock = FakeClock()
    pacer = Pacer(2.0, 100, clock=clock.time, sleep=clock.sleep)
    stamps: list[float] = []

    async def one() -> None:
        await pacer.acquire()
        stamps.append(clock.now)

    await asyncio.gather(*(one() for _ in range(5)))
    assert stamps == [0.0, 2.0, 4.0, 6.0, 8.0]


def test_refuses_a_zero_cap() -> None:
    with pytest.raises(ValueError):
        Pacer(1.0, 0)
