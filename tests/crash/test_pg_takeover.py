"""Three real Fetch processes on one real PostgreSQL (issue 25, 2): a victim accepts 20
reminders through its channel and is SIGKILLed before handling them; two survivors, both
running, take its queued messages over while they run (not at a start), and each message
is handled exactly once (one job row each, one reply each across both survivors); the
notices held in the durable outbox go out once although both survivors run the channel;
the task it was running is recovered by one survivor (reported once, the chat idle
again); and nothing is taken over while the victim lives.

The processes are tests/crash/pg_takeover_child.py: the real app (build_app) with a
terminal channel that appends every sent message to a shared file.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import asyncpg

from tests.crash.pg_takeover_child import CUT, MESSAGES, NOTICES

ROOT = Path(__file__).resolve().parents[2]


def start(role: str, home: Path, sent: Path, url: str) -> subprocess.Popen[str]:
    home.mkdir(parents=True)
    with (home / "stderr").open("w") as err:  # a file: a pipe nobody reads could fill up
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.crash.pg_takeover_child", role, str(home), str(sent)],
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
    if line != "ready":
        stop(child)
        said = (home / "stderr").read_text()[-3000:]
        raise AssertionError(f"{role} did not start: {line!r}\n{said}")
    return child


def stop(child: subprocess.Popen[str]) -> None:
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(30)
    if child.stdout is not None:
        child.stdout.close()


def lines(sent: Path) -> list[tuple[int, str]]:
    if not sent.exists():
        return []
    out = []
    for raw in sent.read_text().splitlines():
        pid, _, text = raw.partition("\t")
        out.append((int(pid), text))
    return out


async def test_survivors_take_over_a_killed_processs_messages_once(
    tmp_path: Path, pg_url: str
) -> None:
    sent = tmp_path / "sent"
    children: list[subprocess.Popen[str]] = []
    db = await asyncpg.connect(pg_url)
    try:
        for name in ("b", "c"):
            children.append(start("survivor", tmp_path / name, sent, pg_url))
        survivors = {c.pid for c in children}
        victim = start("victim", tmp_path / "a", sent, pg_url)
        children.append(victim)

        async def jobs() -> Counter[str]:
            rows = await db.fetch("SELECT text FROM jobs WHERE text LIKE 'call-%'")
            return Counter(str(r[0]) for r in rows)

        queued = await db.fetchval("SELECT count(*) FROM inbound WHERE status='queued'")
        assert queued == MESSAGES
        # The notices are any runner of the channel's to send: once, by one survivor.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if sum(t.startswith("notice-") for _, t in lines(sent)) >= NOTICES:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)  # passes of both survivors meanwhile: nothing is taken
        assert await jobs() == Counter()  # the victim lives: its messages are its own
        task_id = await db.fetchval("SELECT id FROM tasks WHERE prompt=$1", CUT)
        assert await db.fetchval("SELECT status FROM tasks WHERE id=$1", task_id) == "running"
        victim.kill()
        victim.wait(30)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if (
                sum((await jobs()).values()) >= MESSAGES
                and not await db.fetchval("SELECT count(*) FROM inbound WHERE status='queued'")
                and await db.fetchval("SELECT status FROM tasks WHERE id=$1", task_id)
                == "interrupted"
            ):
                break
            await asyncio.sleep(0.2)
        await asyncio.sleep(1.5)  # five more passes each: a double would show by now
        assert await jobs() == Counter({f"call-{i}": 1 for i in range(MESSAGES)})
        said = lines(sent)
        notices = Counter(t for _, t in said if t.startswith("notice-"))
        assert notices == Counter({f"notice-{i}": 1 for i in range(NOTICES)}), said
        replies = [(pid, t) for pid, t in said if "call-" in t]
        assert len(replies) == MESSAGES, said
        assert {pid for pid, _ in said} <= survivors  # the victim sent nothing
        # The cut-short task: reported once, its chat idle again.
        told = [t for _, t in said if f"task #{task_id} was running" in t]
        assert len(told) == 1, said
        state = await db.fetchval("SELECT state FROM sessions WHERE key='terminal:worker'")
        assert state != "WORKING"
        assert not await db.fetchval("SELECT count(*) FROM outbox WHERE event='' AND sent IS NULL")
    finally:
        await db.close()
        for child in children:
            stop(child)
