"""The terminal's stdin reader is a supervisor task, and stop() ends it."""

from __future__ import annotations

import pytest

from channels.terminal import TerminalChannel
from core.events import Inbound
from orchestrator.supervisor import TaskSupervisor
from tests.channels.keyboard import keyboard


async def test_stop_ends_the_reader_task(monkeypatch: pytest.MonkeyPatch) -> None:
    got: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        got.append(inbound)

    supervisor = TaskSupervisor()
    terminal = TerminalChannel(read_stdin=True)
    with keyboard(monkeypatch):
        await terminal.start(sink, supervisor)
        [task] = supervisor.running()
        assert task.get_name() == "channel:terminal:stdin"
        await terminal.stop()
        assert supervisor.running() == [] and task.cancelled()
