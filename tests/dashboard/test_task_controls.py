"""A task page's buttons through real HTTP into the real app: pause, resume and stop a
real CLI's run (a stand-in ``claude`` in the bwrap kennel, its process tree held in
/proc), approve and reject a diff bound to its approval's nonce. Each is said in the
task's chat as the owner's own message (the chat hears the answer), each is refused
without the CSRF token, and the live stream says when the page changed."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import aiohttp
import pytest

from orchestrator.config import Settings
from orchestrator.store.db import key_str
from tests.conftest import git
from tests.dashboard.conftest import Web, start_web, stop_web
from tests.e2e.test_pause import cli_pids, cli_runs, states

TYPO = "fix the typo in README.md of demo"
# A stand-in `claude`: edits, then reports a step every 0.3 s until it is stopped.
STEPPING = (
    "#!/bin/sh\nsed -i 's/Teh/The/' README.md\ni=0\nwhile true; do i=$((i+1))\n"
    'echo \'{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash<b>x</b>",'
    '"input":{"command":"step \'$i\'"}}]}}\'\nsleep 0.3\ndone\n'
)


async def until(check: Callable[[], object], timeout: float = 15) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.05)


@pytest.fixture
async def stepping(
    web_settings: Callable[..., Settings], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Web]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(STEPPING)
    (bin_dir / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    started = await start_web(
        web_settings(
            FETCH_HARNESS="claude-code",
            ANTHROPIC_API_KEY="sk-x",
            FETCH__HARNESS__TIMEOUT_SECONDS="120",
        )
    )
    try:
        yield started
    finally:
        await stop_web(started)


def _buttons(body: str) -> set[str]:
    return set(re.findall(r'<button[^>]*id="task-(\w+)"', body))


def _steps(body: str) -> int:
    found = re.search(r'id="task-progress">(\d+) step', body)
    return int(found.group(1)) if found else -1


async def test_pause_resume_and_stop_a_running_task_from_its_page(
    stepping: Web, tmp_path: Path
) -> None:
    web = stepping
    repo = web.services.workspace.path("demo")
    await web.driver.ask(TYPO, "On it")
    # The stand-in itself (a process in the repository may be host git before it).
    await until(lambda: bool(cli_runs(tmp_path)), 30)
    await until(lambda: web.services.journal.path(web.driver.terminal_key()).exists())
    status, body = await web.get("/tasks/1")
    assert status == 200 and _buttons(body) == {"pause", "stop"}
    # The CLI's steps show up as it works (escaped: its own words are data).
    first = _steps(body)
    await asyncio.sleep(1.0)
    status, body = await web.get("/tasks/1")
    assert _steps(body) > first, body
    assert "<b>x</b>" not in body and "&lt;b&gt;x&lt;/b&gt;" in body

    pids = cli_pids(repo)
    status, _loc, _ = await web.post("/tasks/1/pause", {})  # no CSRF token: refused
    assert status == 403
    await asyncio.sleep(0.5)
    assert "T" not in states(pids).values()
    status, location, _ = await web.post("/tasks/1/pause", {"csrf": web.csrf()})
    assert status == 303 and location.startswith("/tasks/1?note=asked%20to%20pause")
    await web.driver.expect("Paused task #1")  # said in the task's chat, as from the phone
    await until(lambda: set(states(pids).values()) == {"T"}, 5)
    status, body = await web.get("/tasks/1")
    assert _buttons(body) == {"resume", "stop"} and ">paused<" in body

    status, location, _ = await web.post("/tasks/1/resume", {"csrf": web.csrf()})
    assert status == 303
    await web.driver.expect("Resumed task #1")
    await until(lambda: "T" not in states(pids).values(), 5)

    status, location, _ = await web.post("/tasks/1/stop", {"csrf": web.csrf()})
    assert status == 303
    await web.driver.expect("Stopped task #1")
    await until(lambda: not cli_pids(repo), 10)
    task = await web.services.store.work.get_task(1)
    assert task is not None and task.status == "stopped"
    status, body = await web.get("/tasks/1")
    assert _buttons(body) == set()
    # A button of a page left open does nothing now, and says why.
    status, location, _ = await web.post("/tasks/1/pause", {"csrf": web.csrf()})
    assert "nothing%20to%20pause" in location
    status, location, _ = await web.post("/tasks/1/explode", {"csrf": web.csrf()})
    assert "unknown%20action" in location
    status, location, _ = await web.post("/tasks/99/stop", {"csrf": web.csrf()})
    assert location.startswith("/tasks?note=no%20such%20task")


async def test_approve_and_reject_are_bound_to_the_diff_that_waits(web: Web) -> None:
    repo = web.services.workspace.path("demo")
    head = git(repo, "rev-parse", "HEAD")
    await web.driver.ask(TYPO, "Apply? (yes/no)", 90)
    status, body = await web.get("/tasks/1")
    assert _buttons(body) == {"approve", "reject"}
    nonce = re.search(r'name="nonce" value="([0-9a-f]+)"', body)
    assert nonce is not None
    row = await web.services.store.work.task_approval(1)
    assert row is not None and row.nonce == nonce.group(1)
    # Without the CSRF token, or with another diff's nonce: nothing is answered.
    status, _loc, _ = await web.post("/tasks/1/approve", {"nonce": row.nonce})
    assert status == 403
    status, location, _ = await web.post("/tasks/1/approve", {"csrf": web.csrf(), "nonce": "ab"})
    assert "no%20longer%20the%20one%20waiting" in location
    status, location, _ = await web.post("/tasks/1/approve", {"csrf": web.csrf()})
    assert "no%20longer%20the%20one%20waiting" in location
    await asyncio.sleep(0.5)
    assert git(repo, "rev-parse", "HEAD") == head
    status, location, _ = await web.post(
        "/tasks/1/approve", {"csrf": web.csrf(), "nonce": row.nonce}
    )
    assert status == 303 and "answered%20yes" in location
    await web.driver.expect("Committed", 60)
    assert git(repo, "rev-parse", "HEAD^") == head
    status, body = await web.get("/tasks/1")
    assert _buttons(body) == set() and 'id="task-commit"' in body
    # The same button again (a page left open): the diff no longer waits.
    status, location, _ = await web.post(
        "/tasks/1/approve", {"csrf": web.csrf(), "nonce": row.nonce}
    )
    assert "no%20diff%20waiting" in location

    # A second task's diff, rejected from its page: nothing lands.
    (repo / "notes.md").write_text("helo wrold\n")
    git(repo, "add", "notes.md")
    git(repo, "commit", "-qm", "notes")
    head = git(repo, "rev-parse", "HEAD")
    await web.driver.ask("fix the typo in notes.md of demo", "Apply? (yes/no)", 90)
    second = await web.services.store.work.task_approval(2)
    assert second is not None and second.nonce != row.nonce
    status, location, _ = await web.post(
        "/tasks/2/reject", {"csrf": web.csrf(), "nonce": second.nonce}
    )
    assert status == 303 and "answered%20no" in location
    await web.driver.expect("Discarded", 30)
    assert git(repo, "rev-parse", "HEAD") == head
    task = await web.services.store.work.get_task(2)
    assert task is not None and task.status == "rejected"


async def _next_event(body: aiohttp.ClientResponse, timeout: float) -> str:
    """The next SSE event's name from a streaming response (comments skipped)."""
    async with asyncio.timeout(timeout):
        while True:
            line = (await body.content.readline()).decode()
            if line.startswith("event: "):
                return line[len("event: ") :].strip()


async def test_task_and_chat_pages_are_told_when_they_change(web: Web) -> None:
    await web.driver.ask(TYPO, "Apply? (yes/no)", 90)
    key = key_str(web.driver.terminal_key())
    async with (
        web.client.get(web.base + "/live/tasks/1") as task_stream,
        web.client.get(f"{web.base}/live/sessions/{key}") as chat_stream,
    ):
        assert task_stream.status == 200 and chat_stream.status == 200
        assert task_stream.headers["Content-Type"] == "text/event-stream"
        with pytest.raises(TimeoutError):  # nothing changes: nothing is said
            await _next_event(task_stream, 1.5)
        await web.driver.ask("yes", "Committed", 60)
        assert await _next_event(task_stream, 10) == "change"
        assert await _next_event(chat_stream, 10) == "change"
    # Not the owner's: no stream. No such task or chat: 404.
    async with web.anon.get(web.base + "/live/tasks/1") as r:
        assert r.status == 401
    async with web.client.get(web.base + "/live/tasks/77") as r:
        assert r.status == 404
    async with web.client.get(web.base + "/live/sessions/nope:none") as r:
        assert r.status == 404
