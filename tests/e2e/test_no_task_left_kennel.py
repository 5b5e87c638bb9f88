"""Stopping the app ends what a task started too: a demo task through the default bwrap
sandbox (and through the Docker kennel when its image is built), and a CLI still running
(with its model relay) when the app stops. Afterwards no asyncio task Fetch created is
left, no non-daemon thread of Fetch's is alive, and the conversation log written behind
the replies is all in the file."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kennel.paths import run_dir
from orchestrator.config import Settings
from tests.conftest import in_layer, start_driver
from tests.e2e.test_pause import FOREVER, cli_pids, until
from tests.fakes.require import missing


class _Baseline:
    """What ran before the app: anything beyond it afterwards was left by Fetch."""

    def __init__(self) -> None:
        self.tasks = asyncio.all_tasks()
        self.threads = set(threading.enumerate())

    def tasks_left(self) -> list[str]:
        return [
            f"{t.get_name()} {t.get_coro()}"
            for t in asyncio.all_tasks() - self.tasks
            if not t.done()
        ]

    async def threads_left(self) -> list[str]:
        """Non-daemon threads started since (and the Docker kennel's output pumps, daemons
        that must still end with their process), still alive after a short while: a thread
        told to end (aiosqlite's, once its connection is closed) may still be returning.
        ``asyncio_N`` are the event loop's default executor (asyncio.to_thread): idle,
        and shut down by whoever owns the loop when it closes, not by the app."""

        def left() -> list[threading.Thread]:
            return [
                t
                for t in threading.enumerate()
                if t not in self.threads
                and t.is_alive()
                and (not t.daemon or t.name.startswith("kennel-"))  # Docker's pumps
                and not t.name.startswith("asyncio_")
            ]

        for _ in range(40):
            if not left():
                break
            await asyncio.sleep(0.05)
        return [t.name for t in left()]


def _logged(db: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db)
    try:
        return [
            (str(d), str(t))
            for d, t in conn.execute("SELECT direction, text FROM messages ORDER BY id")
        ]
    finally:
        conn.close()


def _running(prefix: str) -> list[str]:
    return [
        t.get_name()
        for t in asyncio.all_tasks()
        if t.get_name().startswith(prefix) and not t.done()
    ]


async def _demo_task_then_stop(settings: Settings, *, kennel: str) -> None:
    base = _Baseline()
    app, fetch = await start_driver(settings)
    try:
        assert fetch.services.kennel.name == kennel
        assert _running("store:message-log")
        await fetch.ask("fix the typo in README.md of demo", "Apply?", 120)
        done = await fetch.ask("yes", "Committed", 60)
        if kennel == "docker":
            assert _running("kennel:docker:reaper")
    finally:
        await app.__aexit__(None, None, None)
    assert base.tasks_left() == []
    assert await base.threads_left() == []
    assert ("out", done) in _logged(settings.db_path)


async def test_a_task_through_bwrap_leaves_nothing(
    make_settings: Callable[..., Settings],
) -> None:
    await _demo_task_then_stop(make_settings(), kennel="bwrap")


async def test_a_cli_still_running_at_stop_is_ended_with_its_relay(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = bin_dir / "claude"
    cli.write_text(FOREVER)
    cli.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    settings = make_settings(
        FETCH_HARNESS="claude-code", ANTHROPIC_API_KEY="sk-x", FETCH__HARNESS__TIMEOUT_SECONDS="60"
    )
    base = _Baseline()
    app, fetch = await start_driver(settings)
    try:
        repo = fetch.services.workspace.path("demo")
        await fetch.ask("fix the typo in README.md of demo", "On it")
        await until(lambda: bool(cli_pids(repo)))
        home = fetch.services.settings.home_dir
        await until(lambda: "The quick" in in_layer(home, repo, "README.md"))
        assert _running("run:") and _running("kennel:stderr:")
    finally:
        await app.__aexit__(None, None, None)
    assert base.tasks_left() == []
    assert await base.threads_left() == []
    assert cli_pids(repo) == []
    assert not (run_dir(settings.home_dir) / "bwrap-demo.sock").exists()  # the relay
    assert ("in", "fix the typo in README.md of demo") in _logged(settings.db_path)


def _docker_image() -> str | None:
    """The kennel image's tag when the engine answers and the image is built."""
    try:
        import docker
        import docker.errors

        from kennel.build import image_tag

        client: Any = docker.from_env(timeout=10)
        try:
            client.images.get(image_tag())
        finally:
            client.close()
        return image_tag()
    except Exception:
        return None


async def test_a_task_through_docker_leaves_nothing(
    make_settings: Callable[..., Settings],
) -> None:
    if _docker_image() is None:
        missing("no Docker engine or kennel image")
    await _demo_task_then_stop(make_settings(FETCH_KENNEL="docker"), kennel="docker")
