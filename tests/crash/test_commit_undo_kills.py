"""Commit and revert are crash-safe (issue 12): the real ``fetch`` (demo harness, bwrap
kennel, FETCH_HOME in tmp) killed at random moments around "yes" and around "/undo",
restarted each time.

Kills come two ways, from one seeded generator: a named crash point
(``FETCH_CRASH_AT``, ``os._exit`` between two steps: after the journal, after the ref
moved, after the record) and a SIGKILL after a random delay (to the process alone, or
to its whole group so a git in flight dies too). After every restart, once the replayed
messages are handled: every commit Fetch made in git is in the commits table exactly
once and vice versa, every revert is recorded on the commit it reverts, no intent is
left open, the repository is clean, and a waiting diff is still the one on HEAD. At the
end an /undo that is not killed reverts the last commit.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pexpect

from tests.cli.test_fetch_command import Fetch, _env

SEED = 20261123
KILLS = 54
TASK = "fix the typo in README.md of demo"
POINTS = {
    "yes": ("commit:intent", "commit:ref", "commit:recorded"),
    "/undo": ("undo:intent", "undo:ref"),
}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "safe.directory=*", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _query(db: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return list(conn.execute(sql))
    finally:
        conn.close()


class World:
    """What git and the database say, checked against each other."""

    def __init__(self, home: Path) -> None:
        self.db = home / "fetch.db"
        self.repo = home / "workspace" / "demo"

    def settled(self, fetch: Fetch, timeout: float = 30) -> bool:
        """Wait until the messages replayed at start-up are handled; False if Fetch
        died meanwhile (a crash point a replayed message reached)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            queued = _query(self.db, "SELECT count(*) FROM inbound WHERE status='queued'")
            working = _query(self.db, "SELECT count(*) FROM sessions WHERE state='WORKING'")
            if queued[0][0] == 0 and working[0][0] == 0:
                return True
            if not fetch.child.isalive():
                return False
            time.sleep(0.05)
        raise AssertionError("replayed messages were not handled")

    def state(self) -> str:
        rows = _query(self.db, "SELECT state FROM sessions WHERE key='terminal:owner'")
        return str(rows[0][0]) if rows else "IDLE"

    def check(self) -> tuple[int, int]:
        """Assert the invariants; (live commits, commits recorded in all)."""
        status = _git(self.repo, "status", "--porcelain", "--untracked-files=all")
        assert status == "", f"the repository is dirty after recovery:\n{status}"
        log = _git(self.repo, "log", "--first-parent", "--format=%H%x00%B%x01", "HEAD")
        made: list[str] = []
        reverted: dict[str, str] = {}
        for entry in filter(str.strip, log.split("\x01")):
            sha, _, body = entry.strip().partition("\x00")
            if "Fetch-Task:" in body:
                made.append(sha)
            for line in body.splitlines():
                if line.startswith("Fetch-Undo: "):
                    reverted[line.removeprefix("Fetch-Undo: ").strip()] = sha
        rows = _query(self.db, "SELECT sha, undone_by FROM commits")
        recorded = [str(sha) for sha, _ in rows]
        assert sorted(recorded) == sorted(made), (
            f"git has {made}, the commits table {recorded}: lost or doubled"
        )
        assert len(set(recorded)) == len(recorded)
        undone = {str(sha): str(by) for sha, by in rows if by is not None}
        assert undone == reverted, f"reverts in git {reverted}, recorded {undone}"
        opened = _query(self.db, "SELECT id, kind FROM intents WHERE status='open'")
        assert opened == [], f"intents left open: {opened}"
        if self.state() == "GUARDING":
            pending = _query(self.db, "SELECT base_sha FROM approvals WHERE status='pending'")
            head = _git(self.repo, "rev-parse", "HEAD").strip()
            assert [r[0] for r in pending] == [head], (pending, head)
        return len(recorded) - len(undone), len(recorded)


def _kill(fetch: Fetch, rng: random.Random, line: str, armed: bool) -> str:
    """Say ``line`` and make Fetch die around it; how it died."""
    child = fetch.child
    fetch.type(line)
    if armed:
        try:  # the crash point ends the process itself
            child.expect(pexpect.EOF, timeout=15)
            return "crash point"
        except pexpect.TIMEOUT:
            pass  # the step was not reached (e.g. the diff changed): kill it
    time.sleep(rng.uniform(0.0, 0.6))
    if rng.random() < 0.5:
        os.killpg(child.pid, signal.SIGKILL)  # git in flight dies too
        how = "SIGKILL group"
    else:
        os.kill(child.pid, signal.SIGKILL)
        how = "SIGKILL"
    child.expect(pexpect.EOF, timeout=15)
    return how


def test_kills_around_yes_and_undo_lose_and_double_nothing(tmp_path: Path) -> None:
    home = tmp_path.resolve() / "home"
    world = World(home)
    rng = random.Random(SEED)
    kills: dict[str, int] = {}
    started = time.monotonic()
    committed = 0
    n = 0
    while sum(kills.values()) < KILLS:
        n += 1
        armed = n % 3 == 0
        fetch_env = _env(home, FETCH_HARNESS="demo")
        if armed:
            # One point of each family: which applies depends on what the state after
            # recovery calls for (a replayed "yes" may reach one while starting up).
            fetch_env["FETCH_CRASH_AT"] = ",".join(
                family[(n // 3) % len(family)] for family in POINTS.values()
            )
        fetch = Fetch(fetch_env, tmp_path)
        try:
            if not _started(fetch, world):
                kills["replayed message, crash point"] = (
                    kills.get("replayed message, crash point", 0) + 1
                )
                continue
            live, committed = world.check()
            line = "/undo" if live else "yes" if world.state() == "GUARDING" else ""
            if not line:
                fetch.type(TASK)
                fetch.expect("Apply? (yes/no)", 60)
                line = "yes"
            how = _kill(fetch, rng, line, armed)
        finally:
            fetch.kill()
        kills[f"{line} {how}"] = kills.get(f"{line} {how}", 0) + 1
    # The last restart: the invariants hold, and /undo reaches the last commit.
    fetch = Fetch(_env(home, FETCH_HARNESS="demo"), tmp_path)
    try:
        assert _started(fetch, world)
        live, committed = world.check()
        if not live:
            if world.state() != "GUARDING":
                fetch.type(TASK)
                fetch.expect("Apply? (yes/no)", 60)
            fetch.type("yes")
            fetch.expect("✅ Committed", 30)
            world.settled(fetch)
            live, committed = world.check()
        assert live == 1
        fetch.type("/undo")
        fetch.expect("↩️ Reverted", 30)
        world.settled(fetch)
        assert world.check()[0] == 0
        fetch.quit_with_ctrl_c()
    finally:
        fetch.kill()
    elapsed = time.monotonic() - started
    print(f"\n{sum(kills.values())} kills in {elapsed:.0f} s, {committed} commits: {kills}")
    assert committed >= 10, "too few kills landed after a commit to prove anything"


def _started(fetch: Fetch, world: World) -> bool:
    """Ready, with the replayed messages handled; False if a crash point ended it."""
    try:
        fetch.ready()
    except AssertionError:
        if fetch.child.isalive():
            raise
        return False
    return world.settled(fetch)
