"""Files in the web chat, in a real browser at phone size (issue 23): the page's 📎
picker uploads a screenshot (it comes back as the owner's line), and a file Fetch sends
(/send) shows as a download link on the page."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from orchestrator.app import App
from tests.browser.conftest import base_url, login_url, open_tab, settings_for, start_site

if TYPE_CHECKING:
    from playwright.async_api import Browser, FilePayload

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.real]
PNG = b"\x89PNG\r\n\x1a\n" + b"\x01" * 64


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[App]:
    app = await start_site(settings_for(tmp_path_factory.mktemp("webfiles")))
    try:
        yield app
    finally:
        await app.__aexit__(None, None, None)


async def test_the_picker_uploads_and_a_sent_file_is_a_link(browser: Browser, site: App) -> None:
    tab = await open_tab(browser)
    page = tab.page
    try:
        await page.goto(login_url(site).replace("/login?", "/login?next=/chat&"))
        assert page.url == base_url(site) + "/chat"
        await page.wait_for_selector("#status.live")
        await page.fill("#text", "what is this?")
        shot: FilePayload = {"name": "shot.png", "mimeType": "image/png", "buffer": PNG}
        await page.set_input_files("#file", files=[shot])
        await page.wait_for_selector("article.owner:has-text('📎 shot.png')")
        assert await page.input_value("#text") == ""  # the words went with the file
        media = [p for p in site.settings.home_dir.glob("sessions/web_*/media/*")]
        assert [p.read_bytes() for p in media] == [PNG]
        await page.fill("#text", "/send demo README.md")
        await page.press("#text", "Enter")
        link = page.locator("article.fetch p.file a", has_text="README.md")
        await link.wait_for()
        href = await link.get_attribute("href")
        assert href is not None and href.startswith("/chat/files/")
        assert await link.get_attribute("download") == "README.md"
    finally:
        await tab.close()
