"""The web chat through the real app: SQLite in tmp, real git, the real bwrap kennel
running the demo harness, the HTTP listener on 127.0.0.1 (an ephemeral port), and a real
HTTP client that logs in with the login link, posts like the page and reads the SSE."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from channels.http.auth import CSRF_HEADER
from channels.web import WebChatChannel
from core.state import State
from orchestrator.app import App, build_app
from orchestrator.config import Settings
from tests.channels.web.support import ChatClient, Sse, Stream
from tests.conftest import git, tree_snapshot

TYPO = "fix the typo in README.md of demo"


@dataclass
class Web:
    app: App
    chat: ChatClient

    @property
    def base(self) -> str:
        assert self.app.http is not None
        return self.app.http.url

    @property
    def repo(self) -> Path:
        assert self.app.services is not None
        return self.app.services.workspace.path("demo")

    @property
    def channel(self) -> WebChatChannel:
        found = [c for c in self.app.channels if isinstance(c, WebChatChannel)]
        assert found, "the web chat channel is not built"
        return found[0]

    def state(self) -> State:
        assert self.app.services is not None
        return self.app.services.sessions.live()[0].state


async def start(settings: Settings) -> Web:
    app = build_app(settings)  # what `fetch serve` builds: the channels from the settings
    await app.__aenter__()
    assert app.http is not None and app.web_auth is not None
    chat = ChatClient(app.http.url, app.web_auth)
    await chat.login()
    return Web(app, chat)


async def stop(web: Web) -> None:
    await web.chat.close()
    await web.app.__aexit__(None, None, None)


@pytest.fixture
def web_settings(make_settings: Callable[..., Settings]) -> Callable[..., Settings]:
    def make(**env: str) -> Settings:
        return make_settings(FETCH__HTTP__PORT="0", **env)

    return make


@pytest.fixture
async def web(web_settings: Callable[..., Settings]) -> AsyncIterator[Web]:
    started = await start(web_settings())
    try:
        yield started
    finally:
        await stop(started)


def is_diff(event: Sse) -> bool:
    return bool(event.data.get("nonce"))


async def test_a_task_streams_back_and_approve_commits(web: Web) -> None:
    original = git(web.repo, "rev-parse", "HEAD")
    async with web.chat.stream() as stream:
        status, body = await web.chat.send(TYPO)
        assert status == 202 and body["accepted"] is True
        mine = await stream.next()
        assert mine is not None and mine.kind == "owner" and mine.text == TYPO
        first = await stream.until(lambda e: e.kind == "message")
        assert "On it" in first.text
        diff = await stream.until(is_diff)
        assert "-Teh quick" in diff.text and "+The quick" in diff.text and "Apply?" in diff.text
        assert web.state() is State.GUARDING
        status, _ = await web.chat.answer(diff, "yes")
        assert status == 202
        # The task's checklist ticks past "your review" and "commit" once it is answered.
        ticked = await stream.until(lambda e: e.kind == "edit" and "✅ commit" in e.text)
        assert "✅ your review" in ticked.text
        assert ticked.data["message_id"] == first.data["message_id"]
        done = await stream.until(lambda e: "Committed" in e.text)
    head = git(web.repo, "rev-parse", "HEAD")
    assert head != original and head[:7] in done.text
    assert "Approved-by: owner" in git(web.repo, "log", "-1", "--format=%B")
    assert git(web.repo, "status", "--porcelain") == ""
    # Ids only grow, and every event of the round trip came once.
    ids = [e.id for e in stream.seen]
    assert ids == sorted(set(ids))


async def test_reject_restores_the_tree_and_commits_nothing(web: Web) -> None:
    head = git(web.repo, "rev-parse", "HEAD")
    before = tree_snapshot(web.repo)
    async with web.chat.stream() as stream:
        await web.chat.send(TYPO)
        diff = await stream.until(is_diff)
        assert tree_snapshot(web.repo) == before  # the kennel worked on its own layer
        assert (await web.chat.answer(diff, "no"))[0] == 202
        ticked = await stream.until(lambda e: e.kind == "edit" and "❌ your review" in e.text)
        assert "⬚ commit" in ticked.text
        await stream.until(lambda e: "Discarded" in e.text)
    assert tree_snapshot(web.repo) == before
    assert git(web.repo, "rev-parse", "HEAD") == head
    assert web.state() is State.ALERT


async def test_a_stale_button_cannot_answer_a_newer_diff(web: Web) -> None:
    head = git(web.repo, "rev-parse", "HEAD")
    async with web.chat.stream() as stream:
        await web.chat.send(TYPO)
        old = await stream.until(is_diff)
        await web.chat.answer(old, "no")
        await stream.until(lambda e: "Discarded" in e.text)
        await web.chat.send(TYPO)
        new = await stream.until(is_diff)
        assert new.data["nonce"] != old.data["nonce"]
        # The old diff's Approve, exactly as its card would send it: refused outright.
        status, body = await web.chat.answer(old, "yes")
        assert status == 409 and "no longer" in body["error"]
        # Its nonce on the new message, or the new nonce on the old message: neither
        # answers anything (the channel refuses the first; the gateway drops the second
        # as a press on a message that is not the waiting diff).
        assert (await web.chat.answer(new, "yes", nonce=old.data["nonce"]))[0] == 409
        assert (await web.chat.answer(old, "yes", nonce=new.data["nonce"]))[0] == 202
        assert await _quiet(stream, 1.0) == []
        assert web.state() is State.GUARDING and git(web.repo, "rev-parse", "HEAD") == head
        # The new diff's own button still works.
        assert (await web.chat.answer(new, "yes"))[0] == 202
        await stream.until(lambda e: "Committed" in e.text)
    assert git(web.repo, "rev-parse", "HEAD") != head


async def test_a_button_when_no_diff_waits_starts_nothing(web: Web) -> None:
    async with web.chat.stream() as stream:
        await web.chat.send(TYPO)
        diff = await stream.until(is_diff)
        await web.chat.send("no")  # typed: the diff is answered
        await stream.until(lambda e: "Discarded" in e.text)
        head = git(web.repo, "rev-parse", "HEAD")
        # Still the newest diff the page has seen, but it was answered (typed): its
        # buttons are off, and a late press is refused, never read as a "yes" to
        # whatever comes next. Fetch says and does nothing.
        status, body = await web.chat.answer(diff, "yes")
        assert status == 409 and "answered already" in body["error"]
        assert await _quiet(stream, 1.0) == []
    assert git(web.repo, "rev-parse", "HEAD") == head and web.state() is State.ALERT


async def test_a_reconnect_with_last_event_id_loses_nothing(web: Web) -> None:
    async with web.chat.stream() as stream:
        await web.chat.send("/status")
        await stream.until(lambda e: e.kind == "message")
    seen = stream.seen[-1].id
    # The page is away: two more round trips happen meanwhile.
    await web.chat.send("/help")
    await web.chat.send("/status")
    for _ in range(100):
        if len(web.channel.outbox.since(web.channel.chat, seen).events) >= 4:
            break
        await asyncio.sleep(0.05)
    async with web.chat.stream(last_event_id=seen) as again:
        got = [await again.next(5) for _ in range(4)]
    ids = [e.id for e in got if e is not None]
    assert ids == list(range(seen + 1, seen + 5))  # exactly what came after, in order
    assert [e.kind for e in got if e is not None] == ["owner", "message", "owner", "message"]
    # ?after= (what the page rendered itself) resumes the same way; the header wins.
    async with web.chat.stream(after=seen + 2, last_event_id=seen) as both:
        first = await both.next(5)
    assert first is not None and first.id == seen + 1


async def test_a_quiet_stream_gets_heartbeats_and_ends_when_fetch_stops(
    web_settings: Callable[..., Settings],
) -> None:
    web = await start(web_settings(FETCH__WEBCHAT__HEARTBEAT_SECONDS="0.2"))
    stopped = False
    try:
        async with web.chat.stream() as stream:
            with contextlib.suppress(TimeoutError):
                await stream.next(1.0)  # nothing to say: only heartbeats come
            assert stream.comments, "no heartbeat within a second"
            assert len(web.channel._streams) == 1
            loop = asyncio.get_running_loop()
            began = loop.time()
            closing = asyncio.create_task(web.app.__aexit__(None, None, None))
            assert await stream.next(10) is None  # the server ended it
            await asyncio.wait_for(closing, 10)
            stopped = True
            assert loop.time() - began < 5  # not held for a shutdown timeout
            assert not web.channel._streams
    finally:
        await web.chat.close()
        if not stopped:
            await web.app.__aexit__(None, None, None)


async def test_the_page_works_without_script_and_escapes_everything(web: Web) -> None:
    hostile = "<script>alert(1)</script> & <img src=x onerror=alert(2)>"
    async with web.chat.session.post(
        web.base + "/chat/send",
        data={"text": hostile, "csrf": web.chat.auth.csrf_token()},
        allow_redirects=False,
    ) as r:
        assert r.status == 303 and r.headers["Location"] == "/chat"
    async with web.chat.session.get(web.base + "/chat") as r:
        assert r.status == 200
        page = await r.text()
        csp = r.headers["Content-Security-Policy"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert 'name="viewport"' in page  # phone-sized
    async with web.chat.session.get(web.base + "/chat/static/chat.js") as r:
        assert r.status == 200 and r.content_type == "text/javascript"
    async with web.chat.session.get(web.base + "/chat/static/..%2Fchannel.py") as r:
        assert r.status == 404


async def test_bad_input_gets_a_clear_refusal(web: Web) -> None:
    csrf = {CSRF_HEADER: web.chat.auth.csrf_token()}
    url = web.base + "/chat/send"
    cases: list[tuple[object, str]] = [
        ({"text": "  "}, "empty"),
        ({"text": 5}, "must be a string"),
        ({"text": "x" * 20_000}, "over"),
        ({"text": "yes", "nonce": "abc"}, "nonce and message id"),
        ({"text": "maybe", "nonce": "ab", "reply_to": "web-1"}, "yes or no"),
        ({"text": "hi", "reply_to": "web-1"}, "only for a diff"),
        ({"text": "hi", "id": "no spaces allowed"}, "'id'"),
        (["not", "an", "object"], "JSON object"),
    ]
    for body, needle in cases:
        async with web.chat.session.post(url, json=body, headers=csrf) as r:
            assert r.status == 400, body
            assert needle in (await r.json())["error"], body
    async with web.chat.session.post(
        url, data=b"{nope", headers={**csrf, "Content-Type": "application/json"}
    ) as r:
        assert r.status == 400 and "not valid JSON" in (await r.json())["error"]
    # Still serving after all that.
    async with web.chat.stream() as stream:
        await web.chat.send("/status")
        assert "Fetch" in (await stream.until(lambda e: e.kind == "message")).text


async def test_nothing_without_the_login(web: Web) -> None:
    last = web.channel.outbox.last_id
    async with aiohttp.ClientSession() as anon:
        for method, path in (("GET", "/chat"), ("GET", "/chat/events"), ("POST", "/chat/send")):
            async with anon.request(method, web.base + path, json={"text": "hi"}) as r:
                assert r.status == 401, path
                assert "login link" in await r.text()
    assert web.channel.outbox.last_id == last  # the refused post reached nobody


async def _quiet(stream: Stream, seconds: float) -> list[Sse]:
    """Events that arrive within ``seconds`` (to assert that nothing happened)."""
    got: list[Sse] = []
    try:
        while (event := await stream.next(seconds)) is not None:
            got.append(event)
    except TimeoutError:
        pass
    return got


async def test_a_diff_waiting_across_a_restart_is_approved_from_the_page(
    web_settings: Callable[..., Settings],
) -> None:
    settings = web_settings()
    first = await start(settings)
    try:
        async with first.chat.stream() as stream:
            await first.chat.send(TYPO)
            old = await stream.until(is_diff)
        repo, head = first.repo, git(first.repo, "rev-parse", "HEAD")
    finally:
        await stop(first)
    second = await start(settings)  # the same home: the same token, a new port
    try:
        async with second.chat.stream(last_event_id=old.id) as stream:
            # Fetch announces the waiting diff again, with buttons for that approval.
            again = await stream.until(is_diff)
            assert again.id > old.id and again.data["nonce"] == old.data["nonce"]
            assert (await second.chat.answer(again, "yes"))[0] == 202
            await stream.until(lambda e: "Committed" in e.text)
        assert git(repo, "rev-parse", "HEAD^") == head
    finally:
        await stop(second)
