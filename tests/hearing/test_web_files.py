"""The web chat as a whole input device (issue 23, 1-3), over real HTTP: an audio file
uploaded is heard ("🎙 heard: …") and then handled as typed; a type Fetch does not read
is refused in one line, nothing kept; ``/send`` puts a link on the page whose file is
served only to the token's holder, a picture inline, anything else as a download."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import aiohttp
import pytest

from channels.http.auth import CSRF_HEADER
from orchestrator.app import App, build_app
from orchestrator.config import Settings
from tests.channels.web.support import ChatClient
from tests.conftest import git
from tests.fakes.transcription_server import TranscriptionServer

PNG = b"\x89PNG\r\n\x1a\n" + b"\x05" * 300


async def upload(
    chat: ChatClient, data: bytes, name: str, mime: str, text: str = ""
) -> tuple[int, dict[str, object]]:
    form = aiohttp.FormData()
    form.add_field("id", "upload" + name.replace(".", "")[:20].ljust(8, "x"))
    form.add_field("text", text)
    form.add_field("file", data, filename=name, content_type=mime)
    headers = {CSRF_HEADER: chat.auth.csrf_token()}
    async with chat.session.post(chat.base + "/chat/upload", data=form, headers=headers) as r:
        return r.status, await r.json()


@pytest.fixture
async def served(
    make_settings: Callable[..., Settings], workspace: Path
) -> AsyncIterator[tuple[App, ChatClient, TranscriptionServer]]:
    repo = workspace / "demo"
    (repo / "shot.png").write_bytes(PNG)
    (repo / "page.html").write_text("<script>alert(1)</script>\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "files")
    async with TranscriptionServer(default="Status.") as ears:
        settings = make_settings(FETCH__HTTP__PORT="0", FETCH_TRANSCRIPTION_BASE_URL=ears.url)
        app = build_app(settings)
        await app.__aenter__()
        assert app.http is not None and app.web_auth is not None
        chat = ChatClient(app.http.url, app.web_auth)
        await chat.login()
        try:
            yield app, chat, ears
        finally:
            await chat.close()
            await app.__aexit__(None, None, None)


async def test_an_audio_file_is_heard_and_run_as_typed(
    served: tuple[App, ChatClient, TranscriptionServer],
) -> None:
    app, chat, ears = served
    async with chat.stream() as stream:
        status, body = await upload(chat, b"OggS" + b"\x09" * 2000, "note.ogg", "audio/ogg")
        assert status == 202, body
        heard = await stream.until(lambda e: "🎙" in e.text)
        assert heard.text == "🎙 heard: Status."
        await stream.until(lambda e: "Fetch ·" in e.text)
    assert ears.requests[0].filename.endswith(".ogg")
    assert ears.requests[0].data == b"OggS" + b"\x09" * 2000
    media = [p for p in app.settings.home_dir.glob("sessions/*/media/*") if p.is_file()]
    assert media == []  # only the words are kept


async def test_a_type_fetch_does_not_read_is_refused_in_one_line(
    served: tuple[App, ChatClient, TranscriptionServer],
) -> None:
    app, chat, _ = served
    status, body = await upload(chat, b"MZ\x90\x00", "tool.exe", "application/x-msdownload")
    assert status == 400
    assert body == {
        "error": "application/x-msdownload is not a file Fetch reads (images, audio, text, PDF)"
    }
    assert [p for p in app.settings.home_dir.glob("sessions/*/media/*")] == []


async def test_send_links_a_file_served_only_to_the_token_holder(
    served: tuple[App, ChatClient, TranscriptionServer],
) -> None:
    _, chat, _ = served
    async with chat.stream() as stream:
        assert (await chat.send("/send demo shot.png"))[0] == 202
        sent = await stream.until(lambda e: "/chat/files/" in e.text)
        link = sent.text.splitlines()[-1]
        assert sent.text.startswith("📎 shot.png")
        assert (await chat.send("/send demo page.html"))[0] == 202
        html_sent = await stream.until(lambda e: "/chat/files/" in e.text and "page.html" in e.text)
        page = html_sent.text.splitlines()[-1]
    async with chat.session.get(chat.base + link) as r:
        assert r.status == 200 and await r.read() == PNG
        assert r.headers["Content-Type"] == "image/png"
        assert r.headers["Content-Disposition"] == "inline"
    async with chat.session.get(chat.base + page) as r:
        # Never served as a page of this origin: a download, no sniffing, sandboxed.
        assert r.headers["Content-Type"] == "application/octet-stream"
        assert r.headers["Content-Disposition"].startswith("attachment")
        assert r.headers["X-Content-Type-Options"] == "nosniff"
    async with (
        aiohttp.ClientSession() as stranger,
        stranger.get(chat.base + link, allow_redirects=False) as r,
    ):
        assert r.status in (302, 303, 401)
    async with chat.session.get(chat.base + "/chat/files/" + "0" * 32 + "/shot.png") as r:
        assert r.status == 404
    # The page rendered after a reload shows the picture and the link.
    async with chat.session.get(chat.base + "/chat") as r:
        html = await r.text()
    assert f'<img src="{link}" alt="shot.png">' in html
