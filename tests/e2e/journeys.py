"""The paths a user takes, as journeys any kennel backend must pass the same way (issue 21,
1): a real Claude Code (the host's for bubblewrap, the image's for Docker) on a scripted
model server, driven through the terminal channel.

tests/e2e/test_both_backends.py runs each journey on bubblewrap and on Docker, in the test
process (root here) and, through ``python -m tests.e2e.journeys``, as a Fetch of a non-root
user (a child process under another uid: the copy-mode layer, the engine's socket through
its group)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path

from orchestrator.app import App
from orchestrator.config import load_settings
from tests.conftest import README, Driver, git, make_repo, start_driver, tree_snapshot
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text
from tests.fakes.steps import Delay, Hang

TASK = "fix the typo in README.md of demo"
QUESTION = "Which word should replace Teh: The or A?"
TIMEOUT = 120.0

Start = Callable[[], Awaitable[tuple[App, Driver]]]


def fix() -> list[EditFile | Text]:
    return [EditFile("README.md", "Teh quick", "The quick"), Text("Fixed it.")]


async def _settled(model: ScriptedModelServer) -> None:
    """Let a CLI's late side requests of its last turn land before scripting the next."""
    seen = -1
    while seen != len(model.requests):
        seen = len(model.requests)
        await asyncio.sleep(1.0)


async def no_retry_undo_retry(start: Start, model: ScriptedModelServer) -> None:
    app, fetch = await start()
    try:
        repo = fetch.services.workspace.path("demo")
        base, before = git(repo, "rev-parse", "HEAD"), tree_snapshot(repo)
        model.script(*fix())
        assert "+The quick" in await fetch.ask(TASK, "Apply?", TIMEOUT)
        await fetch.ask("no", "Discarded")
        assert tree_snapshot(repo) == before
        model.script(*fix())
        await fetch.ask(TASK, "Apply?", TIMEOUT)
        await fetch.ask("yes", "Committed")
        await fetch.ask("/undo", "Reverted")
        assert tree_snapshot(repo) == before
        model.script(*fix())
        await fetch.ask(TASK, "Apply?", TIMEOUT)
        await fetch.ask("yes", "Committed")
        assert git(repo, "rev-parse", "HEAD~3") == base  # commit, its revert, commit
        assert "The quick" in (repo / "README.md").read_text()
        assert git(repo, "status", "--porcelain") == ""
    finally:
        await app.__aexit__(None, None, None)


async def question_and_answer(start: Start, model: ScriptedModelServer) -> None:
    app, fetch = await start()
    try:
        repo = fetch.services.workspace.path("demo")
        base = git(repo, "rev-parse", "HEAD")
        model.script(Text(QUESTION))
        assert QUESTION in await fetch.ask(TASK, "asks", TIMEOUT)
        assert "WAITING" in await fetch.ask("/status", "Fetch ·")
        await _settled(model)
        first = len(model.model_requests)
        model.script(*fix())
        await fetch.ask("The", "Passed your answer")
        assert "+The quick" in await fetch.expect("Apply?", TIMEOUT)
        later = model.model_requests[first:]
        assert any(QUESTION in json.dumps(r.body) for r in later), "the CLI was not resumed"
        await fetch.ask("yes", "Committed")
        assert git(repo, "rev-parse", "HEAD^") == base
    finally:
        await app.__aexit__(None, None, None)


async def pause_resume_then_stop(start: Start, model: ScriptedModelServer) -> None:
    app, fetch = await start()
    try:
        repo = fetch.services.workspace.path("demo")
        before = tree_snapshot(repo)
        # The model answers after 4 s; a held CLI cannot send its next request meanwhile.
        model.script(Delay(4, fix()[0]), fix()[1])
        await fetch.ask(TASK, "On it")
        await model.wait_for_requests(1, timeout=TIMEOUT)
        asked = len(model.model_requests)
        assert "/resume" in await fetch.ask("/pause", "Paused task")
        await asyncio.sleep(7)
        assert len(model.model_requests) == asked, "the paused CLI went on"
        assert "WORKING" in await fetch.ask("/status", "Fetch ·")
        await fetch.ask("/resume", "Resumed task")
        assert "+The quick" in await fetch.expect("Apply?", TIMEOUT)
        await fetch.ask("no", "Discarded")
        # /stop of a running task, then of a paused one: nothing kept, ALERT, and a
        # next task runs.
        for pause in (False, True):
            model.script(Hang(60))
            await fetch.ask(TASK, "On it")
            await model.wait_for_requests(len(model.requests) + 1, timeout=TIMEOUT)
            if pause:
                await fetch.ask("/pause", "Paused task")
            stopped = await fetch.ask("/stop", "Stopped", 15)
            assert "still alive" not in stopped
            assert tree_snapshot(repo) == before
            assert "ALERT" in await fetch.ask("/status", "Fetch ·")
        model.script(*fix())
        await fetch.ask(TASK, "Apply?", TIMEOUT)
        await fetch.ask("no", "Discarded")
    finally:
        await app.__aexit__(None, None, None)


async def restart_in_each_state(start: Start, model: ScriptedModelServer) -> None:
    """ALERT, GUARDING, WAITING, WORKING and paused, each across a restart."""

    async def restarted(app: App) -> tuple[App, Driver]:
        await app.__aexit__(None, None, None)
        return await start()

    app, fetch = await start()
    try:
        repo = fetch.services.workspace.path("demo")
        before = tree_snapshot(repo)
        app, fetch = await restarted(app)  # ALERT
        assert "ALERT" in await fetch.ask("/status", "Fetch ·")
        model.script(*fix())  # GUARDING: the yes after the restart commits that diff
        await fetch.ask(TASK, "Apply?", TIMEOUT)
        app, fetch = await restarted(app)
        await fetch.ask("yes", "Committed")
        await fetch.ask("/undo", "Reverted")
        model.script(Text(QUESTION))  # WAITING: the answer after it resumes the CLI
        await fetch.ask(TASK, "asks", TIMEOUT)
        await _settled(model)
        app, fetch = await restarted(app)
        assert "WAITING" in await fetch.ask("/status", "Fetch ·")
        model.script(*fix())
        await fetch.ask("The", "Passed your answer")
        await fetch.expect("Apply?", TIMEOUT)
        await fetch.ask("no", "Discarded")
        for pause in (False, True):  # WORKING, and paused: stopped, said, unchanged
            model.script(Hang(60))
            await fetch.ask(TASK, "On it")
            await model.wait_for_requests(len(model.requests) + 1, timeout=TIMEOUT)
            if pause:
                await fetch.ask("/pause", "Paused task")
            app, fetch = await restarted(app)
            await fetch.expect("Fetch restarted while task", 30)
            assert "ALERT" in await fetch.ask("/status", "Fetch ·")
            assert tree_snapshot(repo) == before
        model.script(*fix())
        await fetch.ask(TASK, "Apply?", TIMEOUT)
        await fetch.ask("yes", "Committed")
    finally:
        await app.__aexit__(None, None, None)


JOURNEYS: dict[str, Callable[[Start, ScriptedModelServer], Awaitable[None]]] = {
    "no_retry_undo_retry": no_retry_undo_retry,
    "question_and_answer": question_and_answer,
    "pause_resume_then_stop": pause_resume_then_stop,
    "restart_in_each_state": restart_in_each_state,
}


def starter(home: Path, workspace: Path, backend: str, model: ScriptedModelServer) -> Start:
    env = {
        "FETCH_HOME": str(home),
        "FETCH_WORKSPACE": str(workspace),
        "FETCH_KENNEL": backend,
        "FETCH_HARNESS": "claude-code",
        "ANTHROPIC_BASE_URL": model.url,
        "ANTHROPIC_API_KEY": "sk-ant-journeys-canary-0000",
    }

    async def start() -> tuple[App, Driver]:
        return await start_driver(load_settings(None, env))

    return start


async def _child(backend: str, names: list[str]) -> int:
    """Every journey in ``names`` on ``backend``, each on a fresh repo; 0 if all pass."""
    failed = 0
    for name in names:
        root = Path(tempfile.mkdtemp(prefix=f"journey-{name}-"))
        workspace = root / "ws"
        make_repo(workspace, "demo", {"README.md": README, "app.py": "print('hi')\n"})
        async with ScriptedModelServer() as model:
            try:
                await JOURNEYS[name](starter(root / "home", workspace, backend, model), model)
                print(f"ok {name} (uid {os.geteuid()})", flush=True)
            except Exception:
                failed += 1
                print(f"FAILED {name} (uid {os.geteuid()})", flush=True)
                traceback.print_exc()
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.journeys")
    parser.add_argument("--backend", required=True, choices=("bwrap", "docker"))
    parser.add_argument("journeys", nargs="*", default=list(JOURNEYS))
    args = parser.parse_args(argv)
    return asyncio.run(_child(args.backend, args.journeys))


if __name__ == "__main__":
    sys.exit(main())
