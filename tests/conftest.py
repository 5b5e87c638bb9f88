"""Shared fixtures. ``fetch`` is the end-to-end driver: the whole app (SQLite in tmp,
real git repos, the real local kennel) driven through the terminal channel."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from channels.terminal import TerminalChannel
from core.events import Inbound, Outbound, SendResult, SessionKey
from orchestrator.app import App, build_app
from orchestrator.config import Settings, load_settings
from orchestrator.services import Services
from tests.fakes.steps import Hang

if TYPE_CHECKING:
    from tests.fakes.model_server import ScriptedModelServer

# tests/fakes/postgres.py: the ``pg_server`` / ``pg_url`` fixtures (a real PostgreSQL).
pytest_plugins = ["tests.fakes.postgres"]

README = "# demo\n\nTeh quick brown fox.\n"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "safe.directory=*", "-c", "user.name=T", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def make_repo(root: Path, name: str, files: dict[str, str]) -> Path:
    repo = root / name
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


def works_in(repo: Path, cwd: str) -> bool:
    """Whether a process whose /proc cwd reads ``cwd`` works on ``repo``: in the repo's
    path (bwrap shows the run's tree there) or in one of its runs' layers
    (``FETCH_HOME/runs/<repo>-<hash>/<run>/tree``, as the host sees it)."""
    if cwd == str(repo) or cwd.startswith(f"{repo}/"):
        return True
    parts = Path(cwd).parts
    for i in range(len(parts) - 3):
        if parts[i] == "runs" and parts[i + 1].rsplit("-", 1)[0] == repo.name:
            return parts[i + 3] == "tree"
    return False


def in_layer(home: Path, repo: Path, rel: str) -> str:
    """``rel`` as a running task's layer over ``repo`` has it ('' while there is none):
    the kennel writes there, never in the owner's tree."""
    for tree in sorted((home / "runs").glob(f"{repo.name}-*/*/tree")):
        with contextlib.suppress(OSError):
            return (tree / rel).read_text()
    return ""


def tree_snapshot(repo: Path) -> dict[str, bytes]:
    """Every file outside .git, byte for byte."""
    return {
        str(p.relative_to(repo)): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    make_repo(ws, "demo", {"README.md": README, "app.py": "print('hi')\n"})
    return ws


@pytest.fixture
def make_settings(tmp_path: Path, workspace: Path) -> Callable[..., Settings]:
    def make(**env: str) -> Settings:
        # The loop runs through the real bwrap sandbox: what users get without Docker.
        base = {
            "FETCH_HOME": str(tmp_path / "home"),
            "FETCH_WORKSPACE": str(workspace),
            "FETCH_HARNESS": "demo",
            "FETCH_KENNEL": "bwrap",
        }
        base.update(env)
        return load_settings(None, base)

    return make


class Driver:
    """Type like the owner, read like the phone."""

    def __init__(self, app: App, terminal: TerminalChannel) -> None:
        self.app = app
        self.terminal = terminal
        self.seen: list[str] = []

    @property
    def services(self) -> Services:
        assert self.app.services is not None
        return self.app.services

    def terminal_key(self) -> SessionKey:
        return SessionKey(self.terminal.name, self.terminal.chat)

    async def push(self, text: str, message_id: str | None = None) -> Inbound:
        return await self.terminal.submit(text, message_id=message_id)

    async def pop(self, timeout: float = 15) -> str:
        message = await asyncio.wait_for(self.terminal.outbox.get(), timeout)
        self.seen.append(message.text)
        return message.text

    async def expect(self, needle: str, timeout: float = 30) -> str:
        """Pop replies until one contains ``needle``; fail with everything seen if none."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            left = deadline - loop.time()
            if left <= 0:
                raise AssertionError(f"no reply containing {needle!r}; seen: {self.seen!r}")
            try:
                text = await self.pop(left)
            except TimeoutError:
                raise AssertionError(
                    f"no reply containing {needle!r}; seen: {self.seen!r}"
                ) from None
            if needle in text:
                return text

    async def ask(self, text: str, needle: str, timeout: float = 30) -> str:
        await self.push(text)
        return await self.expect(needle, timeout)

    def slow_send(
        self, monkeypatch: pytest.MonkeyPatch, containing: str, seconds: float = 1.0
    ) -> asyncio.Event:
        """The first reply containing ``containing`` takes ``seconds`` to leave (a phone
        channel's send on a slow network); the event is set once it is on its way."""
        sending, send = asyncio.Event(), self.terminal.send

        async def slow(message: Outbound) -> SendResult:
            if containing in message.text and not sending.is_set():
                sending.set()
                await asyncio.sleep(seconds)
            return await send(message)

        monkeypatch.setattr(self.terminal, "send", slow)
        return sending

    async def quiet(self, seconds: float = 0.3) -> list[str]:
        """Everything that arrives within ``seconds`` (to assert nothing else was said)."""
        got: list[str] = []
        try:
            while True:
                got.append(await self.pop(seconds))
        except TimeoutError:
            return got


async def start_driver(settings: Settings) -> tuple[App, Driver]:
    terminal = TerminalChannel(settings.terminal.chat)
    app = build_app(settings, channels=[terminal])
    await app.__aenter__()
    return app, Driver(app, terminal)


async def hang_a_task(
    driver: Driver, model: ScriptedModelServer, timeout: float
) -> tuple[Path, dict[str, bytes]]:
    """Start the demo typo task on a model that never answers; return once the CLI has
    asked it (within ``timeout``): the repo and its tree before, which a stopped or
    paused task must leave as it was."""
    repo = driver.services.workspace.path("demo")
    before = tree_snapshot(repo)
    model.script(Hang(60))
    await driver.ask("fix the typo in README.md of demo", "On it")
    await model.wait_for_requests(1, timeout=timeout)
    return repo, before


@pytest.fixture
async def fetch(make_settings: Callable[..., Settings]) -> AsyncIterator[Driver]:
    app, driver = await start_driver(make_settings())
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)
