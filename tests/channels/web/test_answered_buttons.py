"""An answered diff's buttons stay off: pressed on the page, the answer is kept with the
diff's nonce in the chat's durable keep, so a reloaded page (and one after a restart)
renders them disabled with what was answered, and a second press is refused. The real
app: SQLite in tmp, real git, the bwrap kennel running the demo harness, real HTTP."""

from __future__ import annotations

import re
from collections.abc import Callable

from orchestrator.config import Settings
from tests.channels.web.test_webchat import TYPO, Web, is_diff, start, stop
from tests.channels.web.test_webchat import web_settings as web_settings


def _card(page: str, message_id: str) -> str:
    found = re.search(
        rf'<article class="[^"]*" data-message-id="{re.escape(message_id)}">.*?</article>',
        page,
        re.DOTALL,
    )
    assert found is not None, f"no card {message_id} on the page"
    return found.group(0)


async def _page(web: Web) -> str:
    async with web.chat.session.get(web.base + "/chat") as r:
        assert r.status == 200
        return str(await r.text())


async def test_an_answered_diffs_buttons_stay_off_after_a_reload_and_a_restart(
    web_settings: Callable[..., Settings],
) -> None:
    settings = web_settings()
    first = await start(settings)
    try:
        async with first.chat.stream() as stream:
            await first.chat.send(TYPO)
            diff = await stream.until(is_diff)
            before = _card(await _page(first), diff.data["message_id"])
            assert "disabled" not in before and "answered" not in before
            assert (await first.chat.answer(diff, "yes"))[0] == 202
            await stream.until(lambda e: "Committed" in e.text)
        card = _card(await _page(first), diff.data["message_id"])
        assert card.count(" disabled>") == 2 and "answered: yes" in card
        assert 'class="msg fetch diff answered"' in card
        status, body = await first.chat.answer(diff, "yes")
        assert status == 409 and "answered already" in body["error"]
    finally:
        await stop(first)
    second = await start(settings)  # the same home: the keep is read back
    try:
        card = _card(await _page(second), diff.data["message_id"])
        assert card.count(" disabled>") == 2 and "answered: yes" in card
        status, body = await second.chat.answer(diff, "no")
        assert status == 409 and "answered already" in body["error"]
    finally:
        await stop(second)


async def test_a_diff_answered_by_typing_shows_its_buttons_off_too(
    web_settings: Callable[..., Settings],
) -> None:
    """Answered without its buttons (typed "no" here; the phone or the dashboard go the
    same way): the approval's close turns the buttons off, across a reload."""
    web = await start(web_settings())
    try:
        async with web.chat.stream() as stream:
            await web.chat.send(TYPO)
            diff = await stream.until(is_diff)
            await web.chat.send("no")
            await stream.until(lambda e: "Discarded" in e.text)
        card = _card(await _page(web), diff.data["message_id"])
        assert card.count(" disabled>") == 2 and "answered: no" in card, card
        status, body = await web.chat.answer(diff, "yes")
        assert status == 409 and "answered already" in body["error"]
    finally:
        await stop(web)
