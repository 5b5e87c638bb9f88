"""Real-browser tests: Debian's ``chromium`` driven by Playwright (``executable_path``: no
browser is downloaded), against the real app (SQLite in tmp, real git, the bwrap kennel
running the demo harness) with its HTTP listener on 127.0.0.1 (an ephemeral port).

Chromium is slow to start on two cores, so each test module gets one browser and one app
(module scope); each test opens its own context (cookies) and page. Screenshots go to
``$FETCH_TEST_ARTIFACTS/screenshots`` (default ``tests-artifacts/screenshots`` in the
checkout, ignored by git).
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest_asyncio

import channels.whatsapp._neonize  # noqa: F401  (neonize's import-time leaks undone first)
from channels.base import Channel
from channels.http import HttpServer
from channels.http.auth import WebAuth
from orchestrator.app import App, build_channels
from orchestrator.config import Settings, load_settings
from tests.conftest import README, make_repo
from tests.fakes.require import missing, require_binary

if TYPE_CHECKING:
    from playwright.async_api import (
        Browser,
        BrowserContext,
        ConsoleMessage,
        Page,
        Request,
        ViewportSize,
    )

PHONE_WIDTH, PHONE_HEIGHT = 375, 812  # an iPhone-sized screen: the pages must work there
ROOT = Path(__file__).resolve().parents[2]


def artifacts() -> Path:
    base = os.environ.get("FETCH_TEST_ARTIFACTS")
    folder = (Path(base) if base else ROOT / "tests-artifacts") / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def settings_for(tmp: Path, **env: str) -> Settings:
    workspace = tmp / "ws"
    make_repo(workspace, "demo", {"README.md": README, "app.py": "print('hi')\n"})
    base = {
        "FETCH_HOME": str(tmp / "home"),
        "FETCH_WORKSPACE": str(workspace),
        "FETCH_HARNESS": "demo",
        "FETCH_KENNEL": "bwrap",
        "FETCH__HTTP__PORT": "0",
    }
    return load_settings(None, {**base, **env})


async def start_site(settings: Settings, extra: list[Channel] | None = None) -> App:
    """The app as ``build_app`` composes it (the web token, the channels the settings
    enable: the web chat; the dashboard mounted at start), plus ``extra`` channels (a
    WhatsApp adapter over the fake client, for the pairing QR)."""
    http = HttpServer(settings.http)
    auth = WebAuth.from_home(settings.home_dir)
    auth.install(http)
    channels = [*build_channels(settings, http, auth), *(extra or [])]
    app = App(settings, channels, http, web_auth=auth)
    await app.__aenter__()
    return app


def login_url(app: App) -> str:
    assert app.http is not None and app.web_auth is not None
    return app.web_auth.login_url(app.http.url)


def base_url(app: App) -> str:
    assert app.http is not None
    return app.http.url


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        missing("the playwright package is not installed", ci_must="install")
    executable = require_binary("chromium")
    async with async_playwright() as pw:
        launched = await pw.chromium.launch(
            executable_path=executable,
            # As root (CI, containers) Chromium's own sandbox cannot start; /dev/shm is
            # small in containers; no GPU here.
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
        )
        try:
            yield launched
        finally:
            await launched.close()


@dataclass
class Watch:
    """What went wrong on a page: console errors, uncaught exceptions, failed requests
    and responses of 400 or more (each with its URL)."""

    problems: list[str] = field(default_factory=list)

    def attach(self, page: Page) -> None:
        page.on("console", self._console)
        page.on("pageerror", lambda err: self.problems.append(f"page error: {err}"))
        page.on("requestfailed", self._failed)
        page.on("response", self._response)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.problems.append(f"console error: {message.text} at {message.location}")

    def _failed(self, request: Request) -> None:
        self.problems.append(f"request failed: {request.url} ({request.failure})")

    def _response(self, response: Any) -> None:
        if response.status >= 400:
            self.problems.append(f"HTTP {response.status}: {response.url}")

    def take(self) -> list[str]:
        taken, self.problems = self.problems, []
        return taken


@dataclass
class Tab:
    context: BrowserContext
    page: Page
    watch: Watch

    async def shot(self, name: str) -> Path:
        path = artifacts() / (re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") + ".png")
        await self.page.screenshot(path=str(path), full_page=True)
        return path

    async def close(self) -> None:
        await self.context.close()


async def open_tab(browser: Browser) -> Tab:
    viewport: ViewportSize = {"width": PHONE_WIDTH, "height": PHONE_HEIGHT}
    context = await browser.new_context(viewport=viewport, device_scale_factor=1)
    page = await context.new_page()
    page.set_default_timeout(30_000)
    watch = Watch()
    watch.attach(page)
    return Tab(context, page, watch)
