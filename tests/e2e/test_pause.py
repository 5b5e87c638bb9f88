"""/pause holds a real CLI's whole process tree (state T in /proc), its time limit
waits while it is held, /resume continues it, and /stop ends a paused task."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from core.state import State
from kennel.process import descendants
from orchestrator.config import Settings
from tests.conftest import Driver, in_layer, start_driver, tree_snapshot, works_in

# A stand-in `claude`: edits, then works for ~3 s of its own running time (30 short
# sleeps), then reports a result in Claude Code's stream format.
SLOW = (
    "#!/bin/sh\nsed -i 's/Teh/The/' README.md\n"
    "i=0; while [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done\n"
    'echo \'{"type":"result","subtype":"success","result":"fixed it"}\'\n'
)
QUICK = (  # edits and reports at once
    "#!/bin/sh\nsed -i 's/Teh/The/' README.md\n"
    'echo \'{"type":"result","subtype":"success","result":"fixed it"}\'\n'
)
FOREVER = "#!/bin/sh\nsed -i 's/Teh/The/' README.md\nwhile true; do sleep 0.1; done\n"


def cli_pids(repo: Path) -> list[int]:
    """Live processes working in ``repo`` (the sandboxed CLI and its children)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if works_in(repo, cwd):
            found.append(int(entry))
    return found


def cli_runs(tmp_path: Path) -> list[int]:
    """This test's own processes running the stand-in CLI (``tmp_path/bin/claude``)."""
    script = str(tmp_path / "bin" / "claude")
    return [p for p in descendants(os.getpid()) if script in _comm(p, 4096)]


def state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
        return fh.read().rsplit(")", 1)[-1].split()[0]


def _comm(pid: int, cut: int = 80) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")[:cut]
    except OSError:
        return "?"


def states(pids: list[int]) -> dict[int, str]:
    """The state of each pid still there (one that has ended is left out)."""
    out = {}
    for pid in pids:
        try:
            out[pid] = state(pid)
        except OSError:
            continue
    return out


async def until(check: Callable[[], bool], timeout: float = 15) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.05)


async def started(
    script: str,
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    timeout: str,
) -> tuple[object, Driver]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = bin_dir / "claude"
    cli.write_text(script)
    cli.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return await start_driver(
        make_settings(
            FETCH_HARNESS="claude-code",
            ANTHROPIC_API_KEY="sk-x",
            FETCH__HARNESS__TIMEOUT_SECONDS=timeout,
        )
    )


async def test_pause_holds_the_tree_and_its_clock_then_resume_finishes(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app, fetch = await started(SLOW, make_settings, tmp_path, monkeypatch, "6")
    try:
        repo = fetch.services.workspace.path("demo")
        await fetch.ask("fix the typo in README.md of demo", "On it")
        # The stand-in itself runs (a process in the repository may be host git, or the
        # sandbox's start: a pause then is test_pause_before_the_cli_starts's case).
        await until(lambda: bool(cli_runs(tmp_path)))
        held = await fetch.ask("/pause", "Paused task")
        assert "/resume" in held

        seen: list[dict[int, str]] = []

        def all_held() -> bool:
            # Every process working in the repository now: all stopped.
            now = {p: f"{st} {_comm(p)}" for p, st in states(cli_pids(repo)).items()}
            seen[:] = [now]
            return bool(now) and {v.split()[0] for v in now.values()} == {"T"}

        try:
            await until(all_held, 15)
        except AssertionError as err:
            raise AssertionError(f"not all held: {seen}") from err
        pids = cli_pids(repo)
        assert "WORKING" in await fetch.ask("/status", "Fetch ·")
        assert "task: #1 claude-code (paused)" in await fetch.ask("/project", "📁 demo")
        assert "/resume continues it" in await fetch.ask("and the tests too", "is paused")
        # Longer than the whole time limit: a clock that ran while paused would fire.
        await asyncio.sleep(7)
        assert set(states(pids).values()) == {"T"}, states(pids)
        await fetch.ask("/resume", "Resumed task")
        running = states(pids)
        assert running and "T" not in running.values(), running
        diff = await fetch.expect("Apply?", 30)
        assert "+The quick" in diff
        assert not any("took longer" in t for t in fetch.seen), fetch.seen
        await fetch.ask("no", "Discarded")
    finally:
        await app.__aexit__(None, None, None)  # type: ignore[attr-defined]


async def test_stop_ends_a_paused_task(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app, fetch = await started(FOREVER, make_settings, tmp_path, monkeypatch, "60")
    try:
        repo = fetch.services.workspace.path("demo")
        before = tree_snapshot(repo)
        await fetch.ask("fix the typo in README.md of demo", "On it")
        await until(lambda: bool(cli_pids(repo)))
        home = fetch.services.settings.home_dir
        await until(lambda: "The quick" in in_layer(home, repo, "README.md"))
        pids = cli_pids(repo)
        await fetch.ask("/pause", "Paused task")
        await until(lambda: set(states(pids).values()) == {"T"}, 15)  # a loaded CI box
        stopped = await fetch.ask("/stop", "Stopped task")
        assert "still alive" not in stopped
        await until(lambda: not cli_pids(repo), 5)
        assert tree_snapshot(repo) == before
        assert "ALERT" in await fetch.ask("/status", "Fetch ·")
        assert "I'm not paused" in await fetch.ask("/resume", "paused")
    finally:
        await app.__aexit__(None, None, None)  # type: ignore[attr-defined]


async def test_pause_before_the_cli_starts_holds_it_from_its_first_line(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A /pause that lands while the kennel is still starting (no process yet, or only the
    sandbox's own start) holds the run as soon as it exists: the CLI runs no line (its
    first edits nothing) until /resume."""
    app, fetch = await started(FOREVER, make_settings, tmp_path, monkeypatch, "60")
    try:
        repo = fetch.services.workspace.path("demo")
        home = fetch.services.settings.home_dir
        await fetch.ask("fix the typo in README.md of demo", "On it")
        await fetch.ask("/pause", "Paused task")
        runs = fetch.services.runner._runs
        await until(lambda: any(h.proc is not None for h in runs.values()), 30)
        # Long enough for the sandbox to start and the CLI to edit, were it not held.
        await asyncio.sleep(2)
        assert "The quick" not in in_layer(home, repo, "README.md")
        tree = [p for h in runs.values() if h.proc is not None for p in h.proc.alive_pids()]
        assert tree and set(states(tree).values()) == {"T"}, states(tree)
        await fetch.ask("/resume", "Resumed task")
        await until(lambda: "The quick" in in_layer(home, repo, "README.md"), 30)
        await fetch.ask("/stop", "Stopped task")
    finally:
        await app.__aexit__(None, None, None)  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", ["/stop", "/pause"])
async def test_stop_and_pause_reach_a_task_while_its_typing_indicator_is_sent(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    """On a channel with a typing indicator (a phone's), turning it on is a network call
    made right after "On it": a /stop or /pause that arrives while it is on its way
    reaches the task (it is not "nothing is running", with the task going on after)."""
    app, fetch = await started(FOREVER, make_settings, tmp_path, monkeypatch, "60")
    try:
        asked = asyncio.Event()

        async def set_typing(chat: str, typing: bool) -> None:
            if typing and not asked.is_set():
                asked.set()
                await asyncio.sleep(1.0)  # the indicator's request, on a slow network

        terminal = fetch.terminal
        monkeypatch.setattr(terminal, "set_typing", set_typing)
        monkeypatch.setattr(terminal, "capabilities", replace(terminal.capabilities, typing=True))
        await fetch.ask("fix the typo in README.md of demo", "On it")
        await asyncio.wait_for(asked.wait(), 10)
        word = "Stopped task" if command == "/stop" else "Paused task"
        assert word in await fetch.ask(command, "task")
        if command == "/pause":
            assert "Stopped task" in await fetch.ask("/stop", "task")
        repo = fetch.services.workspace.path("demo")
        await until(lambda: not cli_pids(repo), 15)
        assert fetch.services.runner._runs == {}
    finally:
        await app.__aexit__(None, None, None)  # type: ignore[attr-defined]


async def test_stop_while_on_it_is_sent_ends_the_task_before_it_runs(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A /stop that arrives while "On it" is still on its way (a slow network) stops that
    task: it is said stopped, its CLI never starts, and the chat is free again."""
    app, fetch = await started(FOREVER, make_settings, tmp_path, monkeypatch, "60")
    try:
        sending = fetch.slow_send(monkeypatch, "⏳ On it")
        await fetch.push("fix the typo in README.md of demo")
        await asyncio.wait_for(sending.wait(), 15)
        assert "Stopped task #1" in await fetch.ask("/stop", "Stopped")
        await fetch.expect("On it", 10)
        task = await fetch.services.store.work.get_task(1)
        assert task is not None and task.status == "stopped", task
        await asyncio.sleep(1.0)  # a run started anyway would have its CLI up by now
        assert cli_runs(tmp_path) == [] and fetch.services.runner._runs == {}
        session = await fetch.services.sessions.get(fetch.terminal_key())
        assert session.state is State.ALERT and session.data.task_id is None
    finally:
        await app.__aexit__(None, None, None)  # type: ignore[attr-defined]


async def test_stop_while_the_diff_is_sent_keeps_the_diff_whole(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The CLI has finished and its diff is on its way (a slow network): a /stop then
    does not cut the proposal half way (a diff said stopped but still answerable). It
    says the task had finished; the diff arrives whole and its yes commits."""
    app, fetch = await started(QUICK, make_settings, tmp_path, monkeypatch, "60")
    try:
        sending = fetch.slow_send(monkeypatch, "Apply? (yes/no)")
        await fetch.ask("fix the typo in README.md of demo", "On it")
        await asyncio.wait_for(sending.wait(), 30)
        said = " ".join((await fetch.ask("/stop", "Task #1")).split())
        assert "had already finished" in said and "Stopped" not in said, said
        await fetch.expect("Apply?", 10)
        task = await fetch.services.store.work.get_task(1)
        assert task is not None and task.status == "proposed", task
        await fetch.ask("yes", "Committed", 30)
        repo = fetch.services.workspace.path("demo")
        assert "The quick" in (repo / "README.md").read_text()
    finally:
        await app.__aexit__(None, None, None)  # type: ignore[attr-defined]
