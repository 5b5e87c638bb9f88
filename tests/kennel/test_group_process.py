"""``GroupProcess`` owns its stderr drain: ``wait`` and ``terminate`` end it, and a child
that outlives the CLI holding stderr open neither fails ``wait`` nor keeps the task."""

from __future__ import annotations

import asyncio

from kennel.process import GroupProcess


async def _start(script: str) -> GroupProcess:
    proc = await asyncio.create_subprocess_exec(
        "sh",
        "-c",
        script,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    return GroupProcess(proc)


def _drains() -> list[asyncio.Task[object]]:
    return [
        t for t in asyncio.all_tasks() if t.get_name().startswith("kennel:stderr:") and not t.done()
    ]


async def test_wait_ends_the_drain_even_when_a_child_holds_stderr() -> None:
    proc = await _start("echo said >&2; sleep 5 >/dev/null & echo out; exit 3")
    try:
        assert [line async for line in proc.lines()] == ["out"]
        # Until the CLI has exited, asyncio's Process.wait (3.11) also waits for every
        # pipe to close, the child's stderr included: here its exit is seen first.
        while proc.pid in proc.alive_pids():  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)
        assert await asyncio.wait_for(proc.wait(), 4) == 3
        assert _drains() == []
        assert proc.stderr_tail() == "said"
    finally:
        await proc.terminate(0.5)  # the sleeping child


async def test_terminate_ends_the_drain() -> None:
    proc = await _start("sleep 30")
    assert len(_drains()) == 1
    await proc.terminate(0.5)
    assert _drains() == []


async def test_a_child_holding_stderr_leaves_no_pipe_open() -> None:
    """After ``wait`` (and after ``terminate`` of the leftover), no pipe of the run stays
    open in this process: a child that keeps stderr must not leak a descriptor per task."""
    import gc
    import os
    import warnings

    before = set(os.listdir("/proc/self/fd"))
    proc = await _start("sleep 5 >/dev/null & exit 3")
    assert [line async for line in proc.lines()] == []
    while proc.pid in proc.alive_pids():  # noqa: ASYNC110
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.2)
    assert await asyncio.wait_for(proc.wait(), 4) == 3
    await proc.terminate(0.5)  # the sleeping child
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        del proc
        gc.collect()
    assert set(os.listdir("/proc/self/fd")) <= before
