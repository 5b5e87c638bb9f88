"""The web pages' port is taken by another program: with the default port and no channel
that receives through the listener, Fetch still starts (the terminal answers) and says
why the pages are off; when a webhook needs the listener, or the owner chose the port,
start-up refuses with the address in the message."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import pytest

from channels.http import HttpServer
from channels.http.auth import WebAuth
from channels.http_settings import HttpSettings
from channels.terminal import TerminalChannel
from channels.web import WebChatChannel
from core.errors import ConfigError
from orchestrator.app import App, build_channels
from orchestrator.config import Settings
from tests.conftest import Driver
from tests.dashboard.conftest import start_web


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port this test holds for its whole run (the kernel picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield int(sock.getsockname()[1])


def _default_looking(settings: Settings, port: int) -> Settings:
    # As if the owner had set nothing under http: (the default port happens to be taken).
    http = HttpSettings.model_construct(_fields_set=set(), host="127.0.0.1", port=port)
    return settings.model_copy(update={"http": http})


async def test_default_port_taken_fetch_starts_without_the_pages(
    make_settings: Callable[..., Settings], taken_port: int
) -> None:
    settings = _default_looking(make_settings(), taken_port)
    terminal = TerminalChannel(settings.terminal.chat)
    http = HttpServer(settings.http)
    auth = WebAuth.from_home(settings.home_dir)
    auth.install(http)
    web = WebChatChannel(settings.webchat, http, auth)
    app = App(settings, [terminal, web], http, web_auth=auth)
    await app.__aenter__()
    try:
        assert app.web_off is not None and f"127.0.0.1:{taken_port}" in app.web_off
        assert "http.port" in app.web_off
        driver = Driver(app, terminal)
        await driver.push("/help")
        assert "Fetch" in await driver.pop()
        await driver.push("/status")
        assert "web chat: off (the web listener could not start)" in await driver.pop()
    finally:
        await app.__aexit__(None, None, None)


async def test_port_taken_with_a_webhook_refuses_to_start(
    make_settings: Callable[..., Settings], taken_port: int
) -> None:
    settings = _default_looking(
        make_settings(FETCH__WEBHOOK__ENABLED="true", FETCH__WEBHOOK__SECRET="s" * 32),
        taken_port,
    )
    http = HttpServer(settings.http)
    auth = WebAuth.from_home(settings.home_dir)
    auth.install(http)
    app = App(settings, build_channels(settings, http, auth), http, web_auth=auth)
    with pytest.raises(ConfigError, match=f"127.0.0.1:{taken_port}"):
        await app.__aenter__()


async def test_chosen_port_taken_refuses_to_start(
    make_settings: Callable[..., Settings], taken_port: int
) -> None:
    with pytest.raises(ConfigError, match=f"127.0.0.1:{taken_port}"):
        await start_web(make_settings(FETCH__HTTP__PORT=str(taken_port)))
