"""The child process of the crash test: the real scheduler on the real Store and file,
a fast tick, and a delivery path that appends one line per delivered slot to a file.

``python -m tests.scheduler.crash_child HOME DELIVERIES`` prints ``ready`` once it ticks,
runs until SIGTERM (a clean stop) or SIGKILL (the test's crash).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from core.clock import SystemClock
from core.events import Inbound
from orchestrator.config import load_settings
from orchestrator.messenger import Messenger
from orchestrator.scheduler import Scheduler
from orchestrator.scheduler.jobs import Claim
from orchestrator.store import Journal, Store
from orchestrator.supervisor import TaskSupervisor


class FileDelivery:
    """Appends "job slot" per delivery: one write(2) with O_APPEND, so a SIGKILL leaves
    the line whole or absent. After a crash mid-delivery it reads the file to answer."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    @staticmethod
    def line(claim: Claim) -> str:
        return f"{claim.job.id} {claim.run.slot:.3f}"

    async def deliver(self, claim: Claim) -> None:
        os.write(self._fd, (self.line(claim) + "\n").encode())

    async def confirm(self, claim: Claim) -> bool | None:
        return self.line(claim) in self.path.read_text().splitlines()


async def main(home: Path, deliveries: Path) -> None:
    settings = load_settings(
        None,
        {
            "FETCH_HOME": str(home),
            "FETCH_TIMEZONE": "Europe/Berlin",
            "FETCH_KENNEL": "bwrap",
            "FETCH__SCHEDULER__TICK_SECONDS": "0.05",
        },
    )
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with Store(settings.db_path) as store:
        journal = Journal(home / "sessions")
        supervisor = TaskSupervisor()

        async def inject(inbound: Inbound) -> None:
            raise RuntimeError("the crash test schedules reminders only")

        scheduler = Scheduler(
            settings, store, inject, Messenger(store, journal), supervisor, SystemClock()
        )
        scheduler.delivery = FileDelivery(deliveries)
        await scheduler.start()
        if not scheduler.running:
            print(f"refused: {scheduler.status_line()}", flush=True)
            return
        print("ready", flush=True)
        await stop.wait()
        await scheduler.stop()
        await supervisor.stop(0.0)
        journal.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2])))
