"""Session transitions: one named method per trigger, states as the enum, ``settle``
tolerating a machine that already moved, and every change persisted with the data."""

from __future__ import annotations

import pytest

from core.events import SessionKey
from core.session_data import SessionData
from core.state import State
from orchestrator.fsm import TRANSITIONS
from orchestrator.session import InvalidTransition, Session, Sessions, Turn
from orchestrator.store.memory import MemorySessions

KEY = SessionKey("terminal", "me")


async def _session(table: MemorySessions | None = None) -> tuple[Session, MemorySessions]:
    table = table or MemorySessions()
    return await Sessions(table).get(KEY), table


def _state(session: Session) -> State:
    """The state read through a call: mypy keeps ``session.state`` narrowed by an earlier
    assert even after an awaited transition has moved it."""
    return session.state


async def _stored(table: MemorySessions) -> str | None:
    row = await table.load(KEY)
    return None if row is None else row.state


def test_every_trigger_has_a_method() -> None:
    for row in TRANSITIONS:
        assert callable(getattr(Session, row["trigger"])), row["trigger"]


async def test_new_session_is_alert_and_persisted() -> None:
    session, table = await _session()
    assert session.state is State.ALERT
    row = await table.load(KEY)
    assert row is not None and row.state == "ALERT"


async def test_transitions_move_and_persist_state_with_data() -> None:
    session, table = await _session()
    session.data.task_id = 7
    await session.start_task()
    assert session.state is State.WORKING
    row = await table.load(KEY)
    assert row is not None and row.state == "WORKING" and row.data["task_id"] == 7
    await session.propose()
    assert await _stored(table) == "GUARDING"
    await session.decide()
    await session.pause()
    assert await _stored(table) == "RESTING"
    await session.resume()
    await session.ask()
    assert await _stored(table) == "WAITING"
    await session.answered()
    await session.start_task()
    await session.finish()
    assert _state(session) is State.ALERT
    await session.ask()
    await session.reset()
    assert await _stored(table) == "ALERT"


async def test_refused_transition_names_the_state() -> None:
    session, _ = await _session()
    with pytest.raises(InvalidTransition, match="cannot propose while ALERT"):
        await session.propose()
    assert session.state is State.ALERT


async def test_settle_fires_when_it_can() -> None:
    session, table = await _session()
    await session.start_task()
    session.data.task_id = None
    await session.settle(session.finish)
    assert session.state is State.ALERT
    assert await _stored(table) == "ALERT"


async def test_settle_only_persists_when_the_machine_moved_on() -> None:
    # e.g. /clear reset the session while the run was finishing: the run's end must not
    # fail, and the data it cleared must still reach the store.
    session, table = await _session()
    await session.start_task()
    await session.reset()
    session.data.task_id = 42
    await session.settle(session.finish)
    assert session.state is State.ALERT
    row = await table.load(KEY)
    assert row is not None and row.state == "ALERT" and row.data["task_id"] == 42


async def test_reload_restores_state_as_enum() -> None:
    session, table = await _session()
    session.data.repo = "demo"
    await session.start_task()
    again = await Sessions(table).get(KEY)
    assert again.state is State.WORKING
    assert again.data == SessionData(repo="demo")


async def test_stop_turn_is_the_senders_or_the_owners() -> None:
    """A /stop marks the message being worked out only when it is the asker's own, or
    the owner asks: a member's /stop does not cancel the owner's request."""
    session, _table = await _session()
    assert session.stop_turn(None) is False  # nothing is being worked out
    session.turn = Turn("owner")
    assert session.stop_turn("member:ann") is False and not session.turn.stopped
    assert session.stop_turn(None) is True and session.turn.stopped
    assert session.stop_turn(None) is False  # already stopped: said once
    session.turn = Turn("member:ann")
    assert session.stop_turn("member:ann") is True
