"""Issue 11.7: a reaction to a diff that is no longer pending is not an instruction.
Through the real WhatsApp adapter and the whole app: 👍 on another Fetch message while a
diff waits approves nothing; 👍 on the diff after it was answered approves nothing and
starts nothing (before: the emoji went on as free text and could start new work)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from core.events import SessionKey
from core.state import State
from orchestrator.app import App
from orchestrator.config import Settings
from orchestrator.session import Session
from tests.channels.whatsapp.builders import OWNER, reaction, text_from
from tests.channels.whatsapp.fake_client import FakeWhatsAppClient
from tests.channels.whatsapp.harness import OWNER_CHAT
from tests.channels.whatsapp.whole_app import OWNER_DIRECT, running, wait_for
from tests.conftest import git


@pytest.fixture
async def whatsapp(
    make_settings: Callable[..., Settings],
) -> AsyncIterator[tuple[App, FakeWhatsAppClient]]:
    async with running(make_settings(**OWNER_DIRECT)) as pair:
        yield pair


async def quiet(client: FakeWhatsAppClient, app: App) -> list[str]:
    """What Fetch said in the next moment (after the gateway finished everything)."""
    before = len(client.sent_texts)
    assert app.gateway is not None
    for _ in range(100):
        await asyncio.sleep(0.02)
        if app.gateway.idle():
            break
    await asyncio.sleep(0.2)
    return client.sent_texts[before:]


async def test_a_reaction_on_a_diff_no_longer_pending_is_not_an_instruction(
    whatsapp: tuple[App, FakeWhatsAppClient],
) -> None:
    app, client = whatsapp
    assert app.services is not None
    repo = app.services.workspace.path("demo")
    base = git(repo, "rev-parse", "HEAD")
    client.emit(text_from(OWNER, "fix the typo in README.md of demo", id="3EBTASK1"))
    on_it, _ = await wait_for(client, "On it", timeout=30)
    diff_at, _ = await wait_for(client, "Apply?", timeout=30)
    on_it_id, diff_id = client.calls[on_it].message_id, client.calls[diff_at].message_id
    session = await app.services.sessions.get(SessionKey("whatsapp", OWNER_CHAT))

    # 👍 on a Fetch message that is not the diff, while the diff waits: nothing.
    client.emit(reaction(OWNER, on_it_id, "👍", id="3EBRX1"))
    assert await quiet(client, app) == []
    assert session.state is State.GUARDING and git(repo, "rev-parse", "HEAD") == base

    client.emit(text_from(OWNER, "yes", id="3EBYES"))
    await wait_for(client, "Committed", after=diff_at, timeout=30)
    head = git(repo, "rev-parse", "HEAD")
    tasks_before = await _count(app, "tasks")

    # 👍 on the diff that was already answered: no approval, no work, no reply.
    for i, emoji in enumerate(["👍", "👎", "❤️"]):
        client.emit(reaction(OWNER, diff_id, emoji, id=f"3EBRXOLD{i}"))
    assert await quiet(client, app) == []
    assert _state(session) is State.ALERT
    assert git(repo, "rev-parse", "HEAD") == head
    assert await _count(app, "tasks") == tasks_before


def _state(session: Session) -> State:
    """The state read through a call: mypy keeps ``session.state`` narrowed by an earlier
    assert even after the approval has moved it."""
    return session.state


async def _count(app: App, table: str) -> int:
    assert app.services is not None
    rows = await app.services.store.db.conn.execute_fetchall(f"SELECT COUNT(*) FROM {table}")
    return int(next(iter(rows))[0])
