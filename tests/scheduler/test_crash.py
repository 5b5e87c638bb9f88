"""1,000 reminders while the scheduler process is SIGKILLed at 50 random moments and
restarted each time: none lost, none delivered twice, the database intact after every kill.

The scheduler runs in a real child process on the real Store and SQLite file with a 50 ms
tick; its delivery path appends one line per delivered slot to a file, which is what is
counted. Jobs come due over the whole run, some in bursts of hundreds at the same second,
so kills land in claim transactions, in deliveries and between them.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from core.events import SessionKey
from orchestrator.scheduler.jobs import SqliteJobs
from orchestrator.store import Store

ROOT = Path(__file__).resolve().parents[2]
JOBS = 1000
KILLS = 50


def start_child(home: Path, deliveries: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.scheduler.crash_child", str(home), str(deliveries)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("FETCH_")},
            "PYTHONPATH": str(ROOT),
        },
    )
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    if line != "ready":
        child.kill()
        _out, err = child.communicate()
        raise AssertionError(f"child did not start: {line!r}\n{err[-3000:]}")
    return child


def integrity(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


async def schedule(db: Path, start: float) -> None:
    """Due times spread over ~25 s, with three bursts of 150 at one instant."""
    rng = random.Random(5)
    async with Store(db) as store:
        jobs = SqliteJobs(store.db)
        for i in range(JOBS):
            if i % 200 < 50 and i < 600:
                due = start + 4 + 8 * (i // 200)  # bursts at +4 s, +12 s, +20 s
            else:
                due = start + rng.uniform(1.0, 25.0)
            await jobs.add(
                kind="reminder",
                text=f"reminder {i}",
                key=SessionKey("terminal", "owner"),
                cron=None,
                tz="Europe/Berlin",
                spec="test",
                missed="run_once",
                next_at=due,
            )


def test_sigkill_at_50_random_moments_loses_and_doubles_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = home / "fetch.db"
    deliveries = tmp_path / "deliveries.txt"
    asyncio.run(schedule(db, time.time() + 2))
    rng = random.Random(2025)
    checks: list[str] = []
    busy_kills = 0  # kills that hit a process which was delivering in that life

    def delivered() -> int:
        return len(deliveries.read_text().splitlines()) if deliveries.exists() else 0

    for _ in range(KILLS):
        before = delivered()
        child = start_child(home, deliveries)
        time.sleep(rng.uniform(0.05, 0.6))
        child.send_signal(signal.SIGKILL)
        child.communicate()
        assert child.returncode == -signal.SIGKILL
        busy_kills += delivered() > before
        checks.append(integrity(db))
    child = start_child(home, deliveries)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        with sqlite3.connect(db) as conn:
            left = conn.execute("SELECT COUNT(*) FROM jobs WHERE status != 'done'").fetchone()[0]
        if left == 0:
            break
        time.sleep(0.2)
    child.send_signal(signal.SIGTERM)
    _out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err[-3000:]
    checks.append(integrity(db))

    assert checks == ["ok"] * (KILLS + 1)
    lines = deliveries.read_text().splitlines()
    per_job = Counter(line.split()[0] for line in lines)
    with sqlite3.connect(db) as conn:
        ids = {str(r[0]) for r in conn.execute("SELECT id FROM jobs")}
        statuses = Counter(r[0] for r in conn.execute("SELECT status FROM job_runs"))
        jobs_left = conn.execute("SELECT COUNT(*) FROM jobs WHERE status != 'done'").fetchone()[0]
    lost = ids - set(per_job)
    doubled = {job: n for job, n in per_job.items() if n > 1}
    print(
        f"\ncrash test: {len(lines)} deliveries for {len(ids)} jobs, {KILLS} SIGKILLs, "
        f"{busy_kills} of them while it was delivering, runs by status {dict(statuses)}"
    )
    assert busy_kills >= KILLS // 3  # the kills really landed in the middle of the work
    assert len(ids) == JOBS
    assert lost == set(), f"{len(lost)} lost"
    assert doubled == {}, f"{len(doubled)} delivered more than once"
    assert jobs_left == 0
    assert statuses == Counter({"done": JOBS})
