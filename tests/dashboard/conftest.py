"""The dashboard through real parts: the whole app (SQLite in tmp, the journal, the
scheduler, memory) with its HTTP listener on 127.0.0.1 (an ephemeral port), driven by a
real HTTP client that logs in with the printed link."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

import channels.whatsapp._neonize  # noqa: F401  (neonize's import-time side effects undone first)
from channels.http import HttpServer
from channels.http.auth import WebAuth
from channels.terminal import TerminalChannel
from orchestrator.app import App
from orchestrator.config import Settings
from orchestrator.services import Services
from tests.conftest import Driver


@dataclass
class Web:
    app: App
    driver: Driver
    auth: WebAuth
    client: aiohttp.ClientSession  # logged in
    anon: aiohttp.ClientSession  # no cookie

    @property
    def services(self) -> Services:
        assert self.app.services is not None
        return self.app.services

    @property
    def base(self) -> str:
        assert self.app.http is not None
        return self.app.http.url

    async def get(self, path: str, **kw: Any) -> tuple[int, str]:
        async with self.client.get(self.base + path, allow_redirects=False, **kw) as r:
            return r.status, await r.text()

    async def post(self, path: str, data: dict[str, str]) -> tuple[int, str, str]:
        async with self.client.post(self.base + path, data=data, allow_redirects=False) as r:
            return r.status, r.headers.get("Location", ""), await r.text()

    def csrf(self) -> str:
        return self.auth.csrf_token()


async def start_web(settings: Settings, *, channels: list[Any] | None = None) -> Web:
    terminal = TerminalChannel(settings.terminal.chat)
    http = HttpServer(settings.http)
    auth = WebAuth.from_home(settings.home_dir)
    auth.install(http)
    app = App(settings, [terminal, *(channels or [])], http, web_auth=auth)
    await app.__aenter__()
    jar = aiohttp.CookieJar(unsafe=True)  # cookies for 127.0.0.1 (an IP, not a name)
    client = aiohttp.ClientSession(cookie_jar=jar)
    assert app.http is not None
    async with client.get(auth.login_url(app.http.url), allow_redirects=False) as r:
        assert r.status == 303, await r.text()
    anon = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
    return Web(app, Driver(app, terminal), auth, client, anon)


async def stop_web(web: Web) -> None:
    await web.client.close()
    await web.anon.close()
    await web.app.__aexit__(None, None, None)


@pytest.fixture
def web_settings(make_settings: Callable[..., Settings]) -> Callable[..., Settings]:
    def make(**env: str) -> Settings:
        return make_settings(FETCH__HTTP__PORT="0", **env)

    return make


@pytest.fixture
async def web(web_settings: Callable[..., Settings]) -> AsyncIterator[Web]:
    started = await start_web(web_settings())
    try:
        yield started
    finally:
        await stop_web(started)
