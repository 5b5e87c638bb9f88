"""The web chat in a real browser at phone size: log in with the link, type the demo
task, read the streamed reply and the diff, press Approve (a real commit lands) and, on
another diff, Reject (the tree is restored, nothing committed)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from orchestrator.app import App
from tests.browser.conftest import (
    PHONE_WIDTH,
    base_url,
    login_url,
    open_tab,
    settings_for,
    start_site,
)
from tests.conftest import git, tree_snapshot

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.real]
TYPO = "fix the typo in README.md of demo"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[App]:
    app = await start_site(settings_for(tmp_path_factory.mktemp("webchat")))
    try:
        yield app
    finally:
        await app.__aexit__(None, None, None)


def demo(app: App) -> Path:
    assert app.services is not None
    return app.services.workspace.path("demo")


async def ask(page: Page, text: str) -> None:
    await page.fill("#text", text)
    await page.press("#text", "Enter")  # Enter sends, as on the phone


async def newest_diff(page: Page, count: int) -> None:
    """Wait for the ``count``-th diff card, with its buttons, to be on the page."""
    await page.wait_for_function(
        "n => document.querySelectorAll('article.diff .buttons button.yes').length >= n",
        arg=count,
        timeout=90_000,
    )


async def test_the_chat_round_trip_approve_commits_and_reject_restores(
    browser: Browser, site: App
) -> None:
    repo = demo(site)
    original = git(repo, "rev-parse", "HEAD")
    tab = await open_tab(browser)
    page = tab.page
    try:
        await page.goto(login_url(site).replace("/login?", "/login?next=/chat&"))
        assert page.url == base_url(site) + "/chat"
        await page.wait_for_selector("#status.live")  # the event stream is open
        await ask(page, TYPO)
        # The owner's words come back through the stream, then Fetch's streamed reply.
        await page.wait_for_selector(f"article.owner:has-text('{TYPO}')")
        await page.wait_for_selector("article.fetch:has-text('On it')")
        await newest_diff(page, 1)
        card = page.locator("article.diff").last
        code = card.locator("pre.code")
        assert "-Teh quick brown fox." in await code.inner_text()
        assert "+The quick brown fox." in await code.inner_text()
        font = await code.evaluate("e => getComputedStyle(e).fontFamily")
        assert "mono" in font.lower() or "menlo" in font.lower(), font
        await tab.shot("webchat-diff")
        await card.locator("button.yes").click()
        await page.wait_for_selector("article.fetch:has-text('Committed')", timeout=60_000)
        await tab.shot("webchat-committed")
        head = git(repo, "rev-parse", "HEAD")
        assert head != original and git(repo, "rev-parse", "HEAD^") == original
        assert head[:7] in await page.locator("article.fetch").last.inner_text()
        assert "The quick brown fox" in (repo / "README.md").read_text()

        # Another diff (the typo is back), rejected this time.
        (repo / "README.md").write_text("# demo\n\nTeh quick brown fox.\n")
        git(repo, "commit", "-qam", "typo again")
        before, head = tree_snapshot(repo), git(repo, "rev-parse", "HEAD")
        await ask(page, TYPO)
        await newest_diff(page, 2)
        # The first diff's buttons are stale now: disabled on the page (and refused by
        # the server, see tests/channels/web/test_webchat.py).
        assert await page.locator("article.diff").first.locator("button.yes").is_disabled()
        await page.locator("article.diff").last.locator("button.no").click()
        await page.wait_for_selector("article.fetch:has-text('Discarded')", timeout=60_000)
        await tab.shot("webchat-rejected")
        assert tree_snapshot(repo) == before and git(repo, "rev-parse", "HEAD") == head
        # Fits a phone: nothing wider than the screen but the code blocks' own scroll.
        width = await page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE_WIDTH, width
        assert tab.watch.take() == []
    finally:
        await tab.close()


async def test_a_reload_keeps_the_conversation_and_no_cookie_gets_the_hint(
    browser: Browser, site: App
) -> None:
    tab = await open_tab(browser)
    try:
        response = await tab.page.goto(base_url(site) + "/chat")
        assert response is not None and response.status == 401
        assert "open the login link Fetch printed at start" in await tab.page.inner_text("body")
        assert "Teh quick" not in await tab.page.content()  # no data without the login
        await tab.shot("webchat-no-cookie")
        tab.watch.take()  # the 401 itself is the point here
        await tab.page.goto(login_url(site).replace("/login?", "/login?next=/chat&"))
        # The history is rendered by the server: what was said before is all there.
        assert await tab.page.locator("article.owner").count() >= 2
        assert await tab.page.locator("article.fetch:has-text('Committed')").count() == 1
        await tab.page.wait_for_selector("#status.live")
        await ask(tab.page, "/status")
        await tab.page.wait_for_selector("article.fetch:has-text('Fetch ·')")
        assert tab.watch.take() == []
    finally:
        await tab.close()
