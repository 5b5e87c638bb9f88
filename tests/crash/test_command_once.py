"""Every state-changing command does its effect exactly once, however it is killed
(issue 22): the real ``fetch`` (demo harness, bwrap kennel, FETCH_HOME in tmp) is
SIGKILLed at the instant of the command's reply (``FETCH_CRASH_AT=command:reply``: the
process kills itself with SIGKILL after the effect, before the reply leaves), restarted
on the same home, and what the databases and git hold is compared with a run of the
same command that was not killed: not one row, revert or grant more, none fewer.

The commands come from the registry (``reads_only`` marks the ones that change
nothing): a new command is state-changing until marked otherwise, and fails here until
it has a case. The read-only ones are checked to change nothing.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pexpect
import pytest

from instincts import build_registry
from tests.cli.test_fetch_command import Fetch, _env

TASK = "fix the typo in README.md of demo"
NOTES = "fix the typo in notes.md of demo"  # a second file with a typo: _fresh adds it
ASK = "c0ffee01"  # a member's open question (inserted as a row: see _ask)
# Tables that are logs of the conversation, not effects of a command.
LOGS = frozenset({"inbound", "messages", "usage", "sqlite_sequence"})
# Columns whose values are counted by value (the others: how many are set).
BY_VALUE = frozenset({"status", "state", "kind", "scope", "version"})


@dataclass(frozen=True)
class Case:
    line: str
    setup: tuple[tuple[str, str], ...] = ()  # (line, what its reply says) before it
    ask: bool = False  # a member's question waits for the owner


COMMIT = ((TASK, "Apply? (yes/no)"), ("yes", "✅ Committed"))
CASES: dict[str, tuple[Case, ...]] = {
    "stop": (Case("/stop"),),
    "pause": (Case("/pause"),),
    "resume": (Case("/resume", setup=(("/pause", "Paused"),)),),
    "autonomy": (Case("/autonomy semi"),),
    "clear": (Case("/clear", setup=(("/workspace demo", "Now working"),)),),
    "undo": (
        Case("/undo", setup=COMMIT),
        # Two commits: a second revert for one message would show as a third commit.
        Case("/undo", setup=(*COMMIT, (NOTES, "Apply? (yes/no)"), ("yes", "✅ Committed"))),
    ),
    "workspace": (Case("/workspace demo"),),
    "harness": (Case("/harness demo"),),
    "model": (Case("/model claude-code sonnet"),),
    # A code's row (its hash, expiry). Pairing spends the code and makes the link in one
    # effect transaction (store/links.py); a case cannot type a code it was shown.
    "link": (Case("/link"),),
    "remind": (Case("/remind call mom in 3 hours"),),
    "schedule": (Case(f"/schedule {TASK} at 9am"),),
    "cron": (
        Case(f"/cron 0 9 * * 1-5 {TASK}"),
        Case("/cron pause 1", setup=((f"/cron 0 9 * * 1-5 {TASK}", "Job #1"),)),
        Case("/cron cancel 1", setup=((f"/cron 0 9 * * 1-5 {TASK}", "Job #1"),)),
    ),
    "remember": (Case("/remember the staging host is blue"),),
    "forget": (Case("/forget 1", setup=(("/remember the sky is blue", "Remembered #1"),)),),
    "grants": (
        Case("/grants allow alice instinct:remind"),
        Case("/grants revoke 1", setup=(("/grants allow alice instinct:remind", "Granted"),)),
        Case(f"/grants yes {ASK} always", ask=True),
        Case(f"/grants no {ASK}", ask=True),
    ),
    "improve": (Case("/improve make it faster"),),
    "blocks": (
        Case("/blocks set persona be kind"),
        Case("/blocks append persona be terse"),
        Case("/blocks clear persona", setup=(("/blocks set persona be kind", "v1"),)),
        Case(
            "/blocks revert persona 1",
            setup=(("/blocks set persona be kind", "v1"), ("/blocks set persona no", "v2")),
        ),
    ),
}
READ_ONLY = (
    *("/help", "/commands", "/status", "/project", "/memory", "/skills", "/cost"),
    *("/prs", "/identity", "/whoami", "/tools", "/memory sky", "/send README.md"),
)


def _query(db: Path, sql: str, args: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return list(conn.execute(sql, args))
    finally:
        conn.close()


def _tables(db: Path) -> dict[str, object]:
    """Per table: its rows, how many of each column are set (and of each key of a JSON
    object in it, with its value when it is a short word: the session's settings), and
    the values of the status-like columns. Ids, times and hashes differ between two
    runs; these do not."""
    if not db.exists():
        return {}
    out: dict[str, object] = {}
    names = {str(r[0]) for r in _query(db, "SELECT name FROM sqlite_master WHERE type='table'")}
    virtual = [
        str(r[0])
        for r in _query(db, "SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL%'")
    ]
    # A full-text or vector index is its table's shadow: its segments differ run to run.
    shadows = {n for n in names for v in virtual if n == v or n.startswith(v + "_")}
    for table in sorted(names - LOGS - shadows):
        rows = _query(db, f'SELECT * FROM "{table}"')
        cols = [str(r[1]) for r in _query(db, f'PRAGMA table_info("{table}")')]
        set_count: Counter[str] = Counter()
        for row in rows:
            for col, value in zip(cols, row, strict=True):
                if value in (None, ""):
                    continue
                set_count[col] += 1
                for key, inner in _json_object(value).items():
                    if inner in (None, "", [], {}):
                        continue
                    set_count[f"{col}.{key}"] += 1
                    if isinstance(inner, (str, bool)) and len(str(inner)) <= 40:
                        set_count[f"{col}.{key}={inner}"] += 1  # a setting's value
        values = {
            c: sorted(Counter(str(r[i]) for r in rows).items())
            for i, c in enumerate(cols)
            if c in BY_VALUE
        }
        out[table] = (len(rows), dict(sorted(set_count.items())), values)
    return out


def _json_object(value: object) -> dict[str, object]:
    if not isinstance(value, str) or not value.startswith("{"):
        return {}
    try:
        loaded = json.loads(value)
    except ValueError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _differ(got: dict[str, object], want: dict[str, object]) -> str:
    """Which tables differ, and how: the assertion's message."""
    lines = []
    for db in sorted(set(got) | set(want)):
        a, b = got.get(db), want.get(db)
        if isinstance(a, dict) and isinstance(b, dict):
            for table in sorted(set(a) | set(b)):
                if a.get(table) != b.get(table):
                    lines.append(f"{db} {table}: {a.get(table)} != {b.get(table)}")
        elif a != b:
            lines.append(f"{db}: {a} != {b}")
    return "\n".join(lines)


def snapshot(home: Path) -> dict[str, object]:
    repo = home / "workspace" / "demo"
    commits = subprocess.run(
        ["git", "-c", "safe.directory=*", "rev-list", "--count", "HEAD"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return {
        "fetch.db": _tables(home / "fetch.db"),
        "memory.db": _tables(home / "memory" / "memory.db"),
        "git commits": commits,
        # The chat's own settings (/autonomy) live in a file beside the databases.
        "chats.yaml": chats.read_text() if (chats := home / "chats.yaml").exists() else "",
    }


def _settled(home: Path, fetch: Fetch, accepted: int, timeout: float = 60) -> None:
    """Wait until ``accepted`` messages were taken in and none is left queued."""
    db = home / "fetch.db"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = _query(db, "SELECT count(*), sum(status='queued') FROM inbound")
        total, queued = int(rows[0][0] or 0), int(rows[0][1] or 0)
        working = _query(db, "SELECT count(*) FROM sessions WHERE state='WORKING'")[0][0]
        if total >= accepted and queued == 0 and working == 0:
            return
        assert fetch.child.isalive(), fetch.transcript.getvalue()
        time.sleep(0.05)
    raise AssertionError(f"messages not handled:\n{fetch.transcript.getvalue()}")


def _accepted(home: Path) -> int:
    db = home / "fetch.db"
    return int(_query(db, "SELECT count(*) FROM inbound")[0][0]) if db.exists() else 0


def _say(home: Path, fetch: Fetch, line: str, reply: str = "fetch> ") -> None:
    before = _accepted(home)
    fetch.type(line)
    fetch.expect(reply, 60)
    _settled(home, fetch, before + 1)


def _ask(home: Path) -> None:
    """A member's question to the owner, as the permission model leaves it."""
    conn = sqlite3.connect(home / "fetch.db")
    try:
        now = time.time()
        conn.execute(
            "INSERT INTO asks(nonce, subject, action, channel, chat, created, expires)"
            " VALUES (?,?,?,?,?,?,?)",
            (ASK, "alice", "instinct:remind", "terminal", "owner", now, now + 3600),
        )
        conn.commit()
    finally:
        conn.close()


def _run(home: Path, cwd: Path, lines: tuple[tuple[str, str], ...]) -> None:
    fetch = Fetch(_env(home, FETCH_HARNESS="demo"), cwd)
    try:
        fetch.ready()
        for line, reply in lines:
            _say(home, fetch, line, reply)
        fetch.quit_with_ctrl_c()
    finally:
        fetch.kill()


def _copy(src: Path, dst: Path) -> Path:
    # cp -a: the working tree belongs to the kennel's uid, and must stay so.
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    # A copy has new inodes: the index's stat data must be refreshed or git takes every
    # file for changed (a yes would be refused: "not uptodate").
    subprocess.run(
        ["git", "-c", "safe.directory=*", "update-index", "-q", "--refresh"],
        cwd=dst / "workspace" / "demo",
        check=False,
    )
    return dst


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home Fetch has run in once (the demo repository made, the owner's chat begun),
    with a second file that has a typo (two commits for /undo)."""
    root = tmp_path_factory.mktemp("once").resolve()
    _run(root / "home", root, (("/help", "fetch> "),))  # the owner's chat exists
    repo = root / "home" / "workspace" / "demo"
    (repo / "notes.md").write_text("Notes: teh second file.\n")
    for args in (("add", "notes.md"), ("commit", "-q", "-m", "notes")):
        subprocess.run(
            ["git", "-c", "safe.directory=*", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=repo,
            check=True,
        )
    return root / "home"


def test_every_state_changing_command_has_a_case() -> None:
    changing = {i.name for i in build_registry().all() if not i.reads_only}
    missing = sorted(changing - set(CASES))
    assert not missing, f"state-changing commands with no exactly-once case: {missing}"
    assert not set(CASES) - changing, "a case for a command that is gone or reads only"


def test_read_only_commands_change_nothing(fresh: Path, tmp_path: Path) -> None:
    home = _copy(fresh, tmp_path / "home")
    marked = {i.name for i in build_registry().all() if i.reads_only}
    assert {line.split()[0][1:] for line in READ_ONLY} == marked
    before = snapshot(home)
    _run(home, tmp_path, tuple((line, "fetch> ") for line in READ_ONLY))
    after = snapshot(home)
    assert after == before, _differ(after, before)


@pytest.mark.parametrize(
    "case",
    [case for cases in CASES.values() for case in cases],
    ids=[
        f"{case.line}{' after ' + case.setup[-1][0] if case.setup else ''}"[:60]
        for cases in CASES.values()
        for case in cases
    ],
)
def test_killed_at_its_reply_a_command_has_one_effect(
    case: Case, fresh: Path, tmp_path: Path
) -> None:
    base = _copy(fresh, tmp_path / "base")
    if case.ask:
        _ask(base)
    if case.setup:
        _run(base, tmp_path, case.setup)
    once = _copy(base, tmp_path / "once")
    killed = _copy(base, tmp_path / "killed")
    # What one run of the command leaves.
    _run(once, tmp_path, ((case.line, "fetch> "),))
    expected = snapshot(once)
    assert expected != snapshot(base) or case.line in IDEMPOTENT_HERE, (
        f"{case.line} changed nothing: the case proves nothing"
    )
    # Killed by SIGKILL at the instant of its reply, then restarted on the same home.
    fetch = Fetch(_env(killed, FETCH_HARNESS="demo", FETCH_CRASH_AT="command:reply"), tmp_path)
    try:
        fetch.ready()
        fetch.type(case.line)
        fetch.child.expect(pexpect.EOF, timeout=60)
        fetch.child.close()
        assert fetch.child.signalstatus == signal.SIGKILL, fetch.transcript.getvalue()
    finally:
        fetch.kill()
    restarted = Fetch(_env(killed, FETCH_HARNESS="demo"), tmp_path)
    try:
        restarted.ready()
        _settled(killed, restarted, _accepted(killed))
        time.sleep(0.3)  # a doubled effect would have been written by now
        restarted.quit_with_ctrl_c()
    finally:
        restarted.kill()
    got = snapshot(killed)
    assert got == expected, f"{case.line}: not exactly once\n{_differ(got, expected)}"


# Commands whose one run changes nothing a database or git keeps here (they act on a
# running process, or are off): the kill may still not make them do anything twice.
IDEMPOTENT_HERE = frozenset({"/stop", "/improve make it faster", "/workspace demo"})
