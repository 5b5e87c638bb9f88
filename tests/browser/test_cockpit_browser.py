"""The dashboard as a live cockpit in Debian's chromium (issue 27), at 375 px and 1280 px:
a task page follows its task without a reload and answers its diff with its own
buttons; a chat's page follows the chat; diffs are coloured, single-spaced and fold per
file; the costs page fits a phone (no cut column) with its chart; sessions search shows
the matching words; the login page takes the token and the logout button ends the
session; the web chat's answered diff keeps its buttons off after a reload. A script
string is in every field a person, a CLI or a model fills: none of them ever runs
(``window.__pwned`` stays unset, and the CSP would report an inline attempt as a console
error, which fails the test). Screenshots go where the other browser tests put theirs."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from channels.web import WebChatChannel
from orchestrator.app import App
from orchestrator.store.usage import UsageRow
from tests.browser.conftest import (
    PHONE_WIDTH,
    Tab,
    base_url,
    login_url,
    open_tab,
    settings_for,
    start_site,
)
from tests.channels.web.support import ChatClient
from tests.conftest import git

if TYPE_CHECKING:
    from playwright.async_api import Browser

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.real]
EVIL = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'
TYPO = "fix the typo in README.md of demo"
WIDTHS = (PHONE_WIDTH, 1280)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[App]:
    app = await start_site(
        settings_for(tmp_path_factory.mktemp("cockpit"), FETCH__BUDGETS__DAILY_USD="0.5")
    )
    try:
        await _history(app)
        yield app
    finally:
        await app.__aexit__(None, None, None)


def chat_key(app: App) -> str:
    return f"web:{_web(app).chat}"


def _web(app: App) -> WebChatChannel:
    return next(c for c in app.channels if isinstance(c, WebChatChannel))


def now(app: App) -> int:
    """Where a new stream starts: after everything the chat has said so far."""
    return _web(app).outbox.last_id


async def _history(app: App) -> None:
    """A committed task with a script string in its prompt, a long-named model's
    calls (one day over the budget), a message with a script string in it."""
    assert app.http is not None and app.web_auth is not None and app.services is not None
    chat = ChatClient(app.http.url, app.web_auth)
    await chat.login()
    try:
        async with chat.stream() as stream:
            await chat.send(f"{TYPO} {EVIL}")
            diff = await stream.until(lambda e: bool(e.data.get("nonce")), timeout=90)
            await chat.answer(diff, "yes")
            await stream.until(lambda e: "Committed" in e.text)
            await chat.send(f"/remember the release train leaves on fridays {EVIL}")
            await stream.until(lambda e: e.kind == "message")
    finally:
        await chat.close()
    for model, tokens_in, tokens_out, cost in (
        (f"an-extremely-long-model-name-2025-10-01-preview{EVIL}", 1_234_567, 89_012, 0.75),
        ("small", 950, 12_300, 0.0123),
    ):
        app.services.store.usage.record(
            UsageRow(
                "relay",
                model=model,
                task=1,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                cost=cost,
                latency_ms=1234.0,
                session=chat_key(app),
            )
        )
    await app.services.store.usage.flush()


async def _logged_in(browser: Browser, app: App, width: int = PHONE_WIDTH) -> Tab:
    tab = await open_tab(browser)
    await tab.page.set_viewport_size({"width": width, "height": 900})
    await tab.page.goto(login_url(app))
    return tab


async def _clean(tab: Tab, what: str, width: int = PHONE_WIDTH) -> None:
    """No console error, no failed request, no script of a field ran, nothing wider
    than the screen and no table wider than its box (a cut column)."""
    # Leaving a live page (a link, a button's POST) cuts its stream and any refresh in
    # flight: the browser calls that "aborted", which is no fault of the page.
    problems = [p for p in tab.watch.take() if "net::ERR_ABORTED" not in p]
    assert problems == [], what
    assert await tab.page.evaluate("window.__pwned === undefined"), f"{what}: a script ran"
    wide = await tab.page.evaluate("document.documentElement.scrollWidth")
    assert wide <= width, f"{what} is {wide}px wide on a {width}px screen"
    cut = await tab.page.evaluate(
        "[...document.querySelectorAll('table')]"
        ".filter(t => t.scrollWidth > t.parentElement.clientWidth + 1).length"
    )
    assert cut == 0, f"{what}: {cut} table(s) cut at {width}px"


@pytest.mark.parametrize("width", WIDTHS)
async def test_the_cockpit_pages_load_clean(browser: Browser, site: App, width: int) -> None:
    tab = await _logged_in(browser, site, width)
    try:
        pages = [
            "/tasks/1",
            f"/sessions/{chat_key(site)}",
            "/costs",
            "/sessions?q=release%20train",
            "/tasks?q=typo",
            "/memory?q=release",
        ]
        for path in pages:
            response = await tab.page.goto(base_url(site) + path)
            assert response is not None and response.status == 200, path
            await tab.page.wait_for_load_state("networkidle")
            name = path.strip("/").split("?")[0].replace("/", "-").replace(":", "-")
            await tab.shot(f"cockpit-{width}-{name}")
            await _clean(tab, path, width)
    finally:
        await tab.close()


async def test_a_diff_is_coloured_single_spaced_and_folds(browser: Browser, site: App) -> None:
    tab = await _logged_in(browser, site)
    try:
        await tab.page.goto(base_url(site) + "/tasks/1")
        added = tab.page.locator("#diff pre.diff span.add").first
        removed = tab.page.locator("#diff pre.diff span.del").first
        await added.wait_for()
        colours = await tab.page.evaluate(
            "[...document.querySelectorAll('#diff span.add, #diff span.del')]"
            ".map(s => getComputedStyle(s).backgroundColor)"
        )
        assert all(c not in ("rgba(0, 0, 0, 0)", "transparent") for c in colours), colours
        assert await added.evaluate("s => getComputedStyle(s).color") != await removed.evaluate(
            "s => getComputedStyle(s).color"
        )
        # Single-spaced: the lines stack with no empty line between them.
        tops = await tab.page.evaluate(
            "[...document.querySelectorAll('#diff details pre.diff span')]"
            ".map(s => s.getBoundingClientRect()).map(r => [r.top, r.height])"
        )
        gaps = [round(b[0] - (a[0] + a[1])) for a, b in itertools.pairwise(tops)]
        assert gaps and all(g == 0 for g in gaps), gaps
        # A file folds and unfolds.
        summary = tab.page.locator("#diff details.file summary").first
        await summary.click()
        assert not await tab.page.locator("#diff details.file").first.evaluate("d => d.open")
        assert not await added.is_visible()
        await summary.click()
        assert await added.is_visible()
        await tab.shot("cockpit-diff")
        await _clean(tab, "the diff")
    finally:
        await tab.close()


async def test_a_task_page_follows_its_task_and_answers_its_diff(
    browser: Browser, site: App
) -> None:
    assert site.http is not None and site.web_auth is not None
    repo = site.services.workspace.path("demo") if site.services else None
    assert repo is not None
    (repo / "notes.md").write_text("helo wrold\n")
    git(repo, "add", "notes.md")
    git(repo, "commit", "-qm", "notes")
    head = git(repo, "rev-parse", "HEAD")
    tab = await _logged_in(browser, site)
    chat = ChatClient(site.http.url, site.web_auth)
    await chat.login()
    try:
        async with chat.stream(after=now(site)) as stream:
            await chat.send("fix the typo in notes.md of demo")
            await stream.until(lambda e: bool(e.data.get("nonce")), timeout=90)
            await tab.page.goto(base_url(site) + "/tasks/2")
            await tab.page.locator("#live-state.on").wait_for()
            approve = tab.page.locator("#task-approve")
            await approve.wait_for()
            await tab.shot("cockpit-task-waiting")
            await approve.click()  # a POST with the page's CSRF token and the nonce
            await tab.page.locator("p.note").wait_for()
            await stream.until(lambda e: "Committed" in e.text, timeout=60)
            # The commit arrives on the page by itself: no reload.
            before = await tab.page.evaluate("Number(document.body.dataset.refreshed || 0)")
            await tab.page.locator("#task-commit").wait_for(timeout=20_000)
            after = await tab.page.evaluate("Number(document.body.dataset.refreshed || 0)")
            assert after >= before
            assert await tab.page.locator("#task-approve").count() == 0
        assert git(repo, "rev-parse", "HEAD^") == head
        await tab.shot("cockpit-task-committed")
        await _clean(tab, "the task page")
        # Reject, with the page's question accepted: nothing lands.
        (repo / "more.md").write_text("teh end\n")
        git(repo, "add", "more.md")
        git(repo, "commit", "-qm", "more")
        head = git(repo, "rev-parse", "HEAD")
        async with chat.stream(after=now(site)) as stream:
            await chat.send("fix the typo in more.md of demo")
            await stream.until(lambda e: bool(e.data.get("nonce")), timeout=90)
            await tab.page.goto(base_url(site) + "/tasks/3")
            tab.page.once("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
            await tab.page.locator("#task-reject").click()
            await stream.until(lambda e: "Discarded" in e.text, timeout=60)
            await tab.page.locator("#task-status.status-rejected").wait_for(timeout=20_000)
        assert git(repo, "rev-parse", "HEAD") == head
        await _clean(tab, "the rejected task's page")
    finally:
        await chat.close()
        await tab.close()


async def test_a_chat_page_follows_the_chat(browser: Browser, site: App) -> None:
    assert site.http is not None and site.web_auth is not None
    tab = await _logged_in(browser, site)
    chat = ChatClient(site.http.url, site.web_auth)
    await chat.login()
    try:
        await tab.page.goto(f"{base_url(site)}/sessions/{chat_key(site)}")
        await tab.page.locator("#live-state.on").wait_for()
        async with chat.stream(after=now(site)) as stream:
            await chat.send(f"/status {EVIL} live-marker-42")
            await stream.until(lambda e: e.kind == "message")
        await tab.page.get_by_text("live-marker-42").first.wait_for(timeout=20_000)
        await tab.shot("cockpit-session-live")
        await _clean(tab, "the chat page")
    finally:
        await chat.close()
        await tab.close()


async def test_search_shows_the_matching_words(browser: Browser, site: App) -> None:
    tab = await _logged_in(browser, site)
    try:
        await tab.page.goto(base_url(site) + "/sessions?q=TRAIN%20leaves")
        mark = tab.page.locator(".snippet mark").first
        await mark.wait_for()
        assert (await mark.inner_text()).lower() == "train leaves"
        await _clean(tab, "the search")
    finally:
        await tab.close()


async def test_costs_fit_a_phone_with_the_chart(browser: Browser, site: App) -> None:
    tab = await _logged_in(browser, site)
    try:
        await tab.page.goto(base_url(site) + "/costs")
        chart = tab.page.locator("#cost-chart svg")
        await chart.wait_for()
        box = await chart.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 60, box
        assert await tab.page.locator("#cost-chart line.budget-line").count() == 1
        assert await tab.page.locator("#cost-chart rect.day.over").count() >= 1
        body = await tab.page.inner_text("main")
        assert "1.2M→89k" in body and "1234567" not in body
        await _clean(tab, "costs")
    finally:
        await tab.close()


async def test_login_with_the_token_field_then_log_out(browser: Browser, site: App) -> None:
    assert site.services is not None
    token = (site.services.settings.home_dir / "web-token").read_text().strip()
    tab = await open_tab(browser)
    try:
        response = await tab.page.goto(base_url(site) + "/costs")
        assert response is not None and response.status == 401
        await tab.shot("cockpit-login")
        await tab.page.fill("#token", token)
        await tab.page.click("#login button[type=submit]")
        await tab.page.wait_for_url(base_url(site) + "/costs")
        assert "Costs" in await tab.page.title()
        problems = tab.watch.take()
        assert all("401" in p for p in problems), problems  # only the first visit
        await tab.page.click("#logout")
        await tab.page.wait_for_url(base_url(site) + "/logged-out")
        response = await tab.page.goto(base_url(site) + "/costs")
        assert response is not None and response.status == 401
        assert await tab.page.locator("#token").count() == 1
    finally:
        await tab.close()


async def test_the_chats_answered_diff_stays_answered_after_a_reload(
    browser: Browser, site: App
) -> None:
    assert site.services is not None
    repo = site.services.workspace.path("demo")
    (repo / "last.md").write_text("wich one\n")
    git(repo, "add", "last.md")
    git(repo, "commit", "-qm", "last")
    tab = await _logged_in(browser, site)
    try:
        await tab.page.goto(base_url(site) + "/chat")
        await tab.page.locator("#status.live").wait_for()
        diffs = await tab.page.locator("article.diff").count()
        await tab.page.fill("#text", "fix the typo in last.md of demo")
        await tab.page.press("#text", "Enter")
        await tab.page.wait_for_function(
            "n => document.querySelectorAll('article.diff').length > n", arg=diffs, timeout=90_000
        )
        card = tab.page.locator("article.diff").last
        await card.locator("button.yes").click()
        await tab.page.get_by_text("Committed").last.wait_for(timeout=60_000)
        await tab.page.reload()
        card = tab.page.locator("article.diff").last
        await card.locator(".said").wait_for()
        assert await card.locator("button.yes").is_disabled()
        assert await card.locator("button.no").is_disabled()
        assert "answered: yes" in await card.inner_text()
        await tab.shot("cockpit-chat-answered")
        await _clean(tab, "the chat")
    finally:
        await tab.close()
