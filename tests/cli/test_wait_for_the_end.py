"""``fetch``'s foreground wait (a signal, or end of input then drain) leaves none of its
tasks behind, whichever way it ends."""

from __future__ import annotations

import asyncio
from typing import cast

from orchestrator.app import App
from orchestrator.cli import _wait_for_the_end


class _App:
    def __init__(self) -> None:
        self.done = asyncio.Event()

    async def drain(self) -> None:
        await self.done.wait()


async def _run(eof_first: bool, drained: bool) -> None:
    before = asyncio.all_tasks()
    app, eof, stop = _App(), asyncio.Event(), asyncio.Event()
    waiting = asyncio.create_task(_wait_for_the_end(cast(App, app), eof, stop))
    await asyncio.sleep(0.01)
    (eof if eof_first else stop).set()
    await asyncio.sleep(0.01)
    if eof_first:
        assert not waiting.done()  # draining
        (app.done if drained else stop).set()
    await asyncio.wait_for(waiting, 5)
    left = [t for t in asyncio.all_tasks() - before if not t.done()]
    assert left == [], [t.get_name() for t in left]


async def test_a_signal_ends_every_wait() -> None:
    await _run(eof_first=False, drained=False)


async def test_end_of_input_then_drained() -> None:
    await _run(eof_first=True, drained=True)


async def test_end_of_input_then_a_signal_while_draining() -> None:
    await _run(eof_first=True, drained=False)
