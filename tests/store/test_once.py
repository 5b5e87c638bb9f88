"""Exactly once at the store (orchestrator/store/once.py), on a real SQLite file and a real
PostgreSQL (``any_store``, tests/store/conftest.py): while a
command is handled, its effect and the closing of its inbound row are one transaction;
an effect that fails leaves the row queued (the replay does it once); outside a
command an effect closes nothing; the outbox keeps notices until they are sent."""

from __future__ import annotations

import pytest

from core.events import SessionKey
from orchestrator.improve.records import SqliteImprovements
from orchestrator.store import Store, once

KEY = SessionKey("terminal", "owner")


@pytest.fixture
def store(any_store: Store) -> Store:
    """SQLite, then PostgreSQL."""
    return any_store


async def _status(store: Store, message_id: str) -> str:
    rows = await store.db.conn.execute_fetchall(
        "SELECT status FROM inbound WHERE message_id=?", (message_id,)
    )
    return str(next(iter(rows))[0])


async def _accepted(store: Store, message_id: str) -> None:
    assert await store.inbox.accept("terminal", message_id, KEY, {"text": "/x"})


async def test_an_effect_closes_its_commands_row_in_the_same_transaction(store: Store) -> None:
    await _accepted(store, "m1")
    with once.handling("terminal", "m1"):
        await store.db.write_effect(
            "INSERT INTO grants(subject, action, scope, session, granted_by, created)"
            " VALUES ('alice', 'instinct:remind', 'persisted', NULL, 'owner', 0)"
        )
    assert await _status(store, "m1") == "done"
    assert await store.inbox.queued() == []


async def test_a_failed_effect_leaves_the_row_queued(store: Store) -> None:
    await _accepted(store, "m2")
    with once.handling("terminal", "m2"), pytest.raises(RuntimeError):
        async with store.db.effect() as conn:
            await conn.execute(
                "INSERT INTO grants(subject, action, scope, session, granted_by, created)"
                " VALUES ('bob', 'x', 'persisted', NULL, 'owner', 0)"
            )
            raise RuntimeError("killed half-way")
    assert await _status(store, "m2") == "queued"
    rows = await store.db.conn.execute_fetchall("SELECT count(*) FROM grants")
    assert next(iter(rows))[0] == 0  # nothing of the effect either


async def test_outside_a_command_an_effect_closes_nothing(store: Store) -> None:
    await _accepted(store, "m3")
    assert once.current() is None
    await SqliteImprovements(store.db).create(KEY, "owner", "make it faster", "me/fetch")
    assert await _status(store, "m3") == "queued"
    with once.handling("terminal", "m3"):
        await SqliteImprovements(store.db).create(KEY, "owner", "make it faster", "me/fetch")
    assert await _status(store, "m3") == "done"  # /improve's run row is its effect
    assert once.current() is None


async def test_held_notices_wait_until_sent_and_give_up_after_a_few_refusals(
    any_store: Store,
) -> None:
    store = any_store
    first = await store.outbox.hold(KEY, "⚠️ task #1 was cut short")
    second = await store.outbox.hold(KEY, "↩️ the undo is done")
    assert [h.text for h in await store.outbox.held("terminal")] == [
        "⚠️ task #1 was cut short",
        "↩️ the undo is done",
    ]
    await store.outbox.sent(first)
    for _ in range(5):
        await store.outbox.failed(second)
    assert await store.outbox.held("terminal") == []
