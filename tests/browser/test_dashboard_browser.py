"""The dashboard in a real browser at phone size: every page of ``PAGES`` loads after the
login link with no console error, no failed request and nothing wider than the screen;
the pairing QR renders on the health page while WhatsApp asks to be linked; without the
cookie a page shows the login hint and no data."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio
from neonize.proto.Neonize_pb2 import ConnectFailureReason

from channels.whatsapp import WhatsAppChannel
from channels.whatsapp import _neonize as nz
from orchestrator.app import App
from orchestrator.dashboard import PAGES
from tests.browser.conftest import (
    PHONE_WIDTH,
    base_url,
    login_url,
    open_tab,
    settings_for,
    start_site,
)
from tests.channels.web.support import ChatClient
from tests.channels.whatsapp.fake_client import FakeWhatsAppClient
from tests.channels.whatsapp.harness import settings as wa_settings
from tests.conftest import git

if TYPE_CHECKING:
    from playwright.async_api import Browser

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.real]
PAIRING_CODE = "2@Qm9ndXMgcGFpcmluZyBjb2Rl,abc/def+ghi==,xyz,1"


class Site:
    def __init__(self, app: App, whatsapp: WhatsAppChannel, client: FakeWhatsAppClient) -> None:
        self.app, self.whatsapp, self.client = app, whatsapp, client


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    tmp = tmp_path_factory.mktemp("dashboard")
    client = FakeWhatsAppClient()
    whatsapp = WhatsAppChannel(wa_settings(), tmp / "wa", client=client)
    app = await start_site(settings_for(tmp), [whatsapp])
    try:
        await _some_history(app)
        yield Site(app, whatsapp, client)
    finally:
        await app.__aexit__(None, None, None)


async def _some_history(app: App) -> None:
    """Something on every page: a committed task with its diff, a fact, a job."""
    assert app.http is not None and app.web_auth is not None
    chat = ChatClient(app.http.url, app.web_auth)
    await chat.login()
    try:
        async with chat.stream() as stream:
            await chat.send("fix the typo in README.md of demo")
            diff = await stream.until(lambda e: bool(e.data.get("nonce")), timeout=90)
            await chat.answer(diff, "yes")
            await stream.until(lambda e: "Committed" in e.text)
            await chat.send("/remember the release train leaves on fridays")
            await stream.until(lambda e: e.kind == "message")
            await chat.send("/remind in 2h stretch <b>your</b> legs")
            await stream.until(lambda e: e.kind == "message")
    finally:
        await chat.close()
    assert app.services is not None
    assert "fix the typo" in git(app.services.workspace.path("demo"), "log", "-1", "--format=%s")


async def test_every_page_loads_clean_on_a_phone(browser: Browser, site: Site) -> None:
    assert PAGES, "the dashboard lists no pages"
    tab = await open_tab(browser)
    try:
        await tab.page.goto(login_url(site.app))
        assert tab.page.url == base_url(site.app) + "/"
        for path, title in [*PAGES, ("/chat", "Chat")]:
            response = await tab.page.goto(base_url(site.app) + path)
            assert response is not None and response.status == 200, path
            await tab.page.wait_for_load_state("networkidle")
            assert title.lower() in (await tab.page.title()).lower(), path
            await tab.shot("dashboard-" + (path.strip("/").replace("/", "-") or "home"))
            assert tab.watch.take() == [], path
            width = await tab.page.evaluate("document.documentElement.scrollWidth")
            assert width <= PHONE_WIDTH, f"{path} is {width}px wide on a {PHONE_WIDTH}px screen"
    finally:
        await tab.close()


async def test_the_pairing_qr_renders_on_the_health_page(browser: Browser, site: Site) -> None:
    # WhatsApp drops the link and asks to pair again, as the real client reports it.
    site.client.emit(nz.LoggedOutEv(OnConnect=False, Reason=ConnectFailureReason.LOGGED_OUT))
    site.client.emit(nz.DisconnectedEv(status=True))
    site.client.emit(nz.QREv(Codes=[PAIRING_CODE]))
    for _ in range(500):  # events reach the adapter through its own queue
        if site.whatsapp.pairing_code() is not None:
            break
        await asyncio.sleep(0.02)
    assert site.whatsapp.pairing_code() == PAIRING_CODE
    tab = await open_tab(browser)
    try:
        await tab.page.goto(login_url(site.app).replace("/login?", "/login?next=/health&"))
        qr = tab.page.locator("#pairing-qr")
        await qr.wait_for(state="visible")
        # Really drawn: the image decoded (an SVG Fetch made), and it has a size.
        loaded = await qr.evaluate("img => img.complete && img.naturalWidth > 0")
        assert loaded, "the QR image did not load"
        box = await qr.bounding_box()
        assert box is not None and box["width"] >= 100 and box["height"] >= 100, box
        await tab.shot("dashboard-health-pairing-qr")
        assert tab.watch.take() == []
    finally:
        await tab.close()


async def test_without_the_cookie_every_page_shows_the_login_hint(
    browser: Browser, site: Site
) -> None:
    tab = await open_tab(browser)
    try:
        for path, _title in [*PAGES, ("/chat", "Chat")]:
            response = await tab.page.goto(base_url(site.app) + path)
            assert response is not None and response.status == 401, path
            body = await tab.page.inner_text("body")
            assert "open the login link Fetch printed at start" in body, path
            assert "release train" not in body and "stretch" not in body, path
        await tab.shot("dashboard-no-cookie")
        # Only the expected 401s went wrong; nothing else (no script error, no asset).
        problems = tab.watch.take()
        assert all("401" in p for p in problems), problems
    finally:
        await tab.close()
