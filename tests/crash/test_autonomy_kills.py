"""The commits nobody is asked for are crash-safe too (issues 12, 13): the real ``fetch``
(demo harness, bwrap kennel, the repository's tests in it) killed around semi's unasked
commit and around the autonomous commit on ``fetch/task-<id>``, restarted each time.

Each kill is a named crash point (``unasked:``/``branch:`` intent, ref, recorded) or a
SIGKILL (to Fetch alone or its whole group) a moment after the journal's intent appears.
After every restart: each commit Fetch made on the owner's branch is in the commits table
exactly once and vice versa, each task branch is exactly one pending merge question in a
chat waiting on it, no intent is open, the repository is clean. Then, not killed, the
restart finishes what the kill left: a branch is merged, and /undo reverts the commit,
so /undo reaches every commit a kill left behind.
"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pexpect

from tests.cli.test_fetch_command import Fetch, _env
from tests.conftest import make_repo
from tests.crash.test_commit_undo_kills import World, _git, _query, _started

SEED = 20261124
KILLS = 12
TASK = "fix the typo in README.md of demo"
POINTS = {
    "semi": ("unasked:intent", "unasked:ref", "unasked:recorded"),
    "autonomous": ("branch:intent", "branch:ref", "branch:recorded"),
}
README = "# demo\n\nTeh quick brown fox.\n"
# The repository's own tests, run in the kennel: they pass, so semi commits unasked.
FETCH_YAML = "test_command: echo '1 passed in 0.01s'\n"


def branches(world: World) -> list[str]:
    out = _git(world.repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/fetch/")
    return out.split()


def check_branches(world: World) -> list[str]:
    """Each task branch is one pending merge question the owner's chat waits on."""
    found = branches(world)
    for branch in found:
        task = int(branch.removeprefix("fetch/task-"))
        rows = _query(world.db, f"SELECT status FROM approvals WHERE task_id={task}")
        assert [r[0] for r in rows] == ["pending"], (branch, rows)
        status = _query(world.db, f"SELECT status FROM tasks WHERE id={task}")
        assert status == [("branched",)], (branch, status)
        assert world.state() == "GUARDING", (branch, world.state())
    assert len(found) <= 1, found
    return found


def _intents(world: World) -> int:
    [(count,)] = _query(world.db, "SELECT count(*) FROM intents")
    assert isinstance(count, int)
    return count


def _kill(fetch: Fetch, world: World, rng: random.Random, armed: bool) -> str:
    """Start the task and make Fetch die around its commit; how it died."""
    child = fetch.child
    before = _intents(world)
    fetch.type(TASK)
    if armed:
        try:  # the crash point ends the process itself
            child.expect(pexpect.EOF, timeout=30)
            return "crash point"
        except pexpect.TIMEOUT:
            pass
    deadline = time.monotonic() + 30
    while _intents(world) == before and child.isalive():  # the journal: the commit begins
        assert time.monotonic() < deadline, "the commit never began"
        time.sleep(0.005)
    time.sleep(rng.uniform(0.0, 0.15))
    if rng.random() < 0.5:
        os.killpg(child.pid, signal.SIGKILL)  # a git in flight dies too
        how = "SIGKILL group"
    else:
        os.kill(child.pid, signal.SIGKILL)
        how = "SIGKILL"
    child.expect(pexpect.EOF, timeout=15)
    return how


def _finish(fetch: Fetch, world: World) -> int:
    """Not killed: merge a waiting branch, then /undo a live commit; how many /undo."""
    if check_branches(world):
        fetch.type("merge")
        fetch.expect("✅ Merged", 30)
        world.settled(fetch)
    live, _ = world.check()
    if not live:
        return 0
    fetch.type("/undo")
    fetch.expect("↩️ Reverted", 30)
    world.settled(fetch)
    assert world.check()[0] == 0
    return 1


def test_kills_around_unasked_and_branch_commits_lose_and_double_nothing(tmp_path: Path) -> None:
    home = tmp_path.resolve() / "home"
    make_repo(home / "workspace", "demo", {"README.md": README, ".fetch.yaml": FETCH_YAML})
    world = World(home)
    rng = random.Random(SEED)
    kills: dict[str, int] = {}
    undone = 0
    started = time.monotonic()
    for n in range(KILLS):
        level = ("semi", "autonomous")[n % 2]
        armed = n % 4 < 2  # half at a named point, half a SIGKILL after the intent
        env = _env(home, FETCH_HARNESS="demo", FETCH__APPROVALS__AUTONOMY=level)
        if armed:
            family = POINTS[level]
            env["FETCH_CRASH_AT"] = family[(n // 4) % len(family)]
        fetch = Fetch(env, tmp_path)
        try:
            assert _started(fetch, world)
            world.check()
            undone += _finish(fetch, world)
            how = _kill(fetch, world, rng, armed)
        finally:
            fetch.kill()
        what = f"{level} {env.get('FETCH_CRASH_AT', how)}"
        kills[what] = kills.get(what, 0) + 1
    # The last restart: the invariants hold, and /undo reaches what the last kill left.
    fetch = Fetch(_env(home, FETCH_HARNESS="demo"), tmp_path)
    try:
        assert _started(fetch, world)
        world.check()
        undone += _finish(fetch, world)
        fetch.quit_with_ctrl_c()
    finally:
        fetch.kill()
    elapsed = time.monotonic() - started
    rows = _query(world.db, "SELECT sha, undone_by FROM commits")
    print(
        f"\n{sum(kills.values())} kills in {elapsed:.0f} s, {len(rows)} commits, "
        f"{undone} undone: {kills}"
    )
    assert all(by is not None for _, by in rows), "a commit /undo did not reach"
    assert undone == len(rows)
    assert len(rows) >= KILLS // 2, "too few kills landed after a commit to prove anything"
    assert branches(world) == []
