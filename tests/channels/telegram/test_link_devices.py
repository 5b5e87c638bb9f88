"""One conversation across devices (issue 23, 6), through the whole app: the terminal and
the owner's Telegram chat (the fake Bot API) are paired with /link, then share one
session: the active repo, the history, the pending diff (asked for in the terminal,
answered on the phone). Replies follow the chat the owner last wrote from. The link
survives a restart; a member never links, not even with a grant of /link."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from channels.telegram import TelegramChannel
from channels.telegram.channel import Backoff
from channels.terminal import TerminalChannel
from core.gate import AllowlistGate
from orchestrator.app import build_app
from orchestrator.config import Settings
from tests.channels.telegram.support import OWNER, settings_for
from tests.conftest import Driver, git
from tests.fakes.telegram_api import FakeTelegramApi

MEMBER = 777001


@asynccontextmanager
async def running(settings: Settings, tg: FakeTelegramApi) -> AsyncIterator[Driver]:
    terminal = TerminalChannel(settings.terminal.chat)
    phone = TelegramChannel(
        settings_for(tg),
        poll_timeout=1,
        backoff=Backoff(0.05, 0.2),
        gate=AllowlistGate(settings.allowlist),
    )
    async with build_app(settings, channels=[terminal, phone]) as app:
        yield Driver(app, terminal)


async def said(tg: FakeTelegramApi, chat: int, needle: str, after: int) -> str:
    """The first message to ``chat`` past the first ``after`` that contains ``needle``."""
    await tg.wait_for_text(needle, timeout=60)
    texts = [m.text for m in tg.sent(chat)][after:]
    found = [t for t in texts if needle in t]
    assert found, (needle, texts)
    return found[0]


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return list(conn.execute(sql))
    finally:
        conn.close()


async def test_linked_terminal_and_phone_share_one_session(
    tg: FakeTelegramApi, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings(FETCH__ALLOWLIST=f'["telegram:{MEMBER}"]')
    async with running(settings, tg) as fetch:
        repo = fetch.services.workspace.path("demo")
        base = git(repo, "rev-parse", "HEAD")
        offer = await fetch.ask("/link", "Link code")
        code = re.search(r"Link code: (\d{6})", offer)
        assert code is not None, offer
        tg.push_message(f"/link {code[1]}", chat_id=OWNER, from_id=OWNER)
        linked = await said(tg, OWNER, "Linked", 0)
        assert "the terminal and Telegram are one conversation" in " ".join(linked.split())
        # The same code never works twice.
        tg.push_message(f"/link {code[1]}", chat_id=OWNER, from_id=OWNER)
        await said(tg, OWNER, "Not linked", 0)
        # The active repo, chosen on the phone, is the terminal's too.
        tg.push_message("/workspace demo", chat_id=OWNER, from_id=OWNER)
        await said(tg, OWNER, "demo", 2)
        status = await fetch.ask("/status", "Fetch ·")
        assert "repo: demo" in status
        assert "one conversation: Telegram + the terminal" in " ".join(status.split())
        # A task asked for in the terminal: its diff shows there (where the owner wrote).
        on_phone = len(tg.sent(OWNER))
        diff = await fetch.ask("fix the typo in README.md", "Apply? (yes/no)", 60)
        assert "+The quick" in diff
        assert not [m for m in tg.sent(OWNER)[on_phone:] if "Apply?" in m.text]
        # ... and is answered on the phone: the same pending diff; the reply goes there.
        tg.push_message("yes", chat_id=OWNER, from_id=OWNER)
        done = await said(tg, OWNER, "Committed", on_phone)
        assert git(repo, "rev-parse", "HEAD^") == base
        assert git(repo, "rev-parse", "HEAD")[:7] in done
        # The task's card was in the terminal: the phone gets its tick as a new message,
        # never as an edit of whichever phone message had the terminal card's id.
        assert [m.text for m in tg.sent(OWNER) if m.edits] == []
        assert [m for m in tg.sent(OWNER) if "✅ your review" in m.text and "✅ commit" in m.text]
        # One history: the terminal's lines are logged in the phone chat's session.
        await fetch.services.store.db.flush()  # the log is written behind
        logged = _rows(settings.db_path, "SELECT session, text FROM messages")
        assert {str(k) for k, t in logged if "fix the typo" in str(t)} == {f"telegram:{OWNER}"}

    # A restart keeps the link (SQLite): the terminal still speaks in the phone's session.
    async with running(settings, tg) as fetch:
        status = await fetch.ask("/status", "Fetch ·")
        assert "repo: demo" in status and "one conversation" in status
        done = await fetch.ask("/link off", "Unlinked")
        assert "the terminal from Telegram" in " ".join(done.split())
        assert "repo: (none chosen)" in await fetch.ask("/status", "Fetch ·")
    assert _rows(settings.db_path, "SELECT count(*) FROM links") == [(0,)]


async def test_a_member_can_never_link_into_the_owners_session(
    tg: FakeTelegramApi, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings(FETCH__ALLOWLIST=f'["telegram:{MEMBER}"]')
    async with running(settings, tg) as fetch:
        # A diff waiting in the terminal's own session: it would be set aside unseen.
        await fetch.ask("fix the typo in README.md of demo", "Apply? (yes/no)", 60)
        assert "(GUARDING)" in await fetch.ask("/link", "Something waits")
        await fetch.ask("no", "Discarded")
        offer = await fetch.ask("/link", "Link code")
        code = re.search(r"Link code: (\d{6})", offer)
        assert code is not None
        tg.push_message(f"/link {code[1]}", chat_id=MEMBER, from_id=MEMBER)
        assert "can't use /link" in await said(tg, MEMBER, "/link", 0)
        # Even granted /link, a member is refused, and the owner's code stays unused.
        await fetch.ask(f"/grants allow telegram:{MEMBER} instinct:link", "Granted")
        tg.push_message(f"/link {code[1]}", chat_id=MEMBER, from_id=MEMBER)
        assert "Only the owner" in await said(tg, MEMBER, "Only the owner", 0)
        tg.push_message("/link", chat_id=MEMBER, from_id=MEMBER)
        assert len([m for m in tg.sent(MEMBER) if "Only the owner" in m.text]) >= 1
        assert _rows(settings.db_path, "SELECT count(*) FROM links") == [(0,)]
        assert _rows(settings.db_path, "SELECT count(*) FROM link_codes WHERE used") == [(0,)]
        # Two desks cannot pair; nor can a chat with itself.
        assert "other chat" in await fetch.ask(f"/link {code[1]}", "Not linked")
        tg.push_message(f"/link {code[1]}", chat_id=OWNER, from_id=OWNER)
        await said(tg, OWNER, "Linked", 0)
