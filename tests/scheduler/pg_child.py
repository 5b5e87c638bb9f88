"""A child of the two-process test (test_pg_two_processes.py): the real scheduler on the
real Store on PostgreSQL, a fast tick, a short lease, and a delivery path that appends
"job slot pid" to a shared file.

``python -m tests.scheduler.pg_child HOME DELIVERIES SLOW_MARK`` with ``FETCH_STORE_URL``
set; prints ``ready`` once it ticks and runs until SIGTERM or SIGKILL. The first process
to deliver a job whose text is ``slow`` creates ``SLOW_MARK`` (O_EXCL) and then hangs in
that delivery, holding the run's lease: the test kills it there.
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
    """One write(2) with O_APPEND per delivery: a SIGKILL leaves the line whole or absent,
    and ``confirm`` (asked after a crash mid-delivery) reads the file to answer."""

    def __init__(self, path: Path, slow_mark: Path) -> None:
        self.path = path
        self.slow_mark = slow_mark
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    @staticmethod
    def line(claim: Claim) -> str:
        return f"{claim.job.id} {claim.run.slot:.3f}"

    async def deliver(self, claim: Claim) -> None:
        if claim.job.text == "slow":
            try:
                fd = os.open(self.slow_mark, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                pass  # another process hung in it first: this one delivers
            else:
                os.write(fd, f"{os.getpid()}\n".encode())
                os.close(fd)
                await asyncio.sleep(3600)  # holds the lease until killed
        os.write(self._fd, f"{self.line(claim)} {os.getpid()}\n".encode())

    async def confirm(self, claim: Claim) -> bool | None:
        lines = self.path.read_text().splitlines()
        return any(line.startswith(self.line(claim) + " ") for line in lines)


async def main(home: Path, deliveries: Path, slow_mark: Path) -> None:
    settings = load_settings(
        None,
        {
            "FETCH_HOME": str(home),
            "FETCH_TIMEZONE": "UTC",
            "FETCH_KENNEL": "bwrap",
            "FETCH_STORE_URL": os.environ["FETCH_STORE_URL"],
            "FETCH__SCHEDULER__TICK_SECONDS": "0.05",
            "FETCH__SCHEDULER__LEASE_SECONDS": "5",
        },
    )
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with Store(settings.db_path, settings.store.url) as store:
        journal = Journal(home / "sessions")
        supervisor = TaskSupervisor()

        async def inject(inbound: Inbound) -> None:
            raise RuntimeError("the two-process test schedules reminders only")

        scheduler = Scheduler(
            settings, store, inject, Messenger(store, journal), supervisor, SystemClock()
        )
        scheduler.delivery = FileDelivery(deliveries, slow_mark)
        await scheduler.start()
        if not scheduler.running:
            print(f"refused: {scheduler.status_line()}", flush=True)
            return
        print(f"ready {scheduler.holder}", flush=True)
        await stop.wait()
        await scheduler.stop()
        await supervisor.stop(0.0)
        journal.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])))
