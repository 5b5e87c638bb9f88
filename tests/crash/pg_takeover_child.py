"""A child of tests/crash/test_pg_takeover.py: the real app on the real PostgreSQL store.

``python -m tests.crash.pg_takeover_child ROLE HOME SENT`` with ``FETCH_STORE_URL`` set.
Every message the terminal channel sends is appended to ``SENT`` as one line
("pid<TAB>text", one write(2) with O_APPEND, so lines of two processes never mix).

* ``survivor``: the app as it runs, its take-over pass every 0.3 s; prints ``ready``
  and runs until SIGTERM.
* ``victim``: the app, but handling a message never ends (a process killed mid-way
  through its backlog); it accepts ``MESSAGES`` reminders through its channel (the real
  gateway: dedupe row, holder) and holds ``NOTICES`` notices in the durable outbox (what
  a start-up interrupted before its channel came up leaves), starts a task in chat
  ``worker`` (the task row and the WORKING session a run makes), prints ``ready`` and
  waits for the test's SIGKILL.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from channels.terminal import TerminalChannel
from core.events import Outbound, SendResult, SessionKey
from orchestrator import gateway
from orchestrator.app import build_app
from orchestrator.config import load_settings
from orchestrator.context import Context
from orchestrator.store import processes

MESSAGES = 20
NOTICES = 5
WORKER = SessionKey("terminal", "worker")  # the chat whose task the kill cuts short
CUT = "a task cut short"


class Recording(TerminalChannel):
    def __init__(self, sent: Path) -> None:
        super().__init__("owner")
        self._fd = os.open(sent, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    async def send(self, message: Outbound) -> SendResult:
        line = " ".join(message.text.split())
        os.write(self._fd, f"{os.getpid()}\t{line}\n".encode())
        return await super().send(message)


async def never(ctx: Context) -> None:
    await asyncio.sleep(3600)


async def main(role: str, home: Path, sent: Path) -> None:
    # The victim's own pass never runs (its notices are for the survivors to send).
    processes.PERIOD = 3600.0 if role == "victim" else 0.3
    settings = load_settings(
        None,
        {
            "FETCH_HOME": str(home),
            "FETCH_TIMEZONE": "UTC",
            "FETCH_KENNEL": "bwrap",
            "FETCH_HARNESS": "demo",
            "FETCH_STORE_URL": os.environ["FETCH_STORE_URL"],
        },
    )
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    terminal = Recording(sent)
    async with build_app(settings, channels=[terminal]) as app:
        if role == "victim":
            setattr(gateway, "dispatch", never)  # noqa: B010 - the victim never finishes one
            for i in range(MESSAGES):
                await terminal.submit(f"/remind in 3 hours call-{i}", message_id=f"m-{i}")
            store = app.services.store if app.services is not None else None
            assert store is not None
            for i in range(NOTICES):
                await store.outbox.hold(SessionKey("terminal", "owner"), f"notice-{i}")
            # A task running when the kill comes: its chat is WORKING on it.
            assert app.services is not None
            session = await app.services.sessions.get(WORKER)
            session.data.task_id = await store.work.create_task(WORKER, "demo", CUT, "demo")
            session.data.repo = "demo"
            await session.start_task()
        print("ready", flush=True)
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])))
