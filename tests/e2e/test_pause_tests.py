"""/pause during the tests-before-approval run holds that run as it holds the CLI: the
test process tree is stopped (state T in /proc) in the real bwrap kennel, the tests' own
time limit waits while it is held, and /resume lets them finish and pass."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from orchestrator.config import Settings
from tests.conftest import git, make_repo, start_driver
from tests.e2e.test_pause import cli_pids, states, until

# ~3 s of its own running time (30 short sleeps), then a pytest-style summary line.
MARK = "fetch-slow-suite"
SLOW_SUITE = (
    f'test_command: ": {MARK}; i=0; while [ $i -lt 30 ]; do sleep 0.1; '
    "i=$((i+1)); done; echo '1 passed in 3.00s'\"\n"
)


def suite_running(repo: Path) -> bool:
    for pid in cli_pids(repo):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if MARK.encode() in fh.read():
                    return True
        except OSError:
            continue
    return False


async def test_pause_holds_the_test_run_and_its_own_time_limit(
    make_settings: Callable[..., Settings],
    workspace: Path,
) -> None:
    repo = make_repo(workspace, "calc", {"calc.py": "# teh sum\n", ".fetch.yaml": SLOW_SUITE})
    app, fetch = await start_driver(make_settings(FETCH__APPROVALS__TEST_TIMEOUT_SECONDS="6"))
    try:
        await fetch.ask("fix the typo in calc.py of calc", "On it")
        await until(lambda: suite_running(repo), 30)
        pids = cli_pids(repo)
        assert pids
        await fetch.ask("/pause", "Paused task")
        await until(lambda: set(states(pids).values()) == {"T"}, 5)
        # Longer than the tests' whole limit: a clock that ran while paused would fire.
        await asyncio.sleep(7)
        assert set(states(pids).values()) == {"T"}, states(pids)
        await fetch.ask("/resume", "Resumed task")
        running = states(pids)
        assert running and "T" not in running.values(), running
        card = await fetch.expect("Apply?", 30)
        assert "🧪 1/1 passing" in card, card
        assert not any("still running after" in t for t in fetch.seen), fetch.seen
        await fetch.ask("no", "Discarded")
        assert git(repo, "status", "--porcelain") == ""
    finally:
        await app.__aexit__(None, None, None)
