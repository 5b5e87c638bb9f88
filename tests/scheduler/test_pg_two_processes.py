"""Two Fetch schedulers on one PostgreSQL (issue 25, 2): both claim from the same jobs
table at once (row locks, ``FOR UPDATE SKIP LOCKED``), one is SIGKILLed while it holds a
run's lease, and still every due reminder is delivered exactly once; the dead process's
run is taken over by the other only once its lease has run out, never before.

Each scheduler is the real one (``Scheduler`` on the real ``Store``) in its own process
with its own home, as on two machines; the delivery path appends one line per delivered
slot to a shared file (tests/scheduler/pg_child.py), which is what is counted.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from core.events import SessionKey
from orchestrator.store import Store

ROOT = Path(__file__).resolve().parents[2]
OWNER = SessionKey("terminal", "owner")
LEASE = 5.0  # pg_child.py's scheduler.lease_seconds
JOBS = 300


def start(home: Path, deliveries: Path, mark: Path, url: str) -> tuple[subprocess.Popen[str], str]:
    home.mkdir(parents=True)
    with (home / "stderr").open("w") as err:  # a file: a pipe nobody reads could fill up
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.scheduler.pg_child",
                str(home),
                str(deliveries),
                str(mark),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env={
                **{k: v for k, v in os.environ.items() if not k.startswith("FETCH_")},
                "PYTHONPATH": str(ROOT),
                "FETCH_STORE_URL": url,
            },
        )
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    if not line.startswith("ready "):
        stop(child)
        said = (home / "stderr").read_text()[-3000:]
        raise AssertionError(f"child did not start: {line!r}\n{said}")
    return child, line.split()[1]


def stop(child: subprocess.Popen[str]) -> None:
    if child.poll() is None:
        child.kill()
    child.wait(30)
    if child.stdout is not None:
        child.stdout.close()


async def add(store: Store, due: list[tuple[str, float]]) -> None:
    async with store.db.transaction() as db:
        now = time.time()
        await db.executemany(
            "INSERT INTO jobs(kind, text, channel, chat, cron, tz, spec, missed, status,"
            " next_at, created, updated) VALUES ('reminder', ?, ?, ?, NULL, 'UTC', 'test',"
            " 'run_once', 'active', ?, ?, ?)",
            [(text, OWNER.channel, OWNER.chat, at, now, now) for text, at in due],
        )


def delivered(path: Path) -> list[tuple[str, str, int]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        job, slot, pid = line.split()
        rows.append((job, slot, int(pid)))
    return rows


async def until(check: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def test_two_processes_never_double_a_job_and_take_over_a_dead_lease(
    tmp_path: Path, pg_url: str
) -> None:
    deliveries, mark = tmp_path / "deliveries", tmp_path / "slow.mark"
    children: list[subprocess.Popen[str]] = []
    try:
        async with Store(tmp_path / "unused.db", pg_url) as store:
            first, first_holder = start(tmp_path / "a", deliveries, mark, pg_url)
            children.append(first)
            # The first process takes the slow job and hangs in its delivery, lease held.
            await add(store, [("slow", time.time())])
            await until(mark.exists, 30, "the first process to hang in the slow delivery")
            hung_at = time.time()
            assert int(mark.read_text()) == first.pid

            second, second_holder = start(tmp_path / "b", deliveries, mark, pg_url)
            children.append(second)
            base = time.time() + 1.0
            due = [(f"r{i}", base + (i % 60) * 0.05) for i in range(JOBS)]
            await add(store, due)
            # Both deliver side by side; the first is killed half-way through the burst.
            await until(lambda: len(delivered(deliveries)) >= JOBS // 2, 60, "half the burst")
            os.kill(first.pid, signal.SIGKILL)
            first.wait(30)
            # The dead process's run is still its own, leased into the future: not taken.
            held = await store.db.conn.execute_fetchall(
                "SELECT holder, lease_until, status FROM job_runs WHERE job_id = 1"
            )
            holder, lease_until, status = next(iter(held))
            assert (holder, status) == (first_holder, "delivering")
            assert float(lease_until) > time.time()

            def all_in() -> bool:
                return len(delivered(deliveries)) >= JOBS + 1

            await until(all_in, LEASE * 4 + 30, "every job delivered")
            await asyncio.sleep(0.5)  # nothing more must come
            rows = delivered(deliveries)
            counts = Counter((job, slot) for job, slot, _pid in rows)
            twice = {k: n for k, n in counts.items() if n > 1}
            assert not twice, f"delivered more than once: {twice}"
            assert len(counts) == JOBS + 1
            pids = Counter(pid for _job, _slot, pid in rows)
            assert pids[first.pid] > 0 and pids[second.pid] > 0, pids  # both claimed

            # The slow job: delivered once, by the survivor, only after the lease ran out.
            slow = await store.db.conn.execute_fetchall(
                "SELECT r.status, r.holder, r.attempt FROM job_runs r JOIN jobs j"
                " ON j.id = r.job_id WHERE j.text = 'slow'"
            )
            assert [tuple(r) for r in slow] == [("done", second_holder, 1)], slow
            assert [pid for job, _slot, pid in rows if job == "1"] == [second.pid]
            finished = await store.db.conn.execute_fetchall(
                "SELECT finished_at FROM job_runs WHERE job_id = 1"
            )
            # Taken over only once the dead holder's lease had run out.
            assert float(next(iter(finished))[0]) >= float(lease_until)
            assert float(lease_until) >= hung_at + LEASE
            runs = await store.db.conn.execute_fetchall(
                "SELECT status, COUNT(*) FROM job_runs GROUP BY status"
            )
            assert {str(r[0]): int(r[1]) for r in runs} == {"done": JOBS + 1}
            assert first_holder != second_holder
            second.send_signal(signal.SIGTERM)
            second.wait(30)
    finally:
        for child in children:
            stop(child)
