"""The terminal's stdin reader is a supervisor task, and stop() ends it."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from channels.terminal import TerminalChannel
from core.events import Inbound
from orchestrator.supervisor import TaskSupervisor


async def test_stop_ends_the_reader_task(monkeypatch: pytest.MonkeyPatch) -> None:
    read_end, write_end = os.pipe()
    keyboard = os.fdopen(read_end, "r")
    monkeypatch.setattr(sys, "stdin", keyboard)
    got: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        got.append(inbound)

    supervisor = TaskSupervisor()
    terminal = TerminalChannel(read_stdin=True)
    try:
        await terminal.start(sink, supervisor)
        [task] = supervisor.running()
        assert task.get_name() == "channel:terminal:stdin"
        await terminal.stop()
        assert supervisor.running() == [] and task.cancelled()
    finally:
        os.close(write_end)  # EOF: the reader thread (a daemon, not a task) ends
        for thread in threading.enumerate():
            if thread.name == "terminal-stdin":
                thread.join(5)
        keyboard.close()
