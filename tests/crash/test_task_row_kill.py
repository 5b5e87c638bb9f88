"""A kill between a task's row and its chat's state leaves no task "running" forever:
the real ``fetch`` (demo harness, bwrap kennel, FETCH_HOME in tmp) dies right after the
row is written (``FETCH_CRASH_AT=task:row``). The next start marks that row interrupted
(no run has it), replays the message that asked, and the task it starts is the one
that runs; nothing is left running."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pexpect

from tests.cli.test_fetch_command import Fetch, _env

TASK = "fix the typo in README.md of demo"


def _tasks(db: Path) -> list[tuple[int, str, str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return [(int(i), str(s), str(p)) for i, s, p in conn.execute(
            "SELECT id, status, prompt FROM tasks ORDER BY id")]  # fmt: skip
    finally:
        conn.close()


def test_a_kill_after_the_task_row_leaves_nothing_running(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = Fetch(_env(home, FETCH_CRASH_AT="task:row"), tmp_path)
    try:
        first.ready()
        first.type(TASK)
        first.child.expect(pexpect.EOF, timeout=60)
        first.child.close()
        assert first.child.exitstatus == 137, first.transcript.getvalue()
    finally:
        first.kill()
    db = home / "fetch.db"
    assert _tasks(db) == [(1, "running", TASK)]  # the kill left it so

    again = Fetch(_env(home), tmp_path)
    try:
        again.ready()
        again.expect("Apply? (yes/no)", 120)  # the replayed message's own task
        tasks = _tasks(db)
        assert [(i, s) for i, s, _p in tasks] == [(1, "interrupted"), (2, "proposed")], tasks
        again.type("no")
        again.expect("Discarded", 30)
        again.quit_with_ctrl_c()
    finally:
        again.kill()
    assert "running" not in {s for _i, s, _p in _tasks(db)}
